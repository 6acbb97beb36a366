"""scripts/slurm_eval.sh: array tasks (one shard each, own folder) then a merge that yields one
run equal in items to an unsharded one; `submit` chains the two with sbatch (a stand-in sbatch
records what it was asked to do)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orig_local.conditions import CONDITIONS, ConditionSpec
from orig_local.evaluation.rundir import read_phase

pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "slurm_eval.sh"
MINI = REPO / "orig_local" / "evaluation" / "data" / "mini.jsonl"


def _env(tmp_path: Path, **extra) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "DATA": str(MINI), "OUT": str(tmp_path / "run"),
           "SHARDS": "2", "BENCHMARK": "jsonl", "CONDITION": "direct", "GENERATOR": "tiny-qwen-image",
           "PHASES": "agent generate", "ORIG": f"{sys.executable} -m orig_local -q", "EXTRA_ARGS": "--offline"}
    env.update(extra)
    return env


def _script(env, *args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=500)


@pytest.mark.parametrize("phases", [
    "agent",  # no model at all for `direct`: the script's shard/merge logic in seconds
    # + the tiny generator, two processes per task splitting its shard; images merged (~40 s)
    pytest.param("agent generate", marks=pytest.mark.slow),
])
def test_shards_then_merge_give_one_complete_run(tmp_path, phases):
    for task in ("0", "1"):
        proc = _script(_env(tmp_path, SLURM_ARRAY_TASK_ID=task, PHASES=phases, GPUS_PER_TASK="2"), "shard",
                       cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    shard_dirs = sorted((tmp_path / "run.shards").glob("shard-*"))
    assert [d.name for d in shard_dirs] == ["shard-0", "shard-1"]
    ids = [json.loads(line)["id"] for line in MINI.read_text().splitlines() if line.strip()]
    per_shard = [set(read_phase(d, "agent")) for d in shard_dirs]
    assert per_shard[0].isdisjoint(per_shard[1]) and per_shard[0] | per_shard[1] == set(ids)
    if "generate" in phases:  # each task's two generate processes covered exactly its items
        for d, agent_ids in zip(shard_dirs, per_shard, strict=True):
            assert set(read_phase(d, "generate")) == agent_ids
        assert not list((tmp_path / "run.shards").glob("*.gpu*"))  # per-GPU copies merged and removed

    # the merge job refuses to run on a missing shard, then merges all of them
    env = _env(tmp_path, SHARDS="3")
    assert _script(env, "merge", cwd=tmp_path).returncode == 1
    proc = _script(_env(tmp_path), "merge", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run"
    assert set(read_phase(run, "agent")) == set(ids)
    if "generate" in phases:
        assert set(read_phase(run, "generate")) == set(ids)
        for row in read_phase(run, "generate").values():
            assert (run / row["image"]).is_file()
    assert json.loads((run / "run.json").read_text())["label"] == "run"  # not "shard-0"
    assert (run / "report" / "report.md").is_file()


def test_submit_chains_the_array_and_the_merge(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "sbatch.jsonl"
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f"#!{sys.executable}\nimport json, os, sys\ncalls = {str(calls)!r}\n"
                      "n = sum(1 for _ in open(calls)) if os.path.exists(calls) else 0\n"
                      "open(calls, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
                      "print(1000 + n)\n")
    sbatch.chmod(0o755)
    env = _env(tmp_path, SHARDS="4", PATH=f"{bin_dir}:{os.environ['PATH']}", SBATCH_ARGS="--partition=gpu")
    proc = _script(env, "submit", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    array, merge = [json.loads(line) for line in calls.read_text().splitlines()]
    assert "--array=0-3" in array and array[-1] == "shard" and "--partition=gpu" in array
    assert "--dependency=afterok:1000" in merge and merge[-1] == "merge"


def test_script_is_shellcheck_clean():
    if not shutil.which("shellcheck"):
        pytest.skip("shellcheck not installed")
    proc = subprocess.run(["shellcheck", str(SCRIPT), str(REPO / "scripts" / "serve_vllm.sh")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# Two conditions that are not in CONDITIONS, with names that say nothing of what they need: the
# script must read their properties from the package (a new entry needs no script edit).
_NEW_CONDITIONS = (ConditionSpec("raw_copy", "the raw prompt again", uses_backbone=False),
                   ConditionSpec("rag_text", "text retrieval under another name", modalities=("text",)))


def _fake_orig(tmp_path: Path) -> tuple[Path, Path]:
    """An `orig` that records each call: `conditions` is the real command (with the two new
    conditions added), `serve` prints ready and waits to be stopped, `eval` only records; and an
    `sbatch` beside it that only records."""
    calls = tmp_path / "orig-calls.jsonl"
    fake = tmp_path / "bin" / "orig"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys, time\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "if 'conditions' in sys.argv:\n"
        "    from orig_local.conditions import CONDITIONS, ConditionSpec\n"
        f"    CONDITIONS.update((c.name, c) for c in ({', '.join(map(repr, _NEW_CONDITIONS))},))\n"
        "    from orig_local.cli import main\n"
        "    sys.exit(main(sys.argv[1:]))\n"
        "if 'serve' in sys.argv:\n"
        "    print('ready: fake', flush=True)\n"
        "    time.sleep(600)\n")
    fake.chmod(0o755)
    sbatch = fake.parent / "sbatch"
    sbatch.write_text(f"#!/bin/sh\necho '[\"sbatch\"]' >> {calls}\necho 1000\n")
    sbatch.chmod(0o755)
    return fake, calls


def _phases_run(calls: Path) -> dict[str, list[str]]:
    """phase -> the `orig eval` arguments it was run with; 'serve' -> the presets served."""
    out: dict[str, list[str]] = {"serve": []}
    for line in calls.read_text().splitlines():
        argv = json.loads(line)
        if "serve" in argv:
            out["serve"].append(argv[argv.index("--preset") + 1])
        elif "eval" in argv:
            out[argv[argv.index("--phase") + 1]] = argv
    return out


@pytest.mark.parametrize("name", [*CONDITIONS, *(c.name for c in _NEW_CONDITIONS)])
def test_each_condition_gets_the_servers_and_phases_it_needs(tmp_path, name):
    spec = {**CONDITIONS, **{c.name: c for c in _NEW_CONDITIONS}}[name]
    fake, calls = _fake_orig(tmp_path)
    env = _env(tmp_path, SLURM_ARRAY_TASK_ID="0", CONDITION=name, ORIG=str(fake), PHASES="agent judge retrieval",
               BACKBONE_URL="http://backbone.invalid/v1", JUDGE_URL="http://judge.invalid/v1")
    proc = _script(env, "shard", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran = _phases_run(calls)
    assert ("backbone.base_url=http://backbone.invalid/v1" in ran["agent"]) == spec.uses_backbone
    assert "judge.base_url=http://judge.invalid/v1" in ran["judge"]
    assert ("retrieval" in ran) == spec.retrieves  # orig eval refuses the phase otherwise
    if spec.retrieves:
        assert "judge.base_url=http://judge.invalid/v1" in ran["retrieval"]

    # served on the node (no shared URL): a backbone server only for a condition that uses one
    calls.unlink()
    env = {**env, "PHASES": "agent", "BACKBONE_URL": ""}
    proc = _script(env, "shard", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _phases_run(calls)["serve"] == (["qwen2.5-vl-72b"] if spec.uses_backbone else [])


def test_unknown_condition_stops_before_anything_runs(tmp_path):
    fake, calls = _fake_orig(tmp_path)
    env = _env(tmp_path, CONDITION="orig_text", ORIG=str(fake), SLURM_ARRAY_TASK_ID="0",
               PATH=f"{fake.parent}:{os.environ['PATH']}")
    for mode in ("shard", "submit"):
        proc = _script(env, mode, cwd=tmp_path)
        assert proc.returncode == 2 and "unknown condition 'orig_text'" in proc.stderr
        assert all("conditions" in json.loads(line) for line in calls.read_text().splitlines())  # no eval, serve, sbatch
