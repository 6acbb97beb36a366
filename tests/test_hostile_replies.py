"""Replies that must not pass as success (issue 23 point 3): an empty plan, a prompt that
cleans to nothing, an empty final prompt, and a judge reply nested too deep to parse."""

from __future__ import annotations

import pytest
from agent_support import PROMPT, backbone, make_agent
from pydantic import ValidationError

from orig_local.agent.stages.bootstrap import BootstrapPlan
from orig_local.agent.stages.planning import Plan
from orig_local.agent.status import assess


@pytest.mark.parametrize("schema", [Plan, BootstrapPlan])
def test_an_empty_object_is_not_a_plan(schema):
    with pytest.raises(ValidationError):
        schema.model_validate_json("{}")


def test_an_explicitly_empty_plan_is_still_valid():
    # "nothing left to search" must stay expressible, only the omission is refused
    plan = Plan.model_validate_json('{"analysis": "covered", "sub_questions": [], "text_queries": [],'
                                    ' "image_queries": []}')
    assert plan.text_queries == [] and plan.image_queries == []


async def test_an_empty_plan_reply_fails_the_run_instead_of_stopping_ok():
    res = await make_agent(chat=backbone({"Plan": lambda m, s: "{}", "BootstrapPlan": lambda m, s: "{}"})).run(PROMPT)
    assert res.stop_reason == "error" and res.status == "failed"
    assert res.stop_reason != "no_new_evidence"


@pytest.mark.parametrize("reply", ['{"prompt": "```\\n```"}', '{"prompt": "<b></b> **  ** --"}',
                                   '{"prompt": "\\u200b\\u202e"}'])
async def test_prompt_enhanced_reply_that_cleans_to_nothing_is_a_failure(reply):
    res = await make_agent(chat=backbone({"EnhancedPrompt": lambda m, s: reply}), condition="prompt_enhanced").run(PROMPT)
    assert res.final_prompt == PROMPT  # the row stays usable ...
    assert res.status == "failed" and "enhance" in res.failure  # ... but is not counted as enhanced


async def test_prompt_enhanced_with_a_real_reply_is_ok():
    res = await make_agent(chat=backbone({"EnhancedPrompt": lambda m, s: '{"prompt": "A white tower at dusk."}'}),
                           condition="prompt_enhanced").run(PROMPT)
    assert res.status == "ok" and res.final_prompt == "A white tower at dusk."


@pytest.mark.parametrize("final", ["", "   ", " . , ;  ", "** -- **"])
def test_an_empty_or_content_free_final_prompt_is_never_ok(final):
    from orig_local.agent.agent import AgentResult

    res = assess(AgentResult(prompt=PROMPT, condition="orig", final_prompt=final, stop_reason="sufficient"))
    assert res.status == "failed" and "empty" in res.failure


async def test_deeply_nested_judge_reply_is_one_questions_error(tmp_path):
    """One reply of 100k brackets must not raise out of judge_item and discard the verdicts of
    the other questions of the item."""
    from PIL import Image

    from orig_local.evaluation.items import BenchmarkItem, Question
    from orig_local.evaluation.judge import Judge, parse_verdict
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel

    assert parse_verdict("[" * 100_000) is None
    assert parse_verdict("{\"answer\": " + "[" * 100_000) is None

    def reply(messages, schema):
        text = messages[-1].text
        return "[" * 100_000 if "second" in text else "true"

    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="scripted", schema_retries=0), replies=[reply],
                             cycle=True)
    judge = Judge(chat, answer_format="text")
    item = BenchmarkItem(id="x", prompt="p", category="c", questions=[
        Question(id="q1", text="Is the first thing shown?", answer=True),
        Question(id="q2", text="Is the second thing shown?", answer=True)])
    verdicts = await judge.judge_item(item, Image.new("RGB", (64, 48)))
    by_id = {v.qid: v for v in verdicts}
    assert by_id["q1"].answer is True and by_id["q1"].error is None
    assert by_id["q2"].answer is None and by_id["q2"].error
