"""One agent phase for runs whose agent would write the same rows.

The agent's output does depend on the generator: its reference capacity (0 / 1 / 3) decides
which references P̂ cites and passes, and its text-encoder token bound (and the tokenizer that
bound counts in) decides where P̂ is cut. So runs share an agent phase only when every resolved
setting the agent phase reads is equal (:func:`orig_local.agent.inputs.agent_inputs`: the
whole resolved config minus the settings listed there as not changing the agent's output, with
the generator seen as the agent sees it). In Table 3, FLUX-Kontext (1 reference, T5 tokens)
and Qwen-Image (text-only) thus get their own ORIG / ORIG-Img / Oracle agent phases, while
e.g. two text-only generators with the same encoder share one. The shared phase runs in the
first run's folder (the *source*) and its rows are copied, with the files they name, into the
others.

Crash safety follows the phase stores: files first, the row last (one fsynced line), so a
killed copy leaves at most files without a row, and the item is copied again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from orig_local.study.plan import Plan, RunSpec
from orig_local.study.status import row_state


def run_agent_inputs(plan: Plan, run: RunSpec) -> dict[str, Any]:
    """The resolved settings this run's agent phase depends on (the config `orig eval` builds
    from the run's command line, seen through :func:`agent_inputs`)."""
    from orig_local.agent.inputs import agent_inputs
    from orig_local.config import load_config
    from orig_local.study.commands import config_overrides

    return agent_inputs(load_config(list(plan.config), config_overrides(plan, run)))


def agent_key(plan: Plan, run: RunSpec) -> str:
    """What the agent phase depends on, as one canonical string."""
    return json.dumps(run_agent_inputs(plan, run), sort_keys=True, separators=(",", ":"))


def agent_sources(plan: Plan) -> dict[str, str]:
    """label -> label of the run whose agent rows it takes (itself for a source)."""
    if not plan.share_agent:
        return {r.label: r.label for r in plan.runs}
    first: dict[str, str] = {}
    return {r.label: first.setdefault(agent_key(plan, r), r.label) for r in plan.runs}


def sharing_reasons(plan: Plan) -> dict[str, str]:
    """label -> one line saying why its agent phase is shared or its own: for a copy, what
    the runs have in common; for a source, what separates it from the nearest run of the same
    condition and backbone that has another agent phase (e.g. reference capacity 3 vs 0)."""
    from orig_local.agent.inputs import GeneratorView, differing_inputs

    sources = agent_sources(plan)
    inputs = {r.label: run_agent_inputs(plan, r) for r in plan.runs}

    def view(label: str) -> str:
        return GeneratorView(**inputs[label]["generator_view"]).describe()

    out: dict[str, str] = {}
    for run in plan.runs:
        src = sources[run.label]
        if src != run.label:
            out[run.label] = f"same agent inputs ({view(src)}); the generator's other settings are not read by the agent"
            continue
        others = [o for o in plan.runs if sources[o.label] == o.label and o.label != run.label
                  and o.condition == run.condition and o.backbone == run.backbone]
        if not plan.share_agent:
            out[run.label] = f"own agent phase (share_agent: false); {view(run.label)}"
        elif others:
            diff = differing_inputs(inputs[run.label], inputs[others[0].label])
            shown = ", ".join(k.removeprefix("generator_view.") for k in diff[:4]) + (", ..." if len(diff) > 4 else "")
            out[run.label] = f"own agent phase: {view(run.label)}; differs from {others[0].label} in {shown}"
        else:
            out[run.label] = f"own agent phase: {view(run.label)}"
    return out


def _files(row: dict, run_dir: Path) -> list[str]:
    """Every file an agent row names (relative to its run folder)."""
    paths = list(row.get("references") or [])
    for key in ("evidence", "trace"):
        if row.get(key):
            paths.append(row[key])
    if row.get("evidence"):
        try:
            ev = json.loads((run_dir / row["evidence"]).read_text(encoding="utf-8"))
            paths += list(ev.get("images") or [])
        except (OSError, ValueError):
            pass  # a missing evidence file stays missing in the copy too
    return paths


def _copy_files(row: dict, src: Path, dst: Path) -> None:
    src_root, dst_root = src.resolve(), dst.resolve()
    for rel in _files(row, src):
        source, target = (src / rel).resolve(), (dst / rel).resolve()
        # only files inside the run folders: a row is data, not a licence to write elsewhere
        if not (source.is_relative_to(src_root) and target.is_relative_to(dst_root)) or not source.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".copy.tmp")
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)


def copy_agent_rows(src: Path, dst: Path, ids: list[str], retry_failed: bool = False) -> dict:
    """Copy the source's agent rows for ``ids`` that ``dst`` lacks (and, with ``retry_failed``,
    replace failed rows of ``dst`` the source has since redone). Returns counts."""
    from orig_local.evaluation.jsonl_store import JsonlStore, write_rows_atomic
    from orig_local.evaluation.rundir import read_phase

    source_rows = read_phase(src, "agent")
    dst.mkdir(parents=True, exist_ok=True)
    store = JsonlStore(dst / "agent.jsonl")  # cuts a torn tail a killed copy left behind
    copied, redone = 0, {}
    for item_id in ids:
        row = source_rows.get(item_id)
        if row is None:
            continue  # the source has not produced it (its phase failed or was cut)
        mine = store.status(item_id)
        if mine is None:
            _copy_files(row, src, dst)  # files first, the row last
            store.append(row)
            copied += 1
        elif retry_failed and mine == "failed" and row_state(row) != "failed":
            _copy_files(row, src, dst)
            redone[item_id] = row
    if redone:
        write_rows_atomic(store.path, [redone.get(r["id"], r) for r in store.rows()])
    return {"copied": copied, "replaced": len(redone)}
