"""The agent through the real OpenAI-compatible path: `transformers serve` with the tiny random
Qwen2.5-VL (fixture ``tiny_qwen_server``). Its replies are noise, so every structured reply
fails validation: the run must end cleanly, marked failed, with those failures (and the raw replies) recorded,
proving that real server replies flow through the real parser into the trace."""

from __future__ import annotations

import pytest
from agent_support import PROMPT, corpus

from orig_local.agent.agent import Agent
from orig_local.agent.config import AgentConfig

pytestmark = pytest.mark.timeout(240)


async def test_noise_backbone_over_http_terminates_with_errors_recorded(tiny_qwen_server):
    from orig_local.llm import make_chat_model

    # structured_mode="prompt" (the handle's default): transformers serve has no guided decoding
    chat = make_chat_model(tiny_qwen_server.chat_config(max_tokens=24, schema_retries=1))
    agent = Agent(chat, corpus(), AgentConfig(max_rounds=2, max_references=1))
    try:
        res = await agent.run(PROMPT)
    finally:
        await chat.aclose()
    assert res.stop_reason == "error" and res.rounds == 0  # the plan never validated
    # the fallback prompt is not an ORIG result: the run is failed, and says why
    assert res.status == "failed" and "retrieval loop stopped" in res.failure and not res.transport_failure
    assert res.final_prompt.startswith(PROMPT)  # usable: P assembled with the bootstrap snippets
    called = [r for r in res.trace.records if r.attempts]
    assert called and all("StructuredOutputError" in (r.error or "") for r in called)
    assert all(len(r.invalid_replies) == r.attempts == 2 for r in called)
    assert sum(r.prompt_tokens for r in called) > 0  # usage reported by the server
    assert sum(r.completion_tokens for r in called) > 0  # the model really generated
    assert any(reply.strip() for r in called for reply in r.invalid_replies)  # its raw text is kept
    assert res.trace.stages()[:2] == ["bootstrap", "planning"]
