"""The agent at realistic size (issue 19): 12 pages of 20-30k characters over two rounds, the
default config, a backbone that replies like a real model (long, cut at the max_tokens it is
sent with). Consolidation must succeed on its first attempt, and a failed one must say so on the
row."""

from __future__ import annotations

import pytest
from realistic_support import PROMPT, RealisticBackbone, planner, realistic_corpus

from orig_local.agent.agent import Agent
from orig_local.agent.config import AgentConfig


def _agent(chat, **cfg) -> Agent:
    config = AgentConfig(condition="orig_txt", fixed_rounds=2, **cfg)  # otherwise the defaults
    return Agent(chat, realistic_corpus(), config, reference_capacity=0, prompt_max_tokens=512)


@pytest.fixture(scope="module")
def run_at_scale():
    import asyncio

    chat = RealisticBackbone({"Plan": planner(3)}, max_facts=12)
    result = asyncio.run(_agent(chat).run(PROMPT))
    return chat, result


def test_consolidation_succeeds_first_time_at_defaults_and_realistic_size(run_at_scale):
    chat, res = run_at_scale
    read = [r for r in res.trace.records if r.step == "read_page" and not r.error]
    assert len(read) >= 6 and res.rounds == 2
    assert {len(t.text) for t in res.knowledge.texts} and len(res.knowledge.texts) >= 120  # a big K (12 facts a page)
    calls = [c for c in chat.replies if c[0] == "Consolidation"]
    assert len(calls) >= 2  # one per round at least
    # The default backbone max_tokens is 1,024; a ~2,000-token summary needs more: it is sent.
    assert chat.config.max_tokens == 1024
    for name, sent, wrote, cut in calls:
        assert not cut and wrote > 1024, (sent, wrote)
    records = [r for r in res.trace.records if r.step == "consolidate"]
    assert records and all(r.error is None and r.attempts == 1 for r in records)
    assert not any("consolidation failed" in n for r in records for n in r.notes)
    assert res.status == "ok", res.failure


def test_a_failed_consolidation_is_on_the_row_warning():
    import asyncio

    from orig_local.evaluation.agent_adapter import to_output

    chat = RealisticBackbone({"Plan": planner(3), "Consolidation": lambda m, s: '{"reason": "merged", "stat'},
                             max_facts=12)
    res = asyncio.run(_agent(chat).run(PROMPT))
    assert res.status == "degraded"
    assert res.failure.startswith("knowledge consolidation failed") and "unmerged" in res.failure
    assert to_output(res).failure == res.failure  # the agent phase writes it as the row's warning
