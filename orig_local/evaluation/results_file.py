"""``results.json`` and ``results_long.csv``: every number of a report in one versioned file a
plotting notebook reads without joining CSVs and ``run.json``s (schema: docs/evaluation.md,
"Results file").

Fed by the report's own computations (the accuracy table ``build_report`` computed, the same
paired differences, retrieval and cost summaries), so the file and the Markdown tables cannot
disagree. A NaN (no data) is written as ``null``, never as a number.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orig_local.evaluation.items import CONCEPTS
from orig_local.evaluation.results import RunResults, retrieval_summary, stage_means
from orig_local.evaluation.scoring import bootstrap_ci, paired_difference, table_row

SCHEMA = "orig-local/results"
SCHEMA_VERSION = 1  # bump on any change a reader must know about; docs/evaluation.md lists them
LONG_COLUMNS = ["run", "class", "concept", "metric", "value", "ci_lo", "ci_hi", "n_prompts"]


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(v) else round(float(v), 6)


def run_identity(run: RunResults) -> dict[str, Any]:
    """Who made the run: the condition, each model (preset, hub id, revision, backend, stand-in
    flags), the data and the code, from run.json (``None`` where run.json does not say)."""
    meta, prov = run.meta, run.provenance
    models = found if isinstance(found := prov.get("models"), dict) else {}

    def model(role: str) -> dict[str, Any]:
        m = dict(models.get(role) or {})
        m.setdefault("preset", meta.get(role))
        return m

    code = found if isinstance(found := prov.get("code"), dict) else {}
    data = {"benchmark": meta.get("benchmark"), "path": meta.get("data"),
            "identity": meta.get("benchmark_identity")}
    gen = str(meta.get("generator") or "")
    external = gen.removeprefix("external: ") if gen.startswith("external: ") else None
    return {
        "label": run.label, "dir": str(run.dir), "condition": meta.get("condition"),
        "judge_name": run.judge_name, "seed": meta.get("seed"),
        "backbone": model("backbone"), "generator": model("generator"), "judge": model("judge"),
        "images": f"external: {external}" if external else "generated",
        "judges_in_rows": list(run.judges), "data": data,
        "code": {"orig_local": code.get("orig_local"), "git_commit": code.get("git_commit"),
                 "git_dirty": code.get("git_dirty")},
        "config_sha256": prov.get("config_sha256"), "labels": list(run.labels),
        "judge_templates": prov.get("judge_templates"),
    }


def _accuracy(run: RunResults, cols: list[str], table_row_: dict) -> dict[str, Any]:
    cells = table_row_["cells"]
    return {c: {"value": _num(cells[c][0]), "ci_lo": _num(cells[c][1]), "ci_hi": _num(cells[c][2])} for c in cols}


def class_concept_cells(run: RunResults, classes: Sequence[str], n_boot: int, ci: float,
                        seed: int) -> list[dict[str, Any]]:
    """Accuracy of each (class, concept) pair with its CI: the concept columns restricted to one
    class's prompts ("all" = the class score; class "All" = the table's All/PF/CC/TC cells)."""
    rows = []
    for cls in classes:
        prompts = [p for p in run.prompts if p.category == cls and p.total]
        if not prompts:
            continue
        point = table_row(prompts, [cls])
        cis = bootstrap_ci(prompts, [cls], n_boot=n_boot, ci=ci, seed=seed) if n_boot else {}
        for concept, key in [("all", cls), *((c, c) for c in CONCEPTS)]:
            n = len(prompts) if concept == "all" else sum(1 for p in prompts if p.by_concept.get(concept, (0, 0))[1])
            lo, hi = cis.get(key, (math.nan, math.nan))
            rows.append({"class": cls, "concept": concept, "value": _num(point[key]), "ci_lo": _num(lo),
                         "ci_hi": _num(hi), "n_prompts": n})
    return rows


def results_document(runs: Sequence[RunResults], accuracy: tuple[list[str], list[dict]], *, n_boot: int, ci: float,
                     seed: int, baseline: RunResults | None = None, classes: Sequence[str] = ()) -> dict[str, Any]:
    """The whole results file as a dict (see :func:`write_results`)."""
    from orig_local.provenance import package_version

    cols, acc_rows = accuracy
    out_runs = []
    for run, row in zip(runs, acc_rows, strict=True):
        retrieval = {k: _num(v) for k, v in retrieval_summary(run).items()}
        out_runs.append({
            **run_identity(run),
            "counts": dict(row["counts"]),
            "status": {ph: dict(c) for ph, c in run.status.items()},
            "failed_items": dict(run.failed_items),
            "stop_reasons": dict(run.stop_reasons),
            "data_errors": [{"phase": i.phase, "item": i.item, "problem": i.message} for i in run.data_errors],
            "warnings": list(run.warnings),
            "accuracy": _accuracy(run, cols, row),
            "class_concept": class_concept_cells(run, [c for c in cols if c not in CONCEPTS and c != "All"],
                                                 n_boot, ci, seed),
            "retrieval": retrieval,
            "cost_per_prompt": {s: {k: _num(v) for k, v in m.items()} for s, m in stage_means(run).items()},
        })
    diffs = []
    if baseline is not None and len(runs) > 1:
        for run in runs:
            if run is baseline:
                continue
            d = paired_difference(baseline.prompts, run.prompts, list(classes), n_boot=max(n_boot, 1), ci=ci,
                                  seed=seed)
            diffs.append({"run": run.label, "baseline": baseline.label,
                          "cells": {c: {"value": _num(v[0]), "ci_lo": _num(v[1]), "ci_hi": _num(v[2])}
                                    for c, v in d.items() if c in cols}})
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "orig_local": package_version(),
        "settings": {"bootstrap": n_boot, "ci": ci, "seed": seed,
                     "ci_method": "percentile bootstrap over prompts, resampled within classes"},
        "columns": cols, "runs": out_runs, "differences": diffs,
    }


def long_rows(doc: dict[str, Any]) -> list[list[Any]]:
    """One row per run x class x concept x metric (``results_long.csv``)."""
    rows: list[list[Any]] = []
    for run in doc["runs"]:
        label = run["label"]
        for cell in run["class_concept"]:
            rows.append([label, cell["class"], cell["concept"], "accuracy", cell["value"], cell["ci_lo"],
                         cell["ci_hi"], cell["n_prompts"]])
        acc = run["accuracy"]
        n_all = run["counts"].get("judged_prompts")
        rows.append([label, "All", "all", "accuracy", acc["All"]["value"], acc["All"]["ci_lo"], acc["All"]["ci_hi"],
                     n_all])
        for concept in CONCEPTS:
            if concept in acc:
                n = sum(c["n_prompts"] for c in run["class_concept"] if c["concept"] == concept)
                rows.append([label, "All", concept, "accuracy", acc[concept]["value"], acc[concept]["ci_lo"],
                             acc[concept]["ci_hi"], n])
        for key, value in run["retrieval"].items():
            rows.append([label, "All", "all", key, value, None, None, None])
        for stage, metrics in run["cost_per_prompt"].items():
            for key, value in metrics.items():
                rows.append([label, "All", "all", f"cost.{stage}.{key}", value, None, None, None])
    return rows


def write_results(runs: Sequence[RunResults], out: Path, accuracy: tuple[list[str], list[dict]], *, n_boot: int,
                  ci: float, seed: int, baseline: RunResults | None = None,
                  classes: Sequence[str] = ()) -> dict[str, Path]:
    """Write ``results.json`` and ``results_long.csv`` into ``out``; returns their paths."""
    doc = results_document(runs, accuracy, n_boot=n_boot, ci=ci, seed=seed, baseline=baseline, classes=classes)
    out = Path(out)
    path = out / "results.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    long_path = out / "results_long.csv"
    with open(long_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(LONG_COLUMNS)
        writer.writerows(["" if v is None else v for v in row] for row in long_rows(doc))
    return {"results": path, "results_long": long_path}
