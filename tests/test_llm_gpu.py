"""GPU workstation check (``pytest -m gpu``): the in-process backend on CUDA in bf16, on the tiny
judge so it takes seconds. The real-vLLM checks are in test_llm_vllm.py (``pytest -m vllm``)."""

from __future__ import annotations

import pytest
from conftest import tiny_model
from PIL import Image

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
