"""The seams of issue 16: one list of conditions and phases that every CLI choice and branch
derives from, one phase loop (statuses, strict pairing of verdicts and questions), and
run_phases leaving the caller's config alone."""

from __future__ import annotations

import argparse

import pytest
from _eval_fakes import FakeAgent, FakeGenerator, make_mini_benchmark, scripted_judge

from orig_local.conditions import CONDITION_NAMES, CONDITIONS, condition, standalone_conditions
from orig_local.config import Config
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.phases import PHASE_NAMES, PHASES, default_phases


def _choices(command: str, dest: str) -> list[str]:
    from orig_local.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if a.dest == dest)
    return list(action.choices)


def test_cli_choices_and_config_derive_from_the_condition_and_phase_lists():
    from orig_local.agent.config import AgentConfig

    assert _choices("eval", "condition") == list(CONDITION_NAMES)
    assert _choices("generate", "condition") == standalone_conditions() == [
        c for c in CONDITION_NAMES if c != "oracle"]
    assert _choices("eval", "phase") == [*PHASE_NAMES, "all"]
    with pytest.raises(ValueError, match="unknown condition 'orig_text'; conditions: " + ", ".join(CONDITION_NAMES)):
        AgentConfig(condition="orig_text")  # checked against the registry when set, not a fixed Literal
    for name, spec in CONDITIONS.items():
        cfg = AgentConfig(condition=name)
        assert cfg.retrieves == spec.retrieves and cfg.modalities == spec.modalities
    assert condition("orig_img").modalities == ("image",) and not condition("direct").uses_backbone
    with pytest.raises(ValueError, match="orig_txt"):
        condition("orig_text")


def test_default_phases_follow_the_condition():
    cfg = Config()
    cfg.agent.condition = "orig"
    assert default_phases(cfg) == ["agent", "generate", "judge", "retrieval"]
    cfg.agent.condition = "prompt_enhanced"
    assert default_phases(cfg) == ["agent", "generate", "judge"]
    assert PHASES["judge"].reads == "generate" and PHASES["generate"].needs == "generator"


def _config():
    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = "orig"
    cfg.generator.preset = "fake"
    return cfg


def test_run_phases_leaves_the_callers_config_alone(tmp_path, monkeypatch):
    import orig_local.evaluation.orchestrate as orchestrate

    items = load_benchmark("jsonl", make_mini_benchmark(tmp_path / "bench", n=4))
    run = tmp_path / "run"
    cfg = _config()
    orchestrate.run_phases(cfg, run, items, ["agent"], agent=FakeAgent())
    seen = {}

    def build(config):
        seen["device"] = config.generator.device
        return FakeGenerator()

    monkeypatch.setattr(orchestrate, "build_generator", build)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    before = cfg.model_dump()
    orchestrate.run_phases(cfg, run, items, ["generate"], preflight=False)  # "fake" is no preset
    assert seen["device"] == "cuda:1"  # this process's GPU ...
    assert cfg.model_dump() == before  # ... without touching the caller's config


def test_verdicts_and_questions_must_pair_up(tmp_path):
    """A judge returning fewer verdicts than the item has questions: a failed row, never a
    silently shortened one."""
    from orig_local.evaluation.phases.agent import run_agent_phase
    from orig_local.evaluation.phases.generate import run_generate_phase
    from orig_local.evaluation.phases.judge import run_judge_phase
    from orig_local.evaluation.rundir import read_phase

    items = load_benchmark("jsonl", make_mini_benchmark(tmp_path / "bench", n=2))
    run = tmp_path / "run"
    run_agent_phase(items, run, FakeAgent(), progress=False)
    run_generate_phase(items, run, FakeGenerator(), progress=False)
    judge = scripted_judge()
    full = judge.judge_item

    async def short(item, image):
        return (await full(item, image))[:-1]

    judge.judge_item = short
    summary = run_judge_phase(items, run, judge, progress=False)
    rows = read_phase(run, "judge")
    assert summary["failed"] == 2 and summary["ok"] == 0
    assert all(r["status"] == "failed" and "zip()" in r["error"] and r["verdicts"] == [] for r in rows.values())


def test_question_level_errors_make_an_item_degraded_not_failed(tmp_path):
    from orig_local.evaluation.phases.agent import run_agent_phase
    from orig_local.evaluation.phases.generate import run_generate_phase
    from orig_local.evaluation.phases.judge import run_judge_phase
    from orig_local.evaluation.rundir import read_phase

    items = load_benchmark("jsonl", make_mini_benchmark(tmp_path / "bench", n=2))
    run = tmp_path / "run"
    run_agent_phase(items, run, FakeAgent(), progress=False)
    run_generate_phase(items, run, FakeGenerator(), progress=False)
    replies = iter(["true", "not sure"] + ["true"] * 50)
    summary = run_judge_phase(items, run, scripted_judge(answer_format="text", reply=lambda m, s: next(replies)),
                              concurrency=1, progress=False)
    rows = list(read_phase(run, "judge").values())
    assert summary["degraded"] == 1 and summary["ok"] == 1 and summary["failed"] == 0
    bad = next(r for r in rows if r["status"] == "degraded")
    assert bad["error"] is None and "1 of" in bad["warning"] and bad["score"] is not None
    # --retry-degraded reruns it; --retry-errors alone does not
    again = run_judge_phase(items, run, scripted_judge(answer_format="text", reply=lambda m, s: "true"),
                            retry_errors=True, progress=False)
    assert again["ran"] == 0 and again["earlier"] == {"ok": 1, "degraded": 1}
    again = run_judge_phase(items, run, scripted_judge(answer_format="text", reply=lambda m, s: "true"),
                            retry_degraded=True, progress=False)
    assert again["ran"] == 1 and again["ok"] == 1
    assert all(r["status"] == "ok" for r in read_phase(run, "judge").values())
