"""GPU workstation checks (``pytest -m gpu``): the in-process backend on CUDA in bf16, and a real
vLLM server (found via ``ORIG_VLLM_BIN`` or ``vllm`` on PATH) with guided decoding, both on the
tiny judge so they take seconds."""

from __future__ import annotations

import asyncio

import pytest
from PIL import Image
from pydantic import RootModel

from conftest import tiny_model
from orig_local.llm import ChatConfig, make_chat_model, user

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(900)]

RED = Image.new("RGB", (64, 64), (230, 20, 20))
BLUE = Image.new("RGB", (64, 64), (20, 20, 230))
QUESTION = "Is the following statement true? The car in the picture is parked."


def _need_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    return torch


async def test_transformers_backend_on_cuda_in_bf16():
    torch = _need_cuda()
    model = make_chat_model(ChatConfig(backend="transformers", model=str(tiny_model("judge")), max_tokens=4))
    try:
        assert model.device == "cuda" and model.dtype == torch.bfloat16
        red = await model.chat([user(RED, QUESTION)], logprobs=2)
        blue = await model.chat([user(BLUE, QUESTION)])
    finally:
        await model.aclose()
    assert (red.text, blue.text) == ("true", "false")
    assert max(red.top_logprobs, key=red.top_logprobs.get) == "true"


@pytest.fixture(scope="module")
def vllm_judge():
    _need_cuda()
    from orig_local.llm.local_server import free_port
    from orig_local.llm.serve import VLLMNotFound, vllm_server

    tiny_model("judge")
    try:
        server = vllm_server("tiny-judge", port=free_port(), startup_timeout_s=600)
    except VLLMNotFound:
        pytest.skip("vLLM not installed (set ORIG_VLLM_BIN)")
    with server:
        yield server


@pytest.mark.parametrize("mode", ["json_schema", "structured_outputs"])
def test_vllm_guided_decoding_and_logprobs(vllm_judge, mode):
    async def run():
        model = make_chat_model(ChatConfig(backend="openai", base_url=vllm_judge.base_url, model=vllm_judge.model,
                                           structured_mode=mode, max_tokens=4))
        try:
            typed = await model.chat([user(RED, QUESTION)], schema=RootModel[bool])
            plain = await model.chat([user(BLUE, QUESTION)], logprobs=2)
        finally:
            await model.aclose()
        return typed, plain

    typed, plain = asyncio.run(run())
    assert typed.parsed.root is True and typed.attempts == 1
    assert plain.text == "false" and plain.usage.prompt_tokens > 0
    assert plain.top_logprobs and max(plain.top_logprobs, key=plain.top_logprobs.get) == "false"
