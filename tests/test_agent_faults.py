"""Faults: replies that never validate, a search service that is down, pages that all fail,
a backbone that cannot be reached. Each run finishes, records the error, returns a usable
result, and never hangs."""

from __future__ import annotations

import pytest
from agent_support import PROMPT, RecordingGenerator, backbone, corpus, make_agent

from orig_local.llm.base import ChatConnectionError
from orig_local.llm.config import ChatConfig
from orig_local.llm.scripted import ScriptedChatModel

pytestmark = pytest.mark.timeout(60)


def _garbage(messages, schema):
    return "I think the lighthouse is nice. SUFFICIENT!"


@pytest.mark.parametrize("condition", ["orig", "orig_txt", "orig_img", "prompt_enhanced"])
async def test_replies_that_never_validate(condition):
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="s", schema_retries=2), replies=[_garbage], cycle=True)
    gen = RecordingGenerator()
    res = await make_agent(chat=chat, condition=condition, generator=gen).run(PROMPT)
    assert res.error is None
    assert res.final_prompt.startswith(PROMPT)  # usable: P itself or P assembled with evidence
    assert gen.requests and gen.requests[0].prompt == res.final_prompt
    errors = res.trace.errors()
    assert errors and all("StructuredOutputError" in e for e in errors)
    failed = [r for r in res.trace.records if r.error and r.attempts]
    assert all(r.attempts == 3 and len(r.invalid_replies) == 3 for r in failed)  # bounded retries
    if condition != "prompt_enhanced":
        assert res.stop_reason == "error" and res.rounds == 0  # planning could not be read


async def test_search_service_down_degrades_to_parametric_knowledge():
    res = await make_agent(retriever=corpus(fail_search=True)).run(PROMPT)
    assert res.parametric_only and any("search unavailable" in n for n in res.notes)
    assert res.stop_reason == "no_new_evidence" and len(res.knowledge) == 0
    searches = [r for r in res.trace.records if r.step.startswith("search_")]
    assert searches and all(r.failures and r.failures[0]["kind"] == "error" for r in searches)
    assert res.trace.stages()[-1] == "extension" and res.final_prompt


async def test_all_pages_fail_images_still_used():
    res = await make_agent(retriever=corpus(fail_reads=True)).run(PROMPT)
    reads = [r for r in res.trace.records if r.step == "read_page"]
    assert reads and all(r.error and r.failures[0]["kind"] == "http_error" for r in reads)
    assert res.references  # the image half of the round still worked
    assert not res.parametric_only
    assert res.stop_reason in ("sufficient", "no_new_evidence", "max_rounds")


async def test_everything_on_the_web_fails():
    retriever = corpus(fail_reads=True, fail_fetches=True)
    res = await make_agent(retriever=retriever).run(PROMPT)
    fetches = [r for r in res.trace.records if r.step == "fetch_images"]
    assert fetches and all(f["kind"] == "timeout" for r in fetches for f in r.failures)
    assert res.references == [] and res.final_prompt


async def test_unreachable_backbone_is_recorded():
    def down(messages, schema):
        raise ChatConnectionError("connection refused after 4 retries")

    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="s"), replies=[down], cycle=True)
    res = await make_agent(chat=chat).run(PROMPT)
    assert res.stop_reason == "error" and res.final_prompt.startswith(PROMPT)
    assert any("ChatConnectionError" in e for e in res.trace.errors())
    # a fallback prompt is not a result: the run is failed, says why, and blames the backbone
    assert res.status == "failed" and res.transport_failure
    assert "ChatConnectionError" in res.failure
    assert not any(n.startswith("search unavailable") for n in res.notes)
    data = res.to_json()
    assert data["status"] == "failed" and data["transport_failure"] is True


async def test_http_error_from_the_backbone_is_a_transport_failure():
    from orig_local.llm.base import ChatHTTPError

    def wrong_model(messages, schema):
        raise ChatHTTPError("http://127.0.0.1:1/v1/chat/completions answered HTTP 404: no such model")

    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="s"), replies=[wrong_model], cycle=True)
    res = await make_agent(chat=chat, condition="prompt_enhanced").run(PROMPT)
    assert res.status == "failed" and res.transport_failure and "HTTP 404" in res.failure


async def test_invalid_replies_with_a_usable_run_are_degraded_not_ok():
    res = await make_agent(chat=backbone({"Extension": lambda m, s: "not json"})).run(PROMPT)
    assert res.stop_reason == "sufficient" and res.status == "degraded" and not res.transport_failure
    assert "extension" in res.failure


async def test_partly_invalid_plan_fields_are_repaired_by_retry():
    calls = {"n": 0}
    base = backbone()

    def flaky_plan(messages, schema):
        calls["n"] += 1
        if calls["n"] == 1:
            return '{"text_queries": "not a list"}'
        return base.replies[0](messages, schema)

    res = await make_agent(chat=backbone({"Plan": flaky_plan})).run(PROMPT)
    plan = next(r for r in res.trace.records if r.step == "plan")
    assert plan.attempts == 2 and len(plan.invalid_replies) == 1 and plan.error is None
    # the retry showed the model its reply and the validation error
    assert res.stop_reason == "sufficient"


async def test_run_many_times_out_a_stuck_prompt():
    stuck = make_agent(retriever=corpus(search_latency_s=5.0), run_timeout_s=0.3)
    results = await stuck.run_many([PROMPT], concurrency=1)
    assert results[0].error and "TimeoutError" in results[0].error
    assert results[0].final_prompt == PROMPT  # still a usable row: the raw prompt
    ok = await make_agent(run_timeout_s=5.0).run_many([PROMPT], concurrency=1)
    assert ok[0].error is None


async def test_closing_the_agent_closes_the_retriever_even_when_the_backbone_close_fails():
    """A failing backbone close must not leave the retriever's HTTP session and parse workers
    running until the process exits."""
    from types import SimpleNamespace

    from orig_local.agent.agent import Agent

    closed = []

    class Chat:
        async def aclose(self):
            raise RuntimeError("connection already gone")

    class Retriever:
        async def aclose(self):
            closed.append("retriever")

    with pytest.raises(RuntimeError, match="already gone"):
        await Agent.aclose(SimpleNamespace(chat=Chat(), retriever=Retriever()))
    assert closed == ["retriever"]
