"""A real vLLM server (``pytest -m vllm``): found via ``ORIG_VLLM_BIN`` or ``vllm`` on PATH, CUDA
or a CPU build (docs/models.md, "Checking against a real vLLM without a GPU"). It serves the
tiny judge with the flags `orig serve` derives from its preset, so the test also checks that
vLLM accepts them (dtype, image limit, processor size, structured-outputs backend)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import tiny_model
from PIL import Image
from pydantic import BaseModel, RootModel

from orig_local.llm import ChatConfig, ReplyTruncatedError, make_chat_model, user

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(900)]

RED = Image.new("RGB", (64, 64), (230, 20, 20))
BLUE = Image.new("RGB", (64, 64), (20, 20, 230))
QUESTION = "Is the following statement true? The car in the picture is parked."


class Explained(BaseModel):
    answer: bool
    reason: str


@pytest.fixture(scope="module")
def vllm_judge():
    from orig_local.llm.local_server import free_port, offline_env
    from orig_local.llm.serve import VLLMNotFound, vllm_server

    tiny_model("judge")
    try:
        server = vllm_server("tiny-judge", port=free_port(), startup_timeout_s=600, env=offline_env())
    except VLLMNotFound:
        pytest.skip("vLLM not installed (set ORIG_VLLM_BIN)")
    with server:
        yield server


def _config(server, **kw) -> ChatConfig:
    # the preset fills max_images from the image limit the server was started with
    return ChatConfig(backend="openai", base_url=server.base_url, preset="tiny-judge", max_tokens=4, cache=False, **kw)


def _run(coro_fn, server, **kw):
    async def go():
        model = make_chat_model(_config(server, **kw))
        try:
            return await coro_fn(model)
        finally:
            await model.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("mode", ["json_schema", "structured_outputs"])
def test_vllm_guided_decoding_and_logprobs(vllm_judge, mode):
    async def ask(model):
        typed = await model.chat([user(RED, QUESTION)], schema=RootModel[bool])
        plain = await model.chat([user(BLUE, QUESTION)], logprobs=2)
        return typed, plain

    typed, plain = _run(ask, vllm_judge, structured_mode=mode)
    assert typed.parsed.root is True and typed.attempts == 1
    assert plain.text == "false" and plain.usage.prompt_tokens > 0
    assert plain.top_logprobs and max(plain.top_logprobs, key=plain.top_logprobs.get) == "false"


def test_fact_judge_sends_what_the_served_limit_allows(vllm_judge, tmp_path):
    from orig_local.evaluation.items import GoldFact
    from orig_local.evaluation.judge import Judge

    images = []
    for k in range(6):  # more than eval.evidence_max_images and the preset's limit
        images.append(tmp_path / f"{k}.png")
        Image.new("RGB", (64, 64), (200, 20 * k, 20)).save(images[-1])

    async def judge_it(model):
        assert model.max_images_per_prompt == 4
        return await Judge(model).judge_fact(GoldFact(id="f", text="the car is red"), ["a red car"], images,
                                             max_images=8)

    verdict = _run(judge_it, vllm_judge)
    assert verdict.error is None, verdict.error  # no HTTP 400 "At most N image(s)"


def test_guided_reply_cut_at_max_tokens_is_reported_as_cut(vllm_judge):
    async def ask(model):
        return await model.chat([user(RED, QUESTION)], schema=Explained, max_tokens=3)

    with pytest.raises(ReplyTruncatedError, match="max_tokens=3"):
        _run(ask, vllm_judge)
