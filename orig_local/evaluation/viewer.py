"""``orig view RUN...``: one self-contained HTML page that compares runs item by item.

Items x runs side by side: each run's image, final prompt P̂, reference images, status and score,
every verdict with its expected answer and the judge's raw reply, a link to the item's trace.
Filters by class, concept, verdict (wrong / error / right) and disagreement between runs; sorted
by where the runs differ most (the spread of S_i, then the number of questions judged
differently).

Self-contained: the data and the pictures (thumbnails as data URIs) are inside the file and the
page makes no request at all (no CDN, no fonts, a CSP that forbids fetching). Everything from a
run - prompts, web text, judge replies - is inserted with ``textContent``, never as HTML.
"""

from __future__ import annotations

import base64
import io
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orig_local.errors import UsageError
from orig_local.evaluation.rundir import check_run_dir, read_phase

PAGE = Path(__file__).parent / "templates" / "viewer.html"


def thumbnail(path: Path, side: int) -> str | None:
    """A JPEG data URI of ``path`` at most ``side`` px (None when the file is missing/unreadable)."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            im.thumbnail((side, side))
            buf = io.BytesIO()
            im.save(buf, "JPEG", quality=80)
    except (OSError, ValueError):
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def _verdicts(row: dict | None) -> dict[str, dict]:
    out = {}
    for v in (row or {}).get("verdicts") or []:
        if isinstance(v, dict) and isinstance(v.get("qid"), str):
            raw = v.get("raw")
            out[v["qid"]] = {"answer": v.get("answer"), "expected": v.get("expected"), "correct": v.get("correct"),
                             "error": v.get("error"), "raw": raw if isinstance(raw, list) else [],
                             "text": v.get("text"), "concept": v.get("concept")}
    return out


def _cell(run_dir: Path, rid: str, agent: dict, gen: dict, judge: dict, side: int, out_dir: Path) -> dict[str, Any]:
    image = gen.get("image")
    image_path = run_dir / image if isinstance(image, str) else None
    trace = run_dir / "traces" / f"{rid}.json"
    refs = [r for r in agent.get("references") or [] if isinstance(r, str)]
    return {
        "status": {ph: row.get("status") for ph, row in (("agent", agent), ("generate", gen), ("judge", judge)) if row},
        "error": judge.get("error") or gen.get("error") or agent.get("error"),
        "final_prompt": agent.get("final_prompt"),
        "image": thumbnail(image_path, side) if image_path and side else None,
        "image_link": os.path.relpath(image_path, out_dir) if image_path and image_path.is_file() else None,
        "references": [u for u in (thumbnail(run_dir / r, max(side // 2, 64)) if side else None for r in refs) if u],
        "score": judge.get("score"),
        "verdicts": _verdicts(judge),
        "trace": os.path.relpath(trace, out_dir) if trace.is_file() else None,
    }


def collect(run_dirs: Sequence[str | Path], out_dir: Path, *, judge_name: str | None = None,
            thumb: int = 320) -> dict[str, Any]:
    """The page's data: runs, and items with one cell per run (missing cells: not in that run)."""
    from orig_local.evaluation.run_rows import read_run_meta, run_stand_in_labels

    runs: list[dict[str, Any]] = []
    items: dict[str, dict[str, Any]] = {}
    for n, d in enumerate(run_dirs):
        run_dir = check_run_dir(d)
        meta = read_run_meta(run_dir)
        label = str(meta.get("label") or run_dir.name)
        if any(r["label"] == label for r in runs):
            label = f"{label}#{n + 1}"
        agent_rows = read_phase(run_dir, "agent")
        runs.append({"label": label, "dir": str(run_dir), "condition": meta.get("condition"),
                     "labels": run_stand_in_labels(run_dir, meta, _notes(agent_rows))})
        gen_rows = read_phase(run_dir, "generate")
        judge_rows = read_phase(run_dir, "judge", judge_name)
        for rid in dict.fromkeys([*agent_rows, *gen_rows, *judge_rows]):
            a, g, j = agent_rows.get(rid, {}), gen_rows.get(rid, {}), judge_rows.get(rid, {})
            item = items.setdefault(rid, {"id": rid, "category": None, "prompt": None, "questions": {}, "cells": {}})
            item["category"] = item["category"] or a.get("category") or g.get("category") or j.get("category")
            item["prompt"] = item["prompt"] or a.get("prompt")
            cell = _cell(run_dir, rid, a, g, j, thumb, out_dir)
            for qid, v in cell["verdicts"].items():
                item["questions"].setdefault(qid, {"qid": qid, "text": v["text"], "concept": v["concept"],
                                                   "expected": v["expected"]})
            item["cells"][label] = cell
    for item in items.values():
        item["questions"] = sorted(item["questions"].values(), key=lambda q: q["qid"])
        item.update(disagreement(item, [r["label"] for r in runs]))
    return {"runs": runs, "items": sorted(items.values(), key=lambda i: i["id"])}


def _notes(agent_rows: dict[str, dict]) -> list[str]:
    """The labels and notes the (stored) agent rows recorded; non-lists are not notes."""
    out: list[str] = []
    for row in agent_rows.values():
        for key in ("labels", "notes"):
            value = row.get(key)
            out += [str(x) for x in value] if isinstance(value, list) else []
    return out


def disagreement(item: dict, labels: Sequence[str]) -> dict[str, Any]:
    """``spread``: max - min S_i over the runs that scored the item; ``differing``: questions
    whose verdict (right / wrong / error) is not the same in every run that judged them."""
    scores = [c["score"] for c in item["cells"].values() if isinstance(c.get("score"), (int, float))]
    differing = 0
    for q in item["questions"]:
        outcomes = set()
        for label in labels:
            v = item["cells"].get(label, {}).get("verdicts", {}).get(q["qid"])
            if v is not None:
                outcomes.add("error" if v["error"] else v["correct"])
        differing += len(outcomes) > 1
    return {"spread": (max(scores) - min(scores)) if len(scores) > 1 else 0.0, "differing": differing}


def _embed(data: dict) -> str:
    # inside <script type="application/json">: "</" and "<!--" cannot end or open anything
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


def write_viewer(run_dirs: Sequence[str | Path], out: str | Path | None = None, *, judge_name: str | None = None,
                 thumb: int = 320) -> Path:
    """Write the viewer page; returns its path (default ``<run>/view.html`` for one run)."""
    if not run_dirs:
        raise UsageError("no run folder given", hint="orig view RUN [RUN ...]")
    if out is None:
        if len(run_dirs) != 1:
            raise UsageError("several runs: pass --out FILE.html for the comparison page")
        out = Path(run_dirs[0]) / "view.html"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = collect(run_dirs, out.parent.resolve(), judge_name=judge_name, thumb=thumb)
    page = PAGE.read_text(encoding="utf-8").replace("__DATA__", _embed(data))
    out.write_text(page, encoding="utf-8")
    return out
