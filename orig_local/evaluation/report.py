"""Reports derived from run folders (rebuildable any time): ``orig report RUN... --out DIR``.

Writes into ``DIR``:
  accuracy.md / .csv     Table-3 layout: rows = runs, columns = classes + PF/CC/TC + All, with
                         bootstrap CIs and error counts
  differences.md / .csv  each run minus the baseline run (paired on prompt ids, bootstrap CI)
  cost.md / .csv         per-stage means per prompt (Table 6 layout: calls, tokens, seconds, searches)
  retrieval.md / .csv    Tables 4/7 layout: iterations, retrieval acc., prompt length, references,
                         searches, extension tokens, generation acc.
  figures/classes.png    per-class bars across runs (CI error bars)
  figures/backbone_scale.png   All vs backbone size, when runs differ only in backbone size
  gallery/<label>.html   per prompt: image, references, final prompt, each question's verdict
  report.md              all tables in one page
"""

from __future__ import annotations

import csv
import html
import math
import os
from pathlib import Path
from typing import Sequence

from orig_local.evaluation.items import CLASS_ABBREV, CONCEPTS
from orig_local.evaluation.results import RunResults, load_run, retrieval_summary, stage_means
from orig_local.evaluation.scoring import bootstrap_ci, paired_difference, table_classes, table_row

STAGE_ORDER = ["bootstrap", "planning", "retrieval", "accumulation", "sufficiency", "refinement",
               "extension", "enhance"]
COST_METRICS = [("calls", "calls"), ("prompt_tokens", "input tokens"), ("completion_tokens", "output tokens"),
                ("seconds", "seconds"), ("searches_text", "text searches"), ("searches_image", "image searches")]


def _pct(v: float) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def _num(v: float, digits: int = 1) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.{digits}f}"


def _md(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _csv(path: Path, header: list[str], rows: list[list]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def columns_for(runs: Sequence[RunResults]) -> list[str]:
    prompts = [p for r in runs for p in r.prompts]
    return table_classes(prompts) if prompts else []


# --------------------------------------------------------------------------- tables


def accuracy_table(runs: Sequence[RunResults], n_boot: int = 1000, ci: float = 0.95, seed: int = 0):
    """(columns, rows) with rows = {label, cells: {col: (value, lo, hi)}, counts}."""
    classes = columns_for(runs)
    cols = classes + list(CONCEPTS) + ["All"]
    out = []
    for run in runs:
        point = table_row(run.prompts, classes)
        cis = bootstrap_ci(run.prompts, classes, n_boot=n_boot, ci=ci, seed=seed) if n_boot else {}
        cells = {c: (point[c], *cis.get(c, (math.nan, math.nan))) for c in cols}
        out.append({"label": run.label, "cells": cells, "counts": run.counts})
    return cols, out


def write_accuracy(runs, out: Path, n_boot: int, ci: float, seed: int) -> str:
    cols, rows = accuracy_table(runs, n_boot, ci, seed)
    head = ["run"] + [CLASS_ABBREV.get(c, c) for c in cols] + ["prompts", "judge errors"]
    md_rows, csv_rows = [], []
    for r in rows:
        cells = r["cells"]
        fmt = [(_pct(v) + (f" ({_pct(lo)}–{_pct(hi)})" if n_boot and not math.isnan(lo) else "")) for v, lo, hi in
               (cells[c] for c in cols)]
        cnt = r["counts"]
        errs = f"{cnt['judge_question_errors']} q / {cnt['judge_item_errors']} items"
        md_rows.append([r["label"], *fmt, str(cnt["judged_prompts"]), errs])
        csv_rows.append([r["label"]] + [x for c in cols for x in (
            _round(cells[c][0]), _round(cells[c][1]), _round(cells[c][2]))]
            + [cnt["judged_prompts"], cnt["judge_question_errors"], cnt["judge_item_errors"]])
    _csv(out / "accuracy.csv", ["run"] + [f"{c}{s}" for c in cols for s in ("", "_lo", "_hi")]
         + ["prompts", "judge_question_errors", "judge_item_errors"], csv_rows)
    note = (f"Accuracy (%); in brackets the {int(ci * 100)}% bootstrap CI over prompts ({n_boot} "
            "replicates, resampled within classes). All = mean of the class columns.\n\n") if n_boot else "Accuracy (%).\n\n"
    md = note + _md(head, md_rows)
    (out / "accuracy.md").write_text(md, encoding="utf-8")
    return md


def _round(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(100 * v, 2)


def write_differences(runs, baseline: RunResults, out: Path, n_boot: int, ci: float, seed: int) -> str:
    classes = columns_for(runs)
    cols = classes + list(CONCEPTS) + ["All"]
    md_rows, csv_rows = [], []
    for run in runs:
        if run is baseline:
            continue
        d = paired_difference(baseline.prompts, run.prompts, classes, n_boot=max(n_boot, 1), ci=ci, seed=seed)
        md_rows.append([f"{run.label} − {baseline.label}"] + [
            f"{_signed(d[c][0])} ({_signed(d[c][1])}, {_signed(d[c][2])})" for c in cols])
        csv_rows.append([run.label, baseline.label] + [x for c in cols for x in map(_round, d[c])])
    _csv(out / "differences.csv", ["run", "baseline"] + [f"{c}{s}" for c in cols for s in ("", "_lo", "_hi")], csv_rows)
    md = (f"Differences in accuracy points, paired on prompt ids scored in both runs, with "
          f"{int(ci * 100)}% bootstrap CI.\n\n" + _md(["run"] + [CLASS_ABBREV.get(c, c) for c in cols], md_rows))
    (out / "differences.md").write_text(md, encoding="utf-8")
    return md


def _signed(v: float) -> str:
    return "–" if math.isnan(v) else f"{100 * v:+.1f}"


def write_cost(runs, out: Path) -> str:
    parts, csv_rows = [], []
    for run in runs:
        means = stage_means(run)
        if not means:
            continue
        stages = [s for s in STAGE_ORDER if s in means] + sorted(s for s in means if s not in STAGE_ORDER)
        rows = []
        for key, name in COST_METRICS:
            rows.append([name] + [_num(means[s].get(key, 0.0), 2 if key == "seconds" else 1) for s in stages])
            csv_rows += [[run.label, s, key, round(means[s].get(key, 0.0), 4)] for s in stages]
        parts.append(f"**{run.label}** (mean per prompt)\n\n" + _md(["metric"] + stages, rows))
    _csv(out / "cost.csv", ["run", "stage", "metric", "mean_per_prompt"], csv_rows)
    md = "Per-stage cost (Table 6 layout).\n\n" + ("\n".join(parts) if parts else "No agent stage totals recorded.\n")
    (out / "cost.md").write_text(md, encoding="utf-8")
    return md


def write_retrieval(runs, out: Path) -> str:
    keys = ["iterations", "retrieval_acc", "prompt_words", "references", "text_searches", "image_searches",
            "extension_in_tokens", "extension_out_tokens", "generation_acc"]
    head = ["run", "Iters", "R. Acc", "prompt words", "images", "text searches", "image searches",
            "ext. in tokens", "ext. out tokens", "G. Acc"]
    md_rows, csv_rows = [], []
    for run in runs:
        s = retrieval_summary(run)
        md_rows.append([run.label] + [
            _pct(s[k]) if k.endswith("_acc") else _num(s[k]) for k in keys])
        csv_rows.append([run.label] + [None if math.isnan(s[k]) else round(s[k], 4) for k in keys])
    _csv(out / "retrieval.csv", ["run"] + keys, csv_rows)
    md = "Retrieval and prompt statistics (Tables 4/7 layout; means per prompt).\n\n" + _md(head, md_rows)
    (out / "retrieval.md").write_text(md, encoding="utf-8")
    return md


# --------------------------------------------------------------------------- figures


def figure_classes(runs, path: Path, n_boot: int, ci: float, seed: int) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cols, rows = accuracy_table(runs, n_boot, ci, seed)
    # classes without data in any run are dropped from the figure (kept in the tables)
    cols = [c for c in cols if c not in CONCEPTS and any(not math.isnan(r["cells"][c][0]) for r in rows)]
    if not cols:
        return None
    x = np.arange(len(cols))
    width = 0.8 / max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(cols) + 2), 3.6))
    for k, r in enumerate(rows):
        vals = np.array([r["cells"][c][0] for c in cols]) * 100
        lo = np.array([r["cells"][c][1] for c in cols]) * 100
        hi = np.array([r["cells"][c][2] for c in cols]) * 100
        err = None if not n_boot else np.nan_to_num(np.vstack([vals - lo, hi - vals]), nan=0.0).clip(min=0)
        ax.bar(x + (k - (len(rows) - 1) / 2) * width, np.nan_to_num(vals), width, yerr=err, capsize=2, label=r["label"])
    ax.set_xticks(x, [CLASS_ABBREV.get(c, c) for c in cols])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    return _save_figure(fig, ax, path)


def figure_backbone_scale(runs, path: Path, n_boot: int, ci: float, seed: int) -> Path | None:
    """All vs backbone size (7B/32B/72B), one line per (condition, generator)."""
    sized = [r for r in runs if r.meta.get("backbone_size_b")]
    if len({r.meta["backbone_size_b"] for r in sized}) < 2:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list] = {}
    for r in sized:
        key = f"{r.meta.get('condition', '?')} / {r.meta.get('generator') or '?'}"
        point = table_row(r.prompts)["All"]
        lo, hi = (bootstrap_ci(r.prompts, n_boot=n_boot, ci=ci, seed=seed)["All"] if n_boot else (point, point))
        groups.setdefault(key, []).append((r.meta["backbone_size_b"], point, lo, hi))
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    for key, pts in sorted(groups.items()):
        pts.sort()
        xs = [p[0] for p in pts]
        ys = [100 * p[1] for p in pts]
        err = [[100 * (p[1] - p[2]) for p in pts], [100 * (p[3] - p[1]) for p in pts]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=key)
    ax.set_xscale("log")
    sizes = sorted({r.meta["backbone_size_b"] for r in sized})
    ax.set_xticks(sizes, [f"{s:g}B" for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("backbone size")
    ax.set_ylabel("All accuracy (%)")
    return _save_figure(fig, ax, path)


def _save_figure(fig, ax, path: Path) -> Path:
    """The finishing touches both figures share: legend, no top/right frame, saved, closed."""
    import matplotlib.pyplot as plt

    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- gallery


def write_gallery(run: RunResults, path: Path) -> Path:
    """Static HTML: per prompt the image, references, final prompt and every verdict. Images
    are linked by relative path (the run folder stays the single copy)."""
    import jinja2

    path.parent.mkdir(parents=True, exist_ok=True)

    def rel(p: str | None, base: Path = run.dir) -> str | None:
        if not p:
            return None
        full = Path(p) if Path(p).is_absolute() else base / p
        return os.path.relpath(full, path.parent)

    entries = []
    ids = list(run.agent_rows) + [i for i in run.judge_rows if i not in run.agent_rows]
    for pid in ids:
        a, g, j = run.agent_rows.get(pid, {}), run.gen_rows.get(pid, {}), run.judge_rows.get(pid, {})
        entries.append({
            "id": pid, "category": a.get("category") or j.get("category", ""),
            "prompt": a.get("prompt", ""), "final_prompt": a.get("final_prompt", ""),
            "image": rel(g.get("image")), "references": [rel(r) for r in a.get("references") or []],
            "score": j.get("score"), "errors": [e for e in (a.get("error"), g.get("error"), j.get("error")) if e],
            "verdicts": [{**v, "reference_image": rel(v.get("reference_image"))} for v in j.get("verdicts", [])],
            "retrieval": run.retrieval_rows.get(pid, {}).get("accuracy"),
        })
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).parent / "templates")),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    page = env.get_template("gallery.html.jinja").render(label=run.label, meta=run.meta, entries=entries,
                                                        counts=run.counts, pct=_pct)
    path.write_text(page, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- all of it


def build_report(run_dirs: Sequence[str | Path], out: str | Path | None = None, *, judge_name: str | None = None,
                 baseline: str | Path | None = None, n_boot: int = 1000, ci: float = 0.95, seed: int = 0,
                 errors: str = "exclude", gallery: bool = True) -> dict[str, Path]:
    """Write every table, figure and gallery for ``run_dirs`` into ``out`` (default
    ``<run>/report`` for one run). ``judge_name`` may list several judges ("default,qwen7b")
    to compare them side by side. Returns the written paths by name."""
    # Several judges (comma-separated names, "default" = judge.jsonl): one row per run x judge.
    names = [None if n in ("", "default") else n for n in judge_name.split(",")] if judge_name else [None]
    runs = []
    for d in run_dirs:
        for name in names:
            run = load_run(d, name, errors)
            if len(names) > 1:
                run.label = f"{run.label} [{name or 'default'}]"
            runs.append(run)
    if out is None:
        if len(run_dirs) != 1:
            raise ValueError("several runs: pass --out DIR for the comparison report")
        out = runs[0].dir / "report"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):  # same folder name in different places
        for k, r in enumerate(runs):
            r.label = f"{r.label}#{k + 1}"
    written: dict[str, Path] = {}
    sections = ["# FIG-Eval report\n", "Runs: " + ", ".join(f"`{r.label}` ({r.dir})" for r in runs) + "\n",
                "## Accuracy\n", write_accuracy(runs, out, n_boot, ci, seed)]
    written["accuracy"] = out / "accuracy.md"
    if len(runs) > 1:
        base = runs[0]
        if baseline is not None:
            base = next(r for r in runs if r.dir.resolve() == Path(baseline).resolve())
        sections += ["## Differences\n", write_differences(runs, base, out, n_boot, ci, seed)]
        written["differences"] = out / "differences.md"
    sections += ["## Retrieval\n", write_retrieval(runs, out), "## Cost\n", write_cost(runs, out)]
    written["retrieval"], written["cost"] = out / "retrieval.md", out / "cost.md"
    fig = figure_classes(runs, out / "figures" / "classes.png", n_boot, ci, seed)
    if fig:
        written["fig_classes"] = fig
        sections.append("![per-class accuracy](figures/classes.png)\n")
    fig = figure_backbone_scale(runs, out / "figures" / "backbone_scale.png", n_boot, ci, seed)
    if fig:
        written["fig_backbone"] = fig
        sections.append("![backbone scale](figures/backbone_scale.png)\n")
    if gallery:
        for r in runs:
            written[f"gallery:{r.label}"] = write_gallery(r, out / "gallery" / f"{_slug(r.label)}.html")
        sections.append("Galleries: " + ", ".join(
            f"[{r.label}](gallery/{_slug(r.label)}.html)" for r in runs) + "\n")
    (out / "report.md").write_text("\n".join(sections), encoding="utf-8")
    written["report"] = out / "report.md"
    return written


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


__all__ = ["build_report", "accuracy_table", "write_gallery", "html"]
