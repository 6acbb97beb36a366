"""Study plans, schedules, status and shared agent rows (no model, no server: fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from orig_local.configbase import ConfigError
from orig_local.study.commands import eval_command
from orig_local.study.plan import load_plan, parse_plan
from orig_local.study.schedule import (
    CopyStep,
    GenerateGroupStep,
    PhaseStep,
    ReportStep,
    ServerStep,
    StopStep,
    build_schedule,
    model_loads,
    render_schedule,
)
from orig_local.study.share import agent_sources, copy_agent_rows
from orig_local.study.status import PhaseCounts, row_state, status_table, study_status

REPO = Path(__file__).resolve().parents[1]
MINI = str(REPO / "orig_local" / "evaluation" / "data" / "mini.jsonl")


def _plan(tmp_path, **changes):
    data = {"out": str(tmp_path / "study"), "benchmark": "jsonl", "data": MINI, "limit": 2,
            "judge": {"preset": "tiny-judge"},
            "grid": {"condition": ["direct", "prompt_enhanced", "orig"],
                     "backbone": ["tiny-qwen2.5-vl", "tiny-judge"],
                     "generator": ["tiny-qwen-image", "tiny-sd3"]}}
    data.update(changes)
    return parse_plan(data)


def _pending(plan, n=2):
    return {r.label: {p: PhaseCounts(pending=n) for p in plan.phases(r)} for r in plan.runs}


def _generate_runs(steps) -> list[str]:
    """Labels of the runs whose generate phase the schedule runs (grouped or per run)."""
    out = []
    for s in steps:
        if isinstance(s, GenerateGroupStep):
            out += [sub.run.label for sub in s.group]
        elif isinstance(s, PhaseStep) and s.phase == "generate":
            out.append(s.run.label)
    return out


def _write_rows(path: Path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


# --------------------------------------------------------------------------- plan


@pytest.mark.parametrize("change, words", [
    ({"outt": "x"}, "outt: unknown key"),
    ({"judge": {"preset": "tiny-judge", "temp": 0}}, "judge.temp: unknown key"),
    ({"grid": {"conditions": ["orig"]}}, "grid.conditions: unknown key"),
    ({"runs": [{"condition": "orig", "backbone": "tiny-qwen2.5-vl", "generator": "tiny-qwen-image",
                "agent": {"refinment": False}}], "grid": None}, "unknown agent switch(es) refinment"),
    ({"runs": [{"condition": "orig", "generator": "g", "rounds": 2}], "grid": None}, "runs.0.rounds: unknown key"),
    ({"runs": [{"condition": "orrig", "generator": "g"}], "grid": None}, "runs.0.condition"),
    ({"evidence": "recorded"}, "evidence"),
    ({"runs": [], "grid": None}, "no runs"),
    ({"runs": [{"condition": "orig", "generator": "g"}], "grid": None}, "needs a backbone"),
    ({"runs": [{"condition": "direct"}], "grid": None}, "has no generator"),
    ({"runs": [{"label": "a", "condition": "direct", "generator": "g"},
               {"label": "a", "condition": "direct", "generator": "h"}], "grid": None}, "share the label(s) a"),
    ({"runs": [{"label": "../x", "condition": "direct", "generator": "g"}], "grid": None}, "run label '../x'"),
    ({"set": ["agent.max_rounds"]}, "not of the form key.path=value"),
])
def test_plan_errors_are_one_clear_line(tmp_path, change, words):
    with pytest.raises(ConfigError) as err:
        _plan(tmp_path, **change)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_grid_expands_and_direct_collapses_over_backbones(tmp_path):
    plan = _plan(tmp_path)
    labels = [r.label for r in plan.runs]
    # direct: one run per generator (no backbone); the others: 2 backbones x 2 generators
    assert len(labels) == 2 + 2 * 2 * 2 and len(set(labels)) == len(labels)
    assert [r for r in plan.runs if r.condition == "direct" and r.backbone] == []
    assert plan.backbones() == ["tiny-qwen2.5-vl", "tiny-judge"]
    assert plan.phases(next(r for r in plan.runs if r.condition == "orig"))[-1] == "retrieval"
    assert "retrieval" not in plan.phases(next(r for r in plan.runs if r.condition == "prompt_enhanced"))


def test_load_plan_checks_presets_and_gpus(tmp_path):
    path = tmp_path / "p.yaml"
    base = {"out": "o", "benchmark": "jsonl", "data": MINI, "generator": "tiny-qwen-image",
            "judge": {"preset": "tiny-judge"}, "runs": [{"condition": "orig", "backbone": "tiny-qwen2.5-vl"}]}
    path.write_text(yaml.safe_dump({**base, "generator": "no-such-model"}))
    with pytest.raises(ConfigError, match="unknown preset 'no-such-model'"):
        load_plan(path)
    path.write_text(yaml.safe_dump({**base, "judge": {"preset": "tiny-qwen-image"}}))
    with pytest.raises(ConfigError, match="no `serve` section"):
        load_plan(path)
    path.write_text(yaml.safe_dump({**base, "runs": [{"condition": "orig", "backbone": "qwen2.5-vl-72b"}],
                                    "gpus": {"devices": [0, 1]}}))
    with pytest.raises(ConfigError, match=r"gives servers 2 GPU\(s\) but qwen2.5-vl-72b \(tensor_parallel_size=4\)"):
        load_plan(path)
    # more server GPUs than the plan has devices: the 72B server could never start (issue 20.6)
    path.write_text(yaml.safe_dump({**base, "runs": [{"condition": "orig", "backbone": "qwen2.5-vl-72b"}],
                                    "gpus": {"devices": [0, 1], "server_gpus": 4}}))
    with pytest.raises(ConfigError, match="server_gpus=4 but gpus.devices lists 2 GPU"):
        load_plan(path)
    path.write_text(yaml.safe_dump({**base, "runs": [{"condition": "orig", "backbone": "qwen2.5-vl-72b"}],
                                    "judge": {"preset": "qwen2.5-vl-72b"},
                                    "gpus": {"devices": [0, 1], "tensor_parallel": {"qwen2.5-vl-72b": 2}}}))
    assert load_plan(path, out=str(tmp_path / "elsewhere")).out == str(tmp_path / "elsewhere")


@pytest.mark.parametrize("name", ["table3", "table4", "table5", "scale", "tiny"])
def test_shipped_plans_load_and_schedule(name):
    plan = load_plan(REPO / "studies" / f"{name}.yaml")
    steps = build_schedule(plan, _pending(plan, 5))
    servers = [(s.role, s.model) for s in steps if isinstance(s, ServerStep)]
    assert len(servers) == len(set(servers)) == len(plan.backbones()) + 1  # each model loaded once
    assert isinstance(steps[-1], ReportStep)
    if name == "table4":
        assert sorted(r.fixed_rounds or 0 for r in plan.runs) == [0, 1, 2, 3]
    if name == "table5":
        assert sorted(k for r in plan.runs for k in r.agent) == sorted(
            ["bootstrap", "accumulation_filter", "refinement", "prompt_extension"])
    if name == "scale":
        assert plan.backbones() == ["qwen2.5-vl-7b", "qwen2.5-vl-32b", "qwen2.5-vl-72b"]
        assert len(plan.generators()) == 1
    if name == "table3":
        assert {r.condition for r in plan.runs} == {"direct", "prompt_enhanced", "oracle", "orig", "orig_txt", "orig_img"}
        assert len(plan.generators()) >= 2


# --------------------------------------------------------------------------- schedule


def test_schedule_loads_each_model_once_in_the_right_order(tmp_path):
    plan = _plan(tmp_path)
    steps = build_schedule(plan, _pending(plan))
    # one server per backbone, one for the judge, in that order
    assert [(s.role, s.model) for s in steps if isinstance(s, ServerStep)] == [
        ("backbone", "tiny-qwen2.5-vl"), ("backbone", "tiny-judge"), ("judge", "tiny-judge")]
    # every agent phase of a backbone sits between its server's start and stop
    up = None
    for s in steps:
        if isinstance(s, ServerStep):
            up = s.model
        elif isinstance(s, StopStep):
            up = None
        elif isinstance(s, CopyStep) or (isinstance(s, PhaseStep) and s.phase == "agent"):
            assert up == (s.run.backbone if s.run.uses_backbone else None), s.describe()
        elif isinstance(s, GenerateGroupStep) or (isinstance(s, PhaseStep) and s.phase == "generate"):
            assert up is None  # no server holds the GPU while generating
        elif isinstance(s, PhaseStep):
            assert up == "tiny-judge"
    # generation: one process per generator, with every run of that generator, loaded once
    groups = [s for s in steps if isinstance(s, GenerateGroupStep)]
    assert [g.model for g in groups] == plan.generators()
    assert sorted(sub.run.label for g in groups for sub in g.group) == sorted(r.label for r in plan.runs)
    assert all(sub.run.generator == g.model for g in groups for sub in g.group)
    # judge phases before retrieval accuracy, report last
    phases = [s.phase for s in steps if isinstance(s, PhaseStep)]
    assert phases.index("retrieval") > max(i for i, p in enumerate(phases) if p == "judge")
    loads = model_loads(plan, steps)
    assert sum(e["loads"] for e in loads.values() if e["model"] == "tiny-qwen-image") == 1
    text = render_schedule(plan, steps, 2)
    assert "estimated model loads" in text and "tiny-sd3" in text and "one process, 5 run(s)" in text
    # per_run: one process per run, a generator's runs back to back, loaded once per run
    per_run = _plan(tmp_path, generation="per_run")
    steps = build_schedule(per_run, _pending(per_run))
    gens = [s.run.generator for s in steps if isinstance(s, PhaseStep) and s.phase == "generate"]
    assert gens == sorted(gens, key=per_run.generators().index) and len(gens) == len(per_run.runs)
    loads = model_loads(per_run, steps)
    assert sum(e["loads"] for e in loads.values() if e["model"] == "tiny-qwen-image") == 5


def test_a_generator_override_gets_its_own_instance_next_to_its_twins(tmp_path):
    plan = _plan(tmp_path, runs=[{"label": "big", "condition": "direct", "generator": "tiny-qwen-image",
                                  "set": ["generator.steps=3"]}])
    steps = build_schedule(plan, _pending(plan))
    group = next(s for s in steps if isinstance(s, GenerateGroupStep) and s.model == "tiny-qwen-image")
    labels = [sub.run.label for sub in group.group]
    assert labels[0] == "big" or labels[-1] == "big"  # equal settings stay together
    loads = model_loads(plan, steps)
    assert sum(e["loads"] for e in loads.values() if e["model"] == "tiny-qwen-image") == 2


def test_runs_differing_only_in_generator_share_one_agent_phase(tmp_path):
    # tiny-qwen-image and qwen-image: both text-only, 512 Qwen2 tokens: the agent sees one generator
    plan = _plan(tmp_path, grid={"condition": ["direct", "prompt_enhanced", "orig"],
                                 "backbone": ["tiny-qwen2.5-vl", "tiny-judge"],
                                 "generator": ["tiny-qwen-image", "qwen-image"]})
    sources = agent_sources(plan)
    steps = build_schedule(plan, _pending(plan))
    agent_runs = [s.run.label for s in steps if isinstance(s, PhaseStep) and s.phase == "agent"]
    copies = [(s.run.label, s.source.label) for s in steps if isinstance(s, CopyStep)]
    assert len(agent_runs) == 1 + 2 * 2  # direct once; 2 conditions x 2 backbones
    assert len(copies) == len(plan.runs) - len(agent_runs)
    for twin, source in copies:
        a = next(r for r in plan.runs if r.label == twin)
        b = next(r for r in plan.runs if r.label == source)
        assert (a.condition, a.backbone) == (b.condition, b.backbone) and a.generator != b.generator
        assert sources[twin] == source
        # the copy comes right after the source's agent phase
        i = [s.run.label if isinstance(s, (PhaseStep, CopyStep)) else None for s in steps].index(source)
        assert twin in [s.run.label for s in steps[i + 1:i + 3] if isinstance(s, CopyStep)]
    unshared = _plan(tmp_path, share_agent=False)
    assert not [s for s in build_schedule(unshared, _pending(unshared)) if isinstance(s, CopyStep)]


def test_agent_phases_follow_every_setting_the_agent_reads(tmp_path):
    """Reference capacity 0 / 1 / 3 -> three agent phases; a setting the agent does not read
    (generator steps, seed) shares; an agent setting no hand list names (knowledge_tokens) splits."""
    from orig_local.study.share import sharing_reasons

    gens = ["tiny-qwen-image", "tiny-qwen-image-edit", "tiny-qwen-image-edit-2509"]
    runs = [{"label": f"orig-{g}", "condition": "orig", "generator": g} for g in gens]
    runs += [{"label": f"txt-{g}", "condition": "orig_txt", "generator": g} for g in gens]
    runs += [{"label": "orig-steps", "condition": "orig", "generator": "tiny-qwen-image-edit-2509",
              "set": ["generator.steps=3", "agent.seed=5", "eval.seed=9"]},
             {"label": "orig-k", "condition": "orig", "generator": "tiny-qwen-image-edit-2509",
              "set": ["agent.knowledge_tokens=1500"]},
             {"label": "orig-flux-kontext", "condition": "orig", "generator": "tiny-flux-kontext"}]
    plan = _plan(tmp_path, grid=None, backbone="tiny-qwen2.5-vl", runs=runs)
    sources = agent_sources(plan)
    assert len({sources[f"orig-{g}"] for g in gens}) == 3  # capacity 0, 1, 3
    # ORIG-Txt finds no image, but refinement's request still says how many it may keep
    # ("choose 1 to N"): the capacity reaches the backbone, so it keys the phase too
    assert len({sources[f"txt-{g}"] for g in gens}) == 3
    assert sources["orig-steps"] == "orig-tiny-qwen-image-edit-2509"
    assert sources["orig-k"] == "orig-k"
    # same capacity (1) as Qwen-Image-Edit but a T5 encoder: P̂ is bounded in other tokens
    assert sources["orig-flux-kontext"] == "orig-flux-kontext"
    why = sharing_reasons(plan)
    assert "text-only generator (0 references)" in why["orig-tiny-qwen-image"]
    assert "reference_capacity" in why["orig-tiny-qwen-image-edit"]
    assert "same agent inputs" in why["orig-steps"]
    assert "agent.knowledge_tokens" in why["orig-k"]
    assert "text_tokenizer" in why["orig-flux-kontext"]


def test_shipped_table3_dry_run_gives_each_capacity_its_agent_phase(tmp_path, capsys):
    from orig_local.cli import main

    assert main(["study", str(REPO / "studies" / "table3.yaml"), "--dry-run", "--out", str(tmp_path / "t3")]) == 0
    out = capsys.readouterr().out
    for line in out.splitlines():
        if any(f"{c}_" in line for c in ("orig", "orig-img", "oracle")) and (
                "qwen-image " in line + " " or "_qwen-image " in line + " " or "flux.1-kontext-dev" in line):
            assert "shared: rows copied from" not in line or not line.rstrip(")").endswith("qwen-image-edit-2509"), line
    for cond in ("oracle", "orig-img", "orig"):
        for gen, what in (("qwen-image-edit-2509", "up to 3 reference(s)"), ("flux.1-kontext-dev", "up to 1 reference(s)"),
                          ("qwen-image", "text-only generator (0 references)")):
            assert f"  {cond}_qwen2.5-vl-72b_{gen}: own agent phase: {what}" in out
    assert "agent phases: 14 with the backbone for 15 run(s)" in out


def test_finished_phases_are_skipped_and_no_server_starts_for_done_work(tmp_path):
    plan = _plan(tmp_path, grid={"condition": ["direct", "prompt_enhanced"],
                                 "backbone": ["tiny-qwen2.5-vl", "tiny-judge"], "generator": ["tiny-qwen-image"]})
    status = _pending(plan)
    for run in plan.runs:  # every agent phase done; one run's generate failed on one item
        status[run.label]["agent"] = PhaseCounts(done=2)
    failed_run = plan.runs[1].label
    status[failed_run]["generate"] = PhaseCounts(done=1, failed=1)
    steps = build_schedule(plan, status)
    assert [s.role for s in steps if isinstance(s, ServerStep)] == ["judge"]
    gen = _generate_runs(steps)
    assert failed_run not in gen and len(gen) == len(plan.runs) - 1
    # the judge phase still runs for it (it has an image to judge), and --retry-failed redoes it
    assert failed_run in [s.run.label for s in steps if isinstance(s, PhaseStep) and s.phase == "judge"]
    assert failed_run in _generate_runs(build_schedule(plan, status, retry_failed=True))
    for run in plan.runs:
        for p in plan.phases(run):
            status[run.label][p] = PhaseCounts(done=2)
    assert [type(s) for s in build_schedule(plan, status)] == [ReportStep]


# --------------------------------------------------------------------------- commands


def test_eval_command_carries_the_run_and_shared_caches(tmp_path):
    plan = _plan(tmp_path, evidence="record", seed=7, set=["agent.max_rounds=2"],
                 runs=[{"label": "abl", "condition": "orig", "backbone": "tiny-qwen2.5-vl",
                        "generator": "tiny-qwen-image", "fixed_rounds": 2, "agent": {"refinement": False},
                        "set": ["agent.max_rounds=1"]}], grid=None)
    run = plan.runs[0]
    cmd = eval_command(plan, run, "agent", server_url="http://127.0.0.1:9/v1")
    joined = " ".join(cmd)
    assert cmd[cmd.index("--out") + 1] == str(tmp_path / "study" / "abl")
    for flag in ("--phase agent", "--condition orig", "--backbone tiny-qwen2.5-vl", "--generator tiny-qwen-image",
                 "--judge tiny-judge", "--label abl", "--limit 2", "--benchmark jsonl"):
        assert flag in joined
    sets = [cmd[i + 1] for i, c in enumerate(cmd) if c == "-s"]
    assert f"cache_dir={tmp_path / 'study' / 'cache'}" in sets and "eval.seed=7" in sets
    assert "agent.fixed_rounds=2" in sets and "agent.refinement=false" in sets
    assert f"retrieval.record={tmp_path / 'study' / 'evidence'}" in sets
    assert sets[-2:] == ["backbone.backend=openai", "backbone.base_url=http://127.0.0.1:9/v1"]
    assert sets.index("agent.max_rounds=1") > sets.index("agent.max_rounds=2")  # the run's own set wins
    judge = eval_command(plan, run, "judge", server_url="http://127.0.0.1:9/v1")
    jsets = [judge[i + 1] for i, c in enumerate(judge) if c == "-s"]
    assert "judge.base_url=http://127.0.0.1:9/v1" in jsets and not any(s.startswith("retrieval.record") for s in jsets)
    replay = _plan(tmp_path, evidence="replay", evidence_dir=str(tmp_path / "snap"))
    orig = next(r for r in replay.runs if r.condition == "orig")
    assert f"retrieval.replay={tmp_path / 'snap'}" in eval_command(replay, orig, "agent")


# --------------------------------------------------------------------------- status


def test_row_state_never_counts_an_unknown_or_failed_row_as_done():
    assert row_state({"status": "ok"}) == "ok"
    assert row_state({"status": "degraded", "error": "x"}) == "degraded"
    assert row_state({"status": "failed"}) == "failed"
    assert row_state({"status": "weird"}) == "failed"
    assert row_state({"error": "ChatError: down"}) == "failed"
    assert row_state({"error": None}) == "ok"


def test_status_counts_rows_of_run_folders(tmp_path, capsys):
    plan = _plan(tmp_path, grid={"condition": ["direct", "orig"], "backbone": ["tiny-qwen2.5-vl"],
                                 "generator": ["tiny-qwen-image"]})
    direct, orig = plan.runs
    _write_rows(plan.run_dir(direct) / "agent.jsonl", [{"id": "mini_landmark"}, {"id": "mini_animal"}])
    _write_rows(plan.run_dir(direct) / "generate.jsonl",
                [{"id": "mini_landmark", "error": None}, {"id": "mini_animal", "error": "OOM"}])
    _write_rows(plan.run_dir(orig) / "agent.shard-0-of-2.jsonl", [{"id": "mini_landmark", "status": "degraded"}])
    _write_rows(plan.run_dir(orig) / "agent.jsonl", [{"id": "not_selected", "status": "ok"}])
    status = study_status(plan)
    assert status[direct.label]["generate"].cell() == "1/1/0"
    assert status[orig.label]["agent"].cell() == "1/0/1*"
    assert status[orig.label]["retrieval"].pending == 2
    table = status_table(plan, status)
    assert "FAILED ITEMS" in table.splitlines()[2] and "pending" in table.splitlines()[3]
    from orig_local.cli import main

    assert main(["study", "status", str(_dump(plan, tmp_path))]) == 1
    out = capsys.readouterr().out
    assert "1/1/0" in out and "FAILED ITEMS" in out


def _dump(plan, tmp_path) -> Path:
    path = tmp_path / "plan.yaml"
    data = plan.model_dump(mode="json", exclude={"grid"})
    path.write_text(yaml.safe_dump(data))
    return path


def test_status_and_dry_run_cli(tmp_path, capsys):
    from orig_local.cli import main

    plan = _plan(tmp_path)
    path = _dump(plan, tmp_path)
    assert main(["study", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "start backbone server  tiny-qwen2.5-vl" in out and "estimated model loads" in out
    assert not (tmp_path / "study").exists()  # a dry run writes nothing
    assert main(["study", str(tmp_path / "missing.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err
    path.write_text(path.read_text() + "typo_key: 1\n")
    assert main(["study", str(path), "--dry-run"]) == 2
    assert "typo_key: unknown key" in capsys.readouterr().err
    # a server that cannot fit the plan's GPUs fails the dry run, before anything is planned
    path.write_text(yaml.safe_dump({**plan.model_dump(mode="json", exclude={"grid"}),
                                    "gpus": {"devices": [0], "server_gpus": 2}}))
    assert main(["study", str(path), "--dry-run"]) == 2
    assert "server_gpus=2 but gpus.devices lists 1 GPU" in capsys.readouterr().err


# --------------------------------------------------------------------------- shared agent rows


def test_copy_agent_rows_copies_the_files_then_the_row_and_resumes(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "deep" / "dst"
    (src / "refs" / "a").mkdir(parents=True)
    (src / "refs" / "a" / "0.png").write_bytes(b"ref")
    (src / "evidence" / "a").mkdir(parents=True)
    (src / "evidence" / "a" / "0.png").write_bytes(b"evimg")
    (src / "evidence" / "a.json").write_text(json.dumps({"texts": ["t"], "images": ["evidence/a/0.png"]}))
    (src / "traces").mkdir()
    (src / "traces" / "a.json").write_text("{}")
    rows = [{"id": "a", "final_prompt": "P", "references": ["refs/a/0.png"], "evidence": "evidence/a.json",
             "trace": "traces/a.json", "error": None},
            {"id": "b", "final_prompt": "Q", "references": ["../outside.png"], "evidence": None, "trace": None,
             "error": "ChatError: down"}]
    _write_rows(src / "agent.jsonl", rows)
    (tmp_path / "outside.png").write_bytes(b"x")
    assert copy_agent_rows(src, dst, ["a", "b", "c"]) == {"copied": 2, "replaced": 0}
    got = {r["id"]: r for r in map(json.loads, (dst / "agent.jsonl").read_text().splitlines())}
    assert got == {r["id"]: r for r in rows}
    for rel in ("refs/a/0.png", "evidence/a/0.png", "evidence/a.json", "traces/a.json"):
        assert (dst / rel).read_bytes() == (src / rel).read_bytes()
    assert not (tmp_path / "deep" / "outside.png").exists()  # a row naming ../ writes nothing outside
    # rerun: nothing copied twice; a torn tail from a killed copy is repaired
    with open(dst / "agent.jsonl", "a") as f:
        f.write('{"id": "c", "fin')
    assert copy_agent_rows(src, dst, ["a", "b", "c"]) == {"copied": 0, "replaced": 0}
    assert len((dst / "agent.jsonl").read_text().splitlines()) == 2
    # the source redid the failed row: --retry-failed replaces it in the copy
    _write_rows(src / "agent.jsonl", [rows[0], {**rows[1], "error": None, "references": []}])
    assert copy_agent_rows(src, dst, ["a", "b"], retry_failed=True) == {"copied": 0, "replaced": 1}
    got = {r["id"]: r for r in map(json.loads, (dst / "agent.jsonl").read_text().splitlines())}
    assert got["b"]["error"] is None


def test_load_plan_resolves_every_runs_config(tmp_path):
    path = tmp_path / "p.yaml"
    base = {"out": "o", "benchmark": "jsonl", "data": MINI, "generator": "tiny-qwen-image", "config": ["offline"],
            "judge": {"preset": "tiny-judge"}, "runs": [{"label": "r1", "condition": "direct"}]}
    path.write_text(yaml.safe_dump({**base, "set": ["agent.max_round=2"]}))
    with pytest.raises(ConfigError, match="run r1: .*max_round"):
        load_plan(path)
    path.write_text(yaml.safe_dump({**base, "runs": [{"label": "r2", "condition": "direct", "set": ["eval.bootstrap=-1"]}]}))
    with pytest.raises(ConfigError, match="run r2: .*bootstrap"):
        load_plan(path)
    path.write_text(yaml.safe_dump({**base, "grid": {"condition": ["orig"], "backbone": ["tiny-qwen2.5-vl"],
                                                     "agent": [{"refinement": "maybe"}]}}))
    with pytest.raises(ConfigError, match="grid.agent: refinement: Input should be a valid boolean"):
        load_plan(path)
    path.write_text(yaml.safe_dump(base))
    assert [r.label for r in load_plan(path).runs] == ["r1"]


def test_dry_run_without_the_data_shows_the_whole_schedule(tmp_path, capsys):
    from orig_local.cli import main

    plan = _plan(tmp_path, data=str(tmp_path / "not-here"))
    assert main(["study", str(_dump(plan, tmp_path)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "x ? items" in out and "no data" in out and "start judge server" in out
    # running it for real is refused with one line (exit 2), before any server starts
    assert main(["study", str(_dump(plan, tmp_path))]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "study" / "logs").exists()


def test_one_study_per_folder_and_status_says_what_it_is_doing(tmp_path, capsys):
    from orig_local.cli import main
    from orig_local.errors import UsageError
    from orig_local.study.runner import StudyLock, running_study

    plan = _plan(tmp_path)
    path = _dump(plan, tmp_path)
    assert running_study(plan.out_dir) is None
    with StudyLock(plan.out_dir):
        (plan.out_dir / "study.jsonl").write_text(json.dumps(
            {"event": "phase_start", "run": "r", "phase": "generate", "at": "T"}) + "\n")
        with pytest.raises(UsageError, match="another `orig study`"):
            with StudyLock(plan.out_dir):
                pass
        assert running_study(plan.out_dir) == f"pid {__import__('os').getpid()}: generate of r since T"
        main(["study", "status", str(path)])
        assert "a study is running" in capsys.readouterr().out
    assert running_study(plan.out_dir) is None


def test_missing_vllm_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    from orig_local.cli import main

    monkeypatch.setenv("ORIG_VLLM_BIN", str(tmp_path / "no-vllm"))
    plan = _plan(tmp_path)
    assert main(["study", str(_dump(plan, tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "the study needs vLLM servers" in err and "ORIG_VLLM_BIN" in err and len(err.strip().splitlines()) == 1
    assert not any(p.is_dir() and (p / "agent.jsonl").exists() for p in (tmp_path / "study").iterdir())


def test_generate_group_loads_once_and_one_runs_crash_does_not_stop_the_others(tmp_path):
    """The grouped generate process on real tiny weights: one instance for runs with equal
    settings, a run that cannot start (its folder holds another condition) reported as such,
    the runs after it still generated."""
    from orig_local.study.commands import generate_job
    from orig_local.study.generate_group import run_job

    plan = _plan(tmp_path, config=["offline"], set=["progress=false"],
                 runs=[{"label": x, "condition": "direct", "generator": "tiny-qwen-image"} for x in "abc"], grid=None)
    for run in plan.runs:
        _write_rows(plan.run_dir(run) / "agent.jsonl",
                    [{"id": i, "final_prompt": "a red square", "references": [], "error": None}
                     for i in ("mini_landmark", "mini_animal")])
    (plan.run_dir(plan.runs[1]) / "run.json").write_text(json.dumps({"condition": "orig"}))  # another run's folder
    results = run_job(generate_job(plan, plan.runs), tmp_path / "results.json")
    assert results["loads"] == 1
    assert results["runs"]["a"] == {"rc": 0, "failed": 0} and results["runs"]["c"] == {"rc": 0, "failed": 0}
    # RunMismatch is a user-fixable OrigError: rc 2, like `orig eval` on that folder
    assert results["runs"]["b"]["rc"] == 2 and "condition" in results["runs"]["b"]["error"]
    assert json.loads((tmp_path / "results.json").read_text()) == results
    for label in "ac":
        rows = [json.loads(x) for x in (tmp_path / "study" / label / "generate.jsonl").read_text().splitlines()]
        assert sorted(r["id"] for r in rows) == ["mini_animal", "mini_landmark"]
        assert all((tmp_path / "study" / label / r["image"]).is_file() for r in rows)
    assert not (tmp_path / "study" / "b" / "generate.jsonl").exists()


def test_a_signal_whose_exception_was_lost_still_stops_the_study(tmp_path):
    """Ctrl-C/SIGTERM raise from the signal handler; raised inside an at-fork hook (right after
    Popen forks a phase) that exception is ignored by Python. The flag the handler sets stops
    the study anyway: the running phase is stopped at once, not run to its end."""
    import signal
    import sys
    import time

    from orig_local.study.runner import StudyInterrupted, StudyRunner

    runner = StudyRunner(_plan(tmp_path), echo=lambda line: None)
    try:
        runner._interrupt(signal.SIGTERM, None)
    except StudyInterrupted:
        pass  # lost, as in the at-fork hook
    started = time.monotonic()
    with pytest.raises(StudyInterrupted, match="SIGTERM"):
        runner.run_command([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "logs" / "x.log")
    assert time.monotonic() - started < 30 and runner.child is None  # the phase was stopped, not awaited
