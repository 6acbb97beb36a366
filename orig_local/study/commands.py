"""The command line of each study step: ``orig eval --out RUN --phase P ...``, the grouped
generate job, and ``orig report``.

Every phase of every run is its own ``python -m orig_local eval`` process (generation: one
process per generator, :mod:`orig_local.study.generate_group`). That is the stable
interface of the phase runner (resume, locking, preflight checks and exit codes live there),
and a process that exits gives back all the GPU memory its model held — no reliance on
``unload()`` or the CUDA caching allocator between two models.
"""

from __future__ import annotations

import sys
from pathlib import Path

from orig_local.study.plan import Plan, RunSpec, run_overrides  # run_overrides: importable from here too


def _orig() -> list[str]:
    return [sys.executable, "-m", "orig_local"]


def eval_command(plan: Plan, run: RunSpec, phase: str, *, server_url: str | None = None,
                 retry_failed: bool = False) -> list[str]:
    """``orig eval`` for one phase of one run. ``server_url``: the base URL of the server this
    phase talks to (the backbone for ``agent``, the judge for ``judge``/``retrieval``)."""
    cmd = _orig() + ["--quiet", "eval", "--out", str(plan.run_dir(run)), "--phase", phase,
                     "--benchmark", plan.benchmark, "--data", str(Path(plan.data).expanduser()),
                     "--condition", run.condition, "--generator", run.generator_preset,
                     "--judge", plan.judge.preset, "--label", run.label]
    if run.uses_backbone:
        cmd += ["--backbone", run.backbone_preset]
    if plan.judge.name:
        cmd += ["--judge-name", plan.judge.name]
    if plan.classes:
        cmd += ["--classes", ",".join(plan.classes)]
    if plan.ids:
        cmd += ["--ids", ",".join(plan.ids)]
    if plan.limit is not None:
        cmd += ["--limit", str(plan.limit)]
    if plan.include_others:
        cmd.append("--include-others")
    if retry_failed:
        cmd.append("--retry-errors")
    for path in plan.config:
        cmd += ["-c", path]
    sets = run_overrides(plan, run)
    if phase == "agent" and run.retrieves:
        snapshot = str(plan.resolved_evidence_dir())
        if plan.evidence == "record":
            sets.append(f"retrieval.record={snapshot}")
        elif plan.evidence == "replay":
            sets.append(f"retrieval.replay={snapshot}")
    if server_url:
        role = "backbone" if phase == "agent" else "judge"
        sets += [f"{role}.backend=openai", f"{role}.base_url={server_url}"]
    for item in sets:
        cmd += ["-s", item]
    return cmd


def config_overrides(plan: Plan, run: RunSpec) -> list[str]:
    """The overrides that give the config ``orig eval`` would build from this run's command
    line: its flags as config keys, then :func:`run_overrides`."""
    import json

    flags = [f"agent.condition={run.condition}", f"generator.preset={run.generator_preset}",
             f"judge.preset={plan.judge.preset}", f"eval.benchmark={plan.benchmark}",
             f"eval.data={json.dumps(str(Path(plan.data).expanduser()))}", f"eval.label={json.dumps(run.label)}",
             f"eval.include_others={str(plan.include_others).lower()}"]
    if run.uses_backbone:
        flags.append(f"backbone.preset={run.backbone_preset}")
    if plan.judge.name:
        flags.append(f"eval.judge_name={plan.judge.name}")
    if plan.classes:
        flags.append(f"eval.classes={json.dumps(plan.classes)}")
    # the flags win over files and -s in `orig eval`: they go last here too
    return run_overrides(plan, run) + flags


def generate_job(plan: Plan, runs: list[RunSpec], retry_failed: bool = False) -> dict:
    """The job of :mod:`orig_local.study.generate_group`: these runs' generate phases."""
    return {"benchmark": plan.benchmark, "data": str(Path(plan.data).expanduser()), "classes": plan.classes,
            "ids": plan.ids, "limit": plan.limit, "include_others": plan.include_others,
            "config": list(plan.config), "retry_failed": retry_failed,
            "runs": [{"label": r.label, "out": str(plan.run_dir(r)), "overrides": config_overrides(plan, r)}
                     for r in runs]}


def generate_group_command(job_path, results_path) -> list[str]:
    return [sys.executable, "-m", "orig_local.study.generate_group", str(job_path), str(results_path)]


def report_command(plan: Plan, run_dirs: list[str]) -> list[str]:
    cmd = _orig() + ["--quiet", "report", *run_dirs, "--out", str(plan.out_dir / "report")]
    if plan.judge.name:
        cmd += ["--judge-name", plan.judge.name]
    return cmd
