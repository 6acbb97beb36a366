"""One agent phase for runs that differ only in their generator.

The agent's output (extended prompt, references, evidence) does not depend on the image
generator, and the paper gives every generator of a condition the same prompts and
references (Table 3 compares generators on one retrieval). So runs with the same condition,
backbone, rounds, switches and overrides share one agent phase: it runs in the first run's
folder (the *source*) and its rows are copied, with the files they name, into the others.

Crash safety follows the phase stores: files first, the row last (one fsynced line), so a
killed copy leaves at most files without a row, and the item is copied again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from orig_local.study.plan import Plan, RunSpec
from orig_local.study.status import row_state


def agent_key(run: RunSpec) -> tuple:
    """What the agent phase depends on. Overrides of the generator section do not count."""
    sets = tuple(s for s in run.set if not s.startswith("generator."))
    return (run.condition, run.backbone if run.uses_backbone else None, run.fixed_rounds,
            tuple(sorted(run.agent.items())), sets)


def agent_sources(plan: Plan) -> dict[str, str]:
    """label -> label of the run whose agent rows it takes (itself for a source)."""
    if not plan.share_agent:
        return {r.label: r.label for r in plan.runs}
    first: dict[tuple, str] = {}
    return {r.label: first.setdefault(agent_key(r), r.label) for r in plan.runs}


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
