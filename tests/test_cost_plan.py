"""Issue 22 point 2: the bill before the run (`--dry-run` cost plans) and measured beside it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from orig_local.config import load_config
from orig_local.errors import UsageError
from orig_local.evaluation import costplan

ROOT = Path(__file__).resolve().parents[1]


def _cfg(*sets: str):
    return load_config([], ["backbone.preset=qwen2.5-vl-7b", "generator.preset=qwen-image-edit-2509", *sets])


def _totals(steps):
    return {s.step: s for s in steps}


def test_estimate_follows_the_config():
    base = _totals(costplan.agent_steps(_cfg()))
    assert base["planning/plan"].calls == pytest.approx(1.8)  # paper: ~1.8 adaptive rounds
    three = _totals(costplan.agent_steps(_cfg("agent.fixed_rounds=3")))
    assert three["planning/plan"].calls == 3 and "sufficiency/decide" not in three
    no_refine = _totals(costplan.agent_steps(_cfg("agent.refinement=false")))
    assert not any(k.startswith("refinement/") for k in no_refine)
    assert no_refine["extension/write_prompt"].images == 3  # no F^v: extension looks at the pictures
    text_only = _totals(costplan.agent_steps(_cfg("agent.condition=orig_txt")))
    assert "accumulation/image_filter" not in text_only and sum(s.images for s in text_only.values()) == 0
    # pictures priced by the per-stage pixel bounds
    full_ext = _totals(costplan.agent_steps(_cfg("agent.images.extension=null")))
    assert full_ext["extension/write_prompt"].images == 3
    assert full_ext["extension/write_prompt"].prefill > base["extension/write_prompt"].prefill + 2500
    bigger_pages = _totals(costplan.agent_steps(_cfg("agent.max_page_tokens=3000")))
    assert bigger_pages["accumulation/text_filter"].prefill > base["accumulation/text_filter"].prefill * 2
    assert costplan.agent_steps(_cfg("agent.condition=direct")) == []


async def test_estimate_matches_a_measured_agent_run_on_the_cost_corpus():
    """The per-call model, given the rounds and queries a run made, lands within 15 % of the
    input tokens the agent really sends (two rounds, 1024x768 pictures, long pages)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_cost

    from orig_local.agent.agent import Agent
    from orig_local.agent.config import AgentConfig
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel
    from orig_local.llm.simulated import SimulatedRetriever
    from orig_local.llm.tokens import count_request, default_counter

    docs, images = bench_cost.build_corpus()
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="sim"),
                             replies=[bench_cost.realistic_responder(2)], cycle=True)
    res = await Agent(chat, SimulatedRetriever(docs, images), AgentConfig()).run(bench_cost.PROMPTS[1])
    assert res.rounds == 2 and not res.error
    measured = sum(count_request(r["messages"], default_counter()).total for r in chat.requests)
    steps = costplan.agent_steps(_cfg(), rounds=2, text_queries=1, image_queries=1)
    # default settings: this corpus's K stays under consolidate_min_tokens, so neither the run
    # nor the plan (which follows the reference's K sizes) makes a merge call
    assert not any(r.step == "consolidate" for r in res.trace.records)
    assert sum(s.calls for s in steps) == len(chat.requests)
    assert sum(s.prefill for s in steps) == pytest.approx(measured, rel=0.15)
    # the bench rebuilds K's size at each check from the final K: what the agent noted
    from orig_local.agent.budget import EstimatedTokens

    noted = [r.output["knowledge_tokens"] for r in res.trace.records if r.step == "consolidation_deferred"]
    assert len(noted) == 2 and bench_cost.knowledge_sizes(res, EstimatedTokens().count) == noted


async def test_merge_call_estimate_matches_a_run_that_makes_it():
    """With consolidate_min_tokens=0 the run merges every round and the plan prices it so."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_cost

    from orig_local.agent.agent import Agent
    from orig_local.agent.config import AgentConfig
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel
    from orig_local.llm.simulated import SimulatedRetriever

    docs, images = bench_cost.build_corpus()
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="sim"),
                             replies=[bench_cost.realistic_responder(2)], cycle=True)
    res = await Agent(chat, SimulatedRetriever(docs, images),
                      AgentConfig(consolidate_min_tokens=0)).run(bench_cost.PROMPTS[1])
    assert res.rounds == 2 and not res.error
    steps = {s.step: s for s in costplan.agent_steps(_cfg("agent.consolidate_min_tokens=0"), rounds=2,
                                                      text_queries=1, image_queries=1)}
    assert steps["accumulation/consolidate"].calls == 2 == sum(r.step == "consolidate" for r in res.trace.records
                                                              if r.messages)
    assert sum(s.calls for s in steps.values()) == len(chat.requests)


def test_throughput_flags():
    assert costplan.parse_throughput(["2500", "qwen2.5-vl-72b=900"]) == {None: 2500.0, "qwen2.5-vl-72b": 900.0}
    with pytest.raises(UsageError):
        costplan.parse_throughput(["fast"])
    with pytest.raises(UsageError):
        costplan.parse_throughput(["0"])
    assert costplan.throughput_for("qwen2.5-vl-72b", {None: 1.0, "qwen2.5-vl-72b": 9.0})[0] == 9.0
    assert costplan.throughput_for("x", {}) == (None, "")


def test_study_dry_run_prints_the_cost_of_every_run(capsys):
    from orig_local.cli import main

    assert main(["study", str(ROOT / "studies" / "scale.yaml"), "--dry-run",
                 "--tokens-per-s", "qwen2.5-vl-72b=1200", "--tokens-per-s", "3000"]) == 0
    out = capsys.readouterr().out
    assert "Cost plan (ESTIMATE)" in out
    from orig_local.study.plan import load_plan

    plan = load_plan(ROOT / "studies" / "scale.yaml")
    for run in plan.runs:
        assert f"{run.label} (ESTIMATE)" in out
    line72 = next(ln for ln in out.splitlines() if ln.startswith("  agent") and "x 4 GPU(s)" in ln)
    assert "1,200 tok/s" in line72  # the 72B's own throughput, on its 4 GPUs


def test_run_records_estimate_and_measured_and_the_report_shows_both(tmp_path):
    sys.path.insert(0, str(ROOT / "tests"))
    from _eval_fakes import FakeAgent, FakeGenerator, make_mini_benchmark, scripted_judge

    from orig_local.cli import main
    from orig_local.config import Config
    from orig_local.evaluation.loaders import load_benchmark
    from orig_local.evaluation.orchestrate import run_phases
    from orig_local.evaluation.report import build_report

    data = make_mini_benchmark(tmp_path / "bench", n=4)
    items = load_benchmark("jsonl", data)
    cfg = Config()
    cfg.progress, cfg.cache_dir, cfg.generator.preset = False, "", "fake"
    cfg.backbone.preset = "qwen2.5-vl-7b"
    run = tmp_path / "run"
    run_phases(cfg, run, items, ("agent", "generate", "judge"), agent=FakeAgent(delay=0.05),
               generator=FakeGenerator(), judge=scripted_judge(), preflight=False)
    meta = json.loads((run / "run.json").read_text())
    assert meta["cost_estimate"]["stages"]["accumulation"]["calls"] > 0
    agent = meta["measured"]["agent"]
    assert agent["items"] == 4 and agent["prefill_per_item"] == 150  # FakeAgent: 100 + 50 per prompt
    assert 0 < agent["tokens_per_s"] < 200 * 4 / 0.2  # 200 tokens per item, >= 0.05 s each
    written = build_report([run])
    cost = (Path(written["report"]).parent / "cost.md").read_text()
    assert "Estimate (made before the run" in cost and "input measured" in cost
    # a later plan for the same folder uses the recorded throughput
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["eval", "--dry-run", "--out", str(run), "--benchmark", "jsonl",
                     "--data", str(data), "--backbone", "qwen2.5-vl-7b",
                     "--generator", "qwen-image-edit-2509"]) == 0
    out_lines = buf.getvalue().splitlines()
    agent_line = next(ln for ln in out_lines if ln.startswith("  agent"))
    assert "4 items" in agent_line and f"measured by {run / 'run.json'}" in agent_line
