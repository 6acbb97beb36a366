"""Several images per item: ``orig eval --seeds 0,1,2 --out RUN``.

The agent (and retrieval accuracy) runs once in ``RUN``: P̂ and the references do not depend on
the image seed. Each seed gets a run folder ``RUN/seed-<s>`` whose agent rows are copied from
``RUN`` and whose generate and judge phases run with ``eval.seed = s`` - the ordinary, resumable
phase files, so a killed multi-seed run resumes like any other.

``orig report RUN`` then reports each seed as a run and adds the mean over seeds (``seeds.md``,
``seeds.json``): per prompt, S_i averaged over the seeds that scored it; per class the mean over
prompts; All the mean of the classes (as Table 3). Its CI is a two-level (hierarchical)
bootstrap: each replicate resamples prompts within classes, then, for each drawn prompt, its
seeds with replacement - so the interval covers both prompt and seed variance (a one-level
bootstrap over prompts of the seed means would miss the second).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from orig_local.errors import UsageError
from orig_local.evaluation.items import CONCEPTS
from orig_local.evaluation.scoring import ErrorPolicy, PromptScore

if TYPE_CHECKING:
    from orig_local.evaluation.run_rows import ReadBenchmark

PREFIX = "seed-"


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--seeds {text!r}: give whole numbers separated by commas, e.g. 0,1,2") from None
    if len(seeds) < 1 or len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds {text!r}: give distinct seeds, e.g. 0,1,2")
    return seeds


def seed_dir(run_dir: str | Path, seed: int) -> Path:
    return Path(run_dir) / f"{PREFIX}{seed}"


def seed_dirs(run_dir: str | Path) -> list[tuple[int, Path]]:
    """The seed sub-runs of ``run_dir`` (sorted by seed); [] for an ordinary run."""
    out = []
    for path in Path(run_dir).glob(f"{PREFIX}*"):
        suffix = path.name[len(PREFIX):]
        if path.is_dir() and suffix.lstrip("-").isdigit():
            out.append((int(suffix), path))
    return sorted(out)


def prepare_seed_run(run_dir: Path, seed: int, ids: list[str]) -> Path:
    """``RUN/seed-<s>`` with the agent rows (and their files) of ``RUN``."""
    from orig_local.study.share import copy_agent_rows

    sub = seed_dir(run_dir, seed)
    copy_agent_rows(run_dir, sub, ids)
    return sub


# --------------------------------------------------------------------------- scoring


def _matrix(per_seed: Sequence[Sequence[PromptScore]], key) -> tuple[list[str], dict[str, str], np.ndarray]:
    """(prompt ids, category by id, values[prompt, seed]) with NaN where a seed has no value."""
    ids: dict[str, str] = {}
    for prompts in per_seed:
        for p in prompts:
            if p.total:
                ids.setdefault(p.id, p.category)
    order = sorted(ids)
    index = {pid: k for k, pid in enumerate(order)}
    values = np.full((len(order), len(per_seed)), np.nan)
    for s, prompts in enumerate(per_seed):
        for p in prompts:
            if p.total:
                values[index[p.id], s] = key(p)
    return order, ids, values


def _cell_value(values: np.ndarray, cats: np.ndarray, class_names: Sequence[str] | None) -> float:
    """Mean over prompts of the seed-mean (concepts), or the mean of class means (classes/All)."""
    import warnings

    with warnings.catch_warnings():  # a prompt no seed scored: NaN, left out below
        warnings.simplefilter("ignore", RuntimeWarning)
        per_prompt = np.nanmean(values, axis=1) if values.size else np.array([])
    if class_names is None:
        kept = per_prompt[~np.isnan(per_prompt)]
        return float(kept.mean()) if kept.size else math.nan
    means = []
    for c in class_names:
        v = per_prompt[(cats == c) & ~np.isnan(per_prompt)]
        if v.size:
            means.append(v.mean())
    return float(np.mean(means)) if means else math.nan


def seed_table(per_seed: Sequence[Sequence[PromptScore]], class_names: Sequence[str], *, n_boot: int = 1000,
               ci: float = 0.95, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """``{cell: (mean over seeds, lo, hi)}`` for every class, PF/CC/TC and All; the CI from the
    two-level bootstrap (prompts within classes, then seeds within each drawn prompt)."""
    keys: dict[str, Any] = {"_s": lambda p: p.s}
    for c in CONCEPTS:
        keys[c] = lambda p, c=c: p.concept_accuracy(c)
    mats = {k: _matrix(per_seed, f) for k, f in keys.items()}
    order, cat_of, s_values = mats["_s"]
    cats = np.array([cat_of[i] for i in order])
    cells: dict[str, tuple[np.ndarray, list[str] | None]] = {}
    for c in class_names:
        cells[c] = (s_values, [c])
    cells["All"] = (s_values, list(class_names))
    for c in CONCEPTS:
        cells[c] = (mats[c][2], None)
    point = {k: _cell_value(v, cats, names) for k, (v, names) in cells.items()}
    if not n_boot or not order:
        return {k: (v, math.nan, math.nan) for k, v in point.items()}
    rng = np.random.default_rng(seed)
    n_seeds = s_values.shape[1]
    draws: dict[str, list[float]] = {k: [] for k in cells}
    blocks = [np.flatnonzero(cats == c) for c in sorted(set(cats))]
    for _ in range(n_boot):
        rows = np.concatenate([rng.choice(b, size=b.size, replace=True) for b in blocks])
        cols = rng.integers(0, n_seeds, size=(rows.size, n_seeds))  # seeds resampled per drawn prompt
        for k, (values, names) in cells.items():
            draws[k].append(_cell_value(values[rows[:, None], cols], cats[rows], names))
    alpha = (1 - ci) / 2
    out = {}
    for k, v in point.items():
        arr = np.array(draws[k])
        arr = arr[~np.isnan(arr)]
        lo, hi = (float(np.quantile(arr, alpha)), float(np.quantile(arr, 1 - alpha))) if arr.size else (math.nan,) * 2
        out[k] = (v, lo, hi)
    return out


def write_seed_summary(label: str, seed_runs: Sequence[Any], out: Path, *, n_boot: int, ci: float,
                       seed: int) -> str:
    """seeds.md / seeds.json for one multi-seed run (``seed_runs``: RunResults, one per seed)."""
    from orig_local.evaluation.items import CLASS_ABBREV
    from orig_local.evaluation.report_format import _md, _pct, columns_for

    classes = columns_for(seed_runs)
    table = seed_table([r.prompts for r in seed_runs], classes, n_boot=n_boot, ci=ci, seed=seed)
    cols = classes + list(CONCEPTS) + ["All"]
    row = [f"{label} (mean of {len(seed_runs)} seeds)"] + [
        _pct(table[c][0]) + ("" if math.isnan(table[c][1]) else f" ({_pct(table[c][1])}–{_pct(table[c][2])})")
        for c in cols]
    md = (f"Mean over seeds {', '.join(r.label for r in seed_runs)}: per prompt S_i averaged over its seeds; in "
          f"brackets the {int(ci * 100)}% two-level bootstrap CI ({n_boot} replicates: prompts within classes, "
          "then seeds within each prompt), covering prompt and seed variance.\n\n"
          + _md(["run"] + [CLASS_ABBREV.get(c, c) for c in cols], [row]))
    (out / "seeds.md").write_text(md, encoding="utf-8")
    doc = {"run": label, "seeds": [r.label for r in seed_runs], "bootstrap": n_boot, "ci": ci,
           "ci_method": "two-level bootstrap: prompts within classes, then seeds within prompt",
           "cells": {c: {"value": _num(v[0]), "ci_lo": _num(v[1]), "ci_hi": _num(v[2])} for c, v in table.items()}}
    (out / "seeds.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return md


def _num(v: float) -> float | None:
    return None if math.isnan(v) else round(float(v), 6)


def expand_runs(run_dirs: Sequence[str | Path]) -> tuple[list[str], dict[str, list[Path]]]:
    """Run folders with their seed sub-runs in place of a multi-seed parent; and parent -> seeds."""
    out: list[str] = []
    groups: dict[str, list[Path]] = {}
    for d in run_dirs:
        subs = [p for _, p in seed_dirs(d)]
        if subs:
            groups[str(d)] = subs
            out += [str(p) for p in subs]
        else:
            out.append(str(d))
    return out, groups


def seed_report(groups: dict[str, list[Path]], out: Path, *, judge_name: str | None, errors: ErrorPolicy, n_boot: int,
                ci: float, seed: int, read: ReadBenchmark | None = None) -> str:
    """The mean-over-seeds section of the report for each multi-seed run (appended to report.md).
    ``read``: the benchmark as this process already read it (``orig eval --seeds``)."""
    from orig_local.evaluation.results import load_run

    parts = []
    for parent, subs in groups.items():
        runs = [load_run(p, judge_name, errors, read=read) for p in subs]
        for r, p in zip(runs, subs, strict=True):
            r.label = f"{Path(parent).name}/{p.name}"
        parts.append(write_seed_summary(Path(parent).name, runs, Path(out), n_boot=n_boot, ci=ci, seed=seed))
    md = "\n## Mean over seeds\n\n" + "\n".join(parts)
    with open(Path(out) / "report.md", "a", encoding="utf-8") as f:
        f.write(md)
    return md
