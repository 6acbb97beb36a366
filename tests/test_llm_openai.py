"""The `openai` chat backend: request bodies, retries and errors against a loopback HTTP server
the test controls, and real round trips through `transformers serve` with the tiny models."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image
from pydantic import BaseModel, RootModel

from orig_local.cache import DiskCache
from orig_local.llm import ChatConfig, ChatConnectionError, ChatError, make_chat_model, system, user
from orig_local.llm.local_server import free_port
from orig_local.llm.openai_backend import OpenAIChatModel

pytestmark = pytest.mark.timeout(240)

RED = Image.new("RGB", (64, 64), (230, 20, 20))
BLUE = Image.new("RGB", (64, 64), (20, 20, 230))


class Verdict(BaseModel):
    answer: bool
    reason: str


# --------------------------------------------------------------------------- a scriptable server


def chat_body(text: str, prompt_tokens: int = 11, completion_tokens: int = 3, logprobs=None,
              finish_reason: str = "stop") -> dict:
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
    if logprobs is not None:
        choice["logprobs"] = {"content": [{"token": "t", "logprob": -0.1, "top_logprobs": logprobs}]}
    return {"id": "x", "object": "chat.completion", "model": "m", "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class ScriptedHTTP:
    """Loopback server answering POST /v1/chat/completions from a list of (status, body) pairs
    (the last one repeats); records bodies and the peak number of requests in flight."""

    def __init__(self, responses, delay_s: float = 0.0):
        self.responses = list(responses)
        self.delay_s = delay_s
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer._lock:
                    outer.bodies.append(body)
                    outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                    outer.in_flight += 1
                    outer.peak = max(outer.peak, outer.in_flight)
                    i = min(len(outer.bodies), len(outer.responses)) - 1
                time.sleep(outer.delay_s)
                status, payload = outer.responses[i]
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                with outer._lock:
                    outer.in_flight -= 1
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def http():
    servers = []

    def start(responses, delay_s=0.0):
        s = ScriptedHTTP(responses, delay_s)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


def config(base_url, **kw) -> ChatConfig:
    return ChatConfig(backend="openai", base_url=base_url, model="m", backoff_s=0.01, **kw)


# --------------------------------------------------------------------------- request bodies


def _build(mode, schema=Verdict, **kw):
    model = OpenAIChatModel(config("http://127.0.0.1:9/v1", structured_mode=mode))
    return model.build_request([system("sys"), user(RED, "question")], schema=schema,
                               temperature=0.0, max_tokens=7, logprobs=kw.get("logprobs"))


def test_body_images_as_png_data_uris_and_decoding_params():
    body = _build("json_schema", schema=None, logprobs=3)
    assert body["model"] == "m" and body["max_tokens"] == 7 and body["temperature"] == 0.0
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    image_part, text_part = body["messages"][1]["content"]
    assert text_part == {"type": "text", "text": "question"}
    url = image_part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    decoded = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert decoded.format == "PNG" and decoded.getpixel((0, 0)) == (230, 20, 20)
    assert body["logprobs"] is True and body["top_logprobs"] == 3
    assert "response_format" not in body and "structured_outputs" not in body


def test_body_per_structured_mode():
    rf = _build("json_schema")["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["name"] == "Verdict" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"] == Verdict.model_json_schema()

    so = _build("structured_outputs")
    assert so["structured_outputs"] == {"json": Verdict.model_json_schema()}
    assert "response_format" not in so

    pr = _build("prompt")
    assert "response_format" not in pr and "structured_outputs" not in pr
    last_text = pr["messages"][-1]["content"][-1]["text"]
    assert json.dumps(Verdict.model_json_schema()) in last_text
    assert pr["messages"][0] == {"role": "system", "content": "sys"}  # schema only on the user turn


def test_model_name_is_required():
    with pytest.raises(ChatError, match="model"):
        OpenAIChatModel(ChatConfig(backend="openai"))


# --------------------------------------------------------------------------- HTTP behaviour


async def test_retries_500_then_succeeds_and_records_usage(http):
    server = http([(500, {"error": "boom"}), (503, "busy"), (200, chat_body("hello", 21, 4))])
    model = make_chat_model(config(server.base_url, connect_retries=3))
    reply = await model.chat([user("hi")])
    assert reply.text == "hello" and len(server.bodies) == 3
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (21, 4)
    await model.aclose()


async def test_persistent_5xx_and_429_give_connection_error_after_bounded_retries(http):
    for status in (500, 429):
        server = http([(status, {"error": "nope"})])
        model = make_chat_model(config(server.base_url, connect_retries=2))
        with pytest.raises(ChatConnectionError, match=f"HTTP {status}"):
            await model.chat([user("hi")])
        assert len(server.bodies) == 3  # one try + two retries, then stop
        await model.aclose()


async def test_refused_port_gives_connection_error():
    model = make_chat_model(config(f"http://127.0.0.1:{free_port()}/v1", connect_retries=1))
    start = time.perf_counter()
    with pytest.raises(ChatConnectionError, match="ConnectError"):
        await model.chat([user("hi")])
    assert time.perf_counter() - start < 10


async def test_4xx_is_not_retried_and_carries_the_body(http):
    server = http([(400, {"error": {"message": "max_tokens is too large"}})])
    model = make_chat_model(config(server.base_url, connect_retries=3))
    with pytest.raises(ChatError, match="HTTP 400.*max_tokens is too large") as info:
        await model.chat([user("hi")])
    assert not isinstance(info.value, ChatConnectionError)
    assert len(server.bodies) == 1
    await model.aclose()


async def test_first_token_logprobs(http):
    server = http([(200, chat_body("true", logprobs=[{"token": "t", "logprob": -0.1},
                                                     {"token": "f", "logprob": -2.5}]))])
    model = make_chat_model(config(server.base_url))
    reply = await model.chat([user("q")], logprobs=2)
    assert reply.top_logprobs == {"t": -0.1, "f": -2.5}
    assert server.bodies[0]["top_logprobs"] == 2
    await model.aclose()


async def test_structured_reply_validated_with_bounded_retry_over_http(http):
    good = json.dumps({"answer": True, "reason": "red"})
    server = http([(200, chat_body("not json")), (200, chat_body(good))])
    model = make_chat_model(config(server.base_url))
    reply = await model.chat([user(RED, "is it red?")], schema=Verdict)
    assert reply.parsed == Verdict(answer=True, reason="red")
    assert reply.attempts == 2 and reply.invalid_replies == ["not json"]
    # the retry shows the model its invalid reply and the validation error
    retry_messages = server.bodies[1]["messages"]
    assert retry_messages[-2] == {"role": "assistant", "content": "not json"}
    assert "could not be used" in retry_messages[-1]["content"]
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (22, 6)  # both attempts
    await model.aclose()


async def test_concurrency_limit_is_respected(http):
    server = http([(200, chat_body("ok"))], delay_s=0.15)
    model = make_chat_model(config(server.base_url, concurrency=2))
    replies = await asyncio.gather(*[model.chat([user(f"q{i}")]) for i in range(6)])
    assert all(r.text == "ok" for r in replies) and len(server.bodies) == 6
    assert server.peak == 2
    await model.aclose()


async def test_cache_serves_repeat_without_server_and_sampling_bypasses(http, tmp_path):
    server = http([(200, chat_body("first")), (200, chat_body("second"))])
    cfg = config(server.base_url)
    model = make_chat_model(cfg, cache_dir=tmp_path)
    a = await model.chat([user(RED, "q")])
    server.close()  # the server is gone: a repeat can only come from disk
    again = make_chat_model(cfg, cache_dir=tmp_path)  # a new process would see the same file
    b = await again.chat([user(RED.copy(), "q")])
    assert (a.cached, b.cached, b.text) == (False, True, "first") and again.calls == 0
    assert (b.usage.prompt_tokens, b.usage.completion_tokens) == (11, 3)
    with pytest.raises(ChatConnectionError):  # sampling is never served from the cache
        await again.chat([user(RED, "q")], temperature=0.7)
    assert len(DiskCache(tmp_path / "chat.sqlite", "chat")) == 1
    await model.aclose()
    await again.aclose()


# --------------------------------------------------------------------------- real server


async def test_text_and_image_round_trip_through_real_server(tiny_qwen_server):
    model = make_chat_model(tiny_qwen_server.chat_config(max_tokens=8))
    assert model.backend == "openai"
    with_image = await model.chat([system("Be brief."), user(RED, "Describe the picture.")])
    text_only = await model.chat([system("Be brief."), user("Describe the picture.")])
    await model.aclose()
    assert isinstance(with_image.text, str) and with_image.latency_s > 0
    assert with_image.usage.completion_tokens > 0
    # the image really reached the model: its vision tokens count in the prompt
    assert with_image.usage.prompt_tokens > text_only.usage.prompt_tokens + 4
    assert with_image.model == tiny_qwen_server.model


async def test_tiny_judge_through_real_server(tiny_judge_server):
    model = make_chat_model(tiny_judge_server.chat_config(max_tokens=4))
    question = "Is the following statement true? The car in the picture is parked."
    red = await model.chat([user(RED, question)])
    blue = await model.chat([user(BLUE, question)])
    typed = await model.chat([user(BLUE, question)], schema=RootModel[bool])  # prompt mode
    await model.aclose()
    assert (red.text, blue.text) == ("true", "false")
    assert typed.parsed.root is False


async def test_transformers_serve_rejects_vllm_structured_outputs_field(tiny_qwen_server):
    """Why tests use structured_mode=prompt: that server has no guided decoding."""
    model = make_chat_model(tiny_qwen_server.chat_config(structured_mode="structured_outputs"))
    with pytest.raises(ChatError, match="HTTP 422"):
        await model.chat([user("hi")], schema=Verdict)
    await model.aclose()


# --------------------------------------------------------------------------- cut replies, limits, keys


async def test_structured_reply_cut_at_max_tokens_is_reported_as_cut(http):
    from orig_local.llm import ReplyTruncatedError, StructuredOutputError

    # what vLLM's default structured-output backend produced: JSON drowned in whitespace
    runaway = '{"answer": true, ' + " " * 200
    server = http([(200, chat_body(runaway, completion_tokens=64, finish_reason="length"))])
    model = make_chat_model(config(server.base_url, schema_retries=1))
    with pytest.raises(ReplyTruncatedError) as info:
        await model.chat([user("q")], schema=Verdict, max_tokens=64)
    assert isinstance(info.value, StructuredOutputError)  # callers that record invalid replies still do
    assert str(info.value).startswith("Verdict reply cut at max_tokens=64 (finish_reason=length)")
    assert "EOF while parsing" not in str(info.value).split("; reply ends")[0]
    assert info.value.raw_texts == [runaway, runaway] and info.value.usage.completion_tokens == 128
    # the retry told the model its reply was cut
    assert "cut at max_tokens=64" in server.bodies[1]["messages"][-1]["content"]


async def test_cut_then_complete_structured_reply_is_accepted(http):
    server = http([(200, chat_body('{"answer": true, "rea', finish_reason="length")),
                   (200, chat_body('{"answer": true, "reason": "ok"}'))])
    reply = await make_chat_model(config(server.base_url)).chat([user("q")], schema=Verdict, max_tokens=8)
    assert reply.parsed.answer is True and reply.attempts == 2 and not reply.truncated


async def test_plain_reply_cut_at_max_tokens_is_marked(http):
    server = http([(200, chat_body("a long answer that stops mid", finish_reason="length")),
                   (200, chat_body("short."))])
    model = make_chat_model(config(server.base_url, cache=False))
    cut = await model.chat([user("q")], max_tokens=5)
    assert cut.truncated and cut.finish_reason == "length"
    whole = await model.chat([user("q2")], max_tokens=5)
    assert not whole.truncated and whole.finish_reason == "stop"


async def test_more_images_than_the_model_accepts_are_refused_before_sending(http):
    from orig_local.llm import TooManyImagesError

    server = http([(200, chat_body("ok"))])
    model = make_chat_model(config(server.base_url, max_images=2))
    with pytest.raises(TooManyImagesError, match=r"3 images .* at most 2"):
        await model.chat([user(RED, BLUE), user(RED, "q")])
    assert server.bodies == []
    await model.chat([user(RED, BLUE, "q")])
    assert len(server.bodies) == 1


def test_preset_sets_the_served_image_limit():
    from orig_local.presets import load_preset, resolve_chat_preset

    resolved = resolve_chat_preset(ChatConfig(backend="openai", preset="tiny-judge"))
    assert resolved.max_images == load_preset("tiny-judge").serve.limit_mm_per_prompt["image"]
    # an explicit value wins; the in-process backend has no server limit
    assert resolve_chat_preset(ChatConfig(backend="openai", preset="tiny-judge", max_images=1)).max_images == 1
    assert resolve_chat_preset(ChatConfig(backend="transformers", preset="tiny-judge")).max_images is None


async def test_fact_judge_shows_no_more_images_than_the_judge_accepts(http, tmp_path):
    from orig_local.evaluation.items import GoldFact
    from orig_local.evaluation.judge import Judge

    server = http([(200, chat_body("true"))])
    judge = Judge(make_chat_model(config(server.base_url, max_images=2)), answer_format="text")
    images = []
    for k in range(5):
        images.append(tmp_path / f"{k}.png")
        Image.new("RGB", (8, 8), (k * 40, 0, 0)).save(images[-1])
    verdict = await judge.judge_fact(GoldFact(id="f1", text="a fact"), ["some text"], images, max_images=4)
    assert verdict.error is None and verdict.correct is True
    sent = [p for m in server.bodies[0]["messages"] if isinstance(m["content"], list)
            for p in m["content"] if p["type"] == "image_url"]
    assert len(sent) == 2


async def test_openai_environment_variables_fill_an_unset_server_and_key(http, monkeypatch):
    server = http([(200, chat_body("ok"))])
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    cfg = ChatConfig(backend="openai", model="m")
    assert cfg.base_url == server.base_url
    model = make_chat_model(cfg)
    await model.chat([user("q")])
    assert server.headers[0]["authorization"] == "Bearer sk-from-env"
    await model.aclose()


async def test_api_key_env_names_the_variable_and_a_config_key_is_never_dumped(http, monkeypatch):
    server = http([(200, chat_body("ok"))])
    monkeypatch.setenv("JUDGE_KEY", "sk-judge")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = make_chat_model(config(server.base_url, api_key_env="JUDGE_KEY", cache=False))
    await model.chat([user("q")])
    assert server.headers[-1]["authorization"] == "Bearer sk-judge"
    unset = make_chat_model(config(server.base_url, api_key_env="NO_SUCH_VAR_SET", cache=False))
    await unset.chat([user("q")])
    assert server.headers[-1]["authorization"] == "Bearer EMPTY"  # what a keyless local vLLM accepts
    given = config(server.base_url, api_key="sk-typed", cache=False)
    await make_chat_model(given).chat([user("q")])
    assert server.headers[-1]["authorization"] == "Bearer sk-typed"
    assert "sk-typed" not in json.dumps(given.model_dump(mode="json")) and "sk-typed" not in repr(given)


async def test_prefix_cache_hits_reported_by_the_server_are_recorded(http):
    body = chat_body("hello", 900, 4)
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 640}
    server = http([(200, body)])
    model = make_chat_model(config(server.base_url))
    reply = await model.chat([user("hi")])
    assert (reply.usage.prompt_tokens, reply.usage.cached_tokens) == (900, 640)
    server2 = http([(200, chat_body("hello", 900, 4))])  # a server that does not say: unknown, not 0
    model2 = make_chat_model(config(server2.base_url))
    assert (await model2.chat([user("hi")])).usage.cached_tokens is None
    await model.aclose()
    await model2.aclose()
