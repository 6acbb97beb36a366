"""A healthy server that refuses a request is not a dead one; a cut reply is on the row.

Against real loopback servers: one that enforces a context window as vLLM does (HTTP 400 for a
request past --max-model-len), one that is down (503). The circuit breaker counts only the
latter; a structured-output retry stays within the window; verdict rows, stage records and
`orig chat --json` say when a reply was cut at max_tokens."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image
from pydantic import BaseModel
from test_llm_openai import ScriptedHTTP, chat_body

from orig_local.cli import main
from orig_local.evaluation.items import BenchmarkItem, Question
from orig_local.evaluation.jsonl_store import JsonlStore
from orig_local.evaluation.judge import Judge
from orig_local.evaluation.phases.agent import run_agent_phase
from orig_local.evaluation.phases.common import AgentOutput
from orig_local.evaluation.phases.judge import run_judge_phase
from orig_local.llm import ChatConfig, ChatHTTPError, ChatRequestRefused, make_chat_model, system, user
from orig_local.llm.base import is_transport_error

pytestmark = pytest.mark.timeout(120)


class Answer(BaseModel):
    answer: bool
    reason: str


class WindowServer:
    """Counts a request's size in "tokens" (4 characters of its messages each) and answers HTTP
    400 past ``window`` - prompt plus ``max_tokens`` - as vLLM does. Replies come from a list
    of (text, finish_reason), the last repeating; every request body is kept."""

    def __init__(self, window: int, replies: list[tuple[str, str]]):
        self.window, self.replies, self.bodies = window, replies, []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                prompt = len(json.dumps(body["messages"])) // 4
                if prompt + body["max_tokens"] > owner.window:
                    status, payload = 400, {"object": "error", "message": (
                        f"This model's maximum context length is {owner.window} tokens. However, you "
                        f"requested {prompt + body['max_tokens']} tokens"), "code": 400}
                else:
                    text, finish = owner.replies[min(len(owner.bodies), len(owner.replies)) - 1]
                    status, payload = 200, chat_body(text, prompt_tokens=prompt,
                                                     completion_tokens=len(text) // 4, finish_reason=finish)
                data = json.dumps(payload).encode()
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


def _config(base_url, **kw) -> ChatConfig:
    return ChatConfig(backend="openai", base_url=base_url, model="m", backoff_s=0.01, cache=False, **kw)


def test_400_is_a_refused_request_not_a_dead_server():
    refused = ScriptedHTTP([(400, {"message": "maximum context length is 4096 tokens"})])
    wrong_model = ScriptedHTTP([(404, {"message": "The model `m` does not exist."})])
    try:
        with pytest.raises(ChatRequestRefused) as exc:
            asyncio.run(make_chat_model(_config(refused.base_url)).chat([user("hi")]))
        assert exc.value.status == 400 and "maximum context length" in str(exc.value)
        assert not is_transport_error(exc.value)
        assert not is_transport_error(f"{type(exc.value).__name__}: {exc.value}")  # as rows keep it
        assert len(refused.bodies) == 1  # a refusal is not retried: it would be refused again

        with pytest.raises(ChatHTTPError) as exc404:
            asyncio.run(make_chat_model(_config(wrong_model.base_url)).chat([user("hi")]))
        assert not isinstance(exc404.value, ChatRequestRefused) and is_transport_error(exc404.value)
    finally:
        refused.close()
        wrong_model.close()


def test_retry_after_a_cut_reply_stays_inside_the_window():
    # ~370 "tokens" of messages + 100 for the reply fit a 600 window; with the cut reply quoted
    # back (+100) and the note the retry would not
    question = "Q" * 1400
    cut = '{"answer": true, "reason": "' + "r" * 380  # ~100 tokens: a whole reply cut at max_tokens
    server = WindowServer(600, [(cut, "length"), ('{"answer": true, "reason": "ok"}', "stop")])
    try:
        reply = asyncio.run(make_chat_model(_config(server.base_url, max_tokens=100)).chat(
            [system("judge"), user(question)], schema=Answer))
    finally:
        server.close()
    assert reply.parsed.answer is True and reply.attempts == 2
    retry = server.bodies[1]["messages"]
    assert all(m["role"] != "assistant" for m in retry)  # the cut reply is not sent back
    assert "cut at max_tokens=100" in retry[-1]["content"]  # the model is told why


def test_retry_of_an_invalid_reply_is_budgeted_by_the_known_window():
    question = "Q" * 1400
    wrong = '{"answer": "maybe", "reason": "' + "x" * 400 + '"}'  # complete but invalid
    replies = [(wrong, "stop"), ('{"answer": false, "reason": "ok"}', "stop")]
    server = WindowServer(600, replies)
    try:
        reply = asyncio.run(make_chat_model(_config(server.base_url, max_tokens=100, context_tokens=600)).chat(
            [user(question)], schema=Answer))
        assert reply.parsed.answer is False
        assert all(m["role"] != "assistant" for m in server.bodies[1]["messages"])
        # with room in the window, the reply is shown back (the retry the model learns most from)
        roomy = WindowServer(4000, replies)
        try:
            asyncio.run(make_chat_model(_config(roomy.base_url, max_tokens=100, context_tokens=4000)).chat(
                [user(question)], schema=Answer))
            assert [m["role"] for m in roomy.bodies[1]["messages"]] == ["user", "assistant", "user"]
        finally:
            roomy.close()
    finally:
        server.close()


def _judge_run(tmp_path, n: int):
    items = [BenchmarkItem(id=f"p{i}", prompt="p", category="others",
                           questions=[Question(id="q", text="True or False: " + "long " * (1000 if i < n // 2 else 1))])
             for i in range(n)]
    run = tmp_path / "run"
    run_agent_phase(items, run, lambda it: AgentOutput(final_prompt=it.prompt), progress=False)
    (run / "images").mkdir()
    gen = JsonlStore(run / "generate.jsonl")
    for it in items:
        Image.new("RGB", (64, 48), (9, 9, 9)).save(run / "images" / f"{it.id}.png")
        gen.append({"id": it.id, "category": it.category, "image": f"images/{it.id}.png", "error": None})
    return items, run


def test_refusals_do_not_trip_the_circuit_breaker_but_a_down_server_does(tmp_path):
    items, run = _judge_run(tmp_path, 8)  # the first half: too long for the window
    server = WindowServer(600, [("true", "stop")])
    try:
        judge = Judge(make_chat_model(_config(server.base_url, max_tokens=8)), answer_format="text")
        summary = run_judge_phase(items, run, judge, concurrency=1, progress=False, max_consecutive_failures=2,
                                  close=True)
    finally:
        server.close()
    assert summary.stopped is None and summary.ran == 8
    assert (summary.ok, summary.failed) == (4, 4)
    rows = [json.loads(line) for line in (run / "judge.jsonl").read_text().splitlines()]
    refused = [r for r in rows if r["status"] == "failed"]
    assert all(r["verdicts"][0]["error"].startswith("ChatRequestRefused: ") for r in refused)

    items2, run2 = _judge_run(tmp_path / "down", 8)
    down = ScriptedHTTP([(503, {"message": "engine dead"})])
    try:
        judge = Judge(make_chat_model(_config(down.base_url, connect_retries=0)), answer_format="text")
        summary = run_judge_phase(items2, run2, judge, concurrency=1, progress=False,
                                  max_consecutive_failures=2, close=True)
    finally:
        down.close()
    assert summary.stopped and "did not answer" in summary.stopped and summary.ran == 2


def test_a_cut_verdict_says_so_on_its_row(tmp_path):
    items, run = _judge_run(tmp_path, 2)
    server = ScriptedHTTP([(200, chat_body("tr", finish_reason="length")), (200, chat_body("true"))])
    try:
        judge = Judge(make_chat_model(_config(server.base_url)), answer_format="text")
        run_judge_phase(items, run, judge, concurrency=1, progress=False, close=True)
    finally:
        server.close()
    verdicts = [json.loads(line)["verdicts"][0] for line in (run / "judge.jsonl").read_text().splitlines()]
    assert [(v["truncated"], v["finish_reason"]) for v in verdicts] == [(True, "length"), (False, "stop")]
    assert verdicts[0]["error"] and verdicts[1]["correct"] is True


def test_orig_chat_json_shows_finish_reason(capsys, tmp_path):
    server = ScriptedHTTP([(200, chat_body("a long answ", finish_reason="length"))])
    try:
        rc = main(["-q", "chat", "hello", "--json", "-s", "backbone.backend=openai", "-s", "backbone.model=m",
                   "-s", f"backbone.base_url={server.base_url}", "-s", f"cache_dir={tmp_path}"])
    finally:
        server.close()
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["finish_reason"] == "length" and out["truncated"] is True
