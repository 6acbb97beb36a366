"""The report's tables, each written as Markdown (for report.md) and CSV: accuracy (Table 3
layout), differences to a baseline, per-stage cost (Table 6), retrieval (Tables 4/7), status,
data errors."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orig_local.agent.registry import stage_names
from orig_local.evaluation.items import CLASS_ABBREV, CONCEPTS
from orig_local.evaluation.report_format import (
    _csv,
    _md,
    _num,
    _pct,
    _round,
    _signed,
    _write_text,
    columns_for,
    json_dumps,
    notes_cell,
    notes_legend,
    run_notes,
)
from orig_local.evaluation.results import RunResults, retrieval_summary, stage_means
from orig_local.evaluation.scoring import bootstrap_ci, paired_difference, table_row
from orig_local.labels import SIMULATED

# (columns, one {"label", "cells": {column: (value, lo, hi)}, "counts"} per run)
AccuracyTable = tuple[list[str], list[dict[str, Any]]]

COST_METRICS = [("calls", "calls"), ("prompt_tokens", "input tokens"),
                ("cacheable_tokens", "of which cacheable (est.)"),
                ("cache_hit_tokens", "of which served from the prefix cache (server)"),
                ("completion_tokens", "output tokens"),
                ("seconds", "seconds"), ("searches_text", "text searches"), ("searches_image", "image searches")]


def accuracy_table(runs: Sequence[RunResults], n_boot: int = 1000, ci: float = 0.95, seed: int = 0) -> AccuracyTable:
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


def write_accuracy(runs: Sequence[RunResults], out: Path, n_boot: int, ci: float, seed: int,
                   table: AccuracyTable | None = None) -> str:
    """accuracy.md/.csv; ``table``: :func:`accuracy_table`'s result when already computed."""
    cols, rows = table or accuracy_table(runs, n_boot, ci, seed)
    head = ["run"] + [CLASS_ABBREV.get(c, c) for c in cols] + ["prompts", "judge errors", "notes"]
    md_rows, csv_rows = [], []
    for run, r in zip(runs, rows, strict=True):
        cells = r["cells"]
        fmt = [(_pct(v) + (f" ({_pct(lo)}–{_pct(hi)})" if n_boot and not math.isnan(lo) else "")) for v, lo, hi in
               (cells[c] for c in cols)]
        cnt = r["counts"]
        errs = f"{cnt['judge_question_errors']} q / {cnt['judge_item_errors']} items"
        md_rows.append([r["label"], *fmt, str(cnt["judged_prompts"]), errs, notes_cell(run)])
        csv_rows.append([r["label"]] + [x for c in cols for x in (
            _round(cells[c][0]), _round(cells[c][1]), _round(cells[c][2]))]
            + [cnt["judged_prompts"], cnt["judge_question_errors"], cnt["judge_item_errors"],
               cnt.get("data_errors", 0), sum(run.failed_items.values()), notes_cell(run)])
    _csv(out / "accuracy.csv", ["run"] + [f"{c}{s}" for c in cols for s in ("", "_lo", "_hi")]
         + ["prompts", "judge_question_errors", "judge_item_errors", "data_errors", "failed_items", "notes"], csv_rows)
    note = (f"Accuracy (%); in brackets the {int(ci * 100)}% bootstrap CI over prompts ({n_boot} "
            "replicates, resampled within classes). All = mean of the class columns.\n\n") if n_boot else "Accuracy (%).\n\n"
    md = note + _md(head, md_rows) + notes_legend(runs) + choice_rule_note(runs)
    _write_text(out / "accuracy.md", md)
    return md


CHOICE_RULES = {
    "first_character": "the official I-HallA rule (the reply's first character is the chosen letter)",
    "labelled": "ours (exactly one letter or a labelled option; anything else is a judge error)",
    "schema": "a schema constraining the reply to one option letter",
}


def choice_rule_note(runs: Sequence[RunResults]) -> str:
    """Which rule read the multiple-choice replies of each run (from its verdicts), or ""."""
    lines = []
    for run in runs:
        rules = sorted({str(v.get("rule")) for r in run.judge_rows.values()
                        for v in (r.verdicts if isinstance(r.verdicts, list) else [])
                        if isinstance(v, dict) and v.get("rule")})
        if rules:
            lines.append(f"- `{run.label}`: multiple-choice replies read by "
                         + "; ".join(CHOICE_RULES.get(x, x) for x in rules))
    return ("\nMultiple-choice scoring:\n" + "\n".join(lines) + "\n") if lines else ""


def write_differences(runs: Sequence[RunResults], baseline: RunResults, out: Path, n_boot: int, ci: float, seed: int) -> str:
    classes = columns_for(runs)
    cols = classes + list(CONCEPTS) + ["All"]
    md_rows, csv_rows = [], []
    for run in runs:
        if run is baseline:
            continue
        d = paired_difference(baseline.prompts, run.prompts, classes, n_boot=max(n_boot, 1), ci=ci, seed=seed)
        md_rows.append([f"{run.label} − {baseline.label}"] + [
            f"{_signed(d[c][0])} ({_signed(d[c][1])}, {_signed(d[c][2])})" for c in cols]
            + [" ".join(dict.fromkeys(run_notes(run) + run_notes(baseline)))])
        csv_rows.append([run.label, baseline.label] + [x for c in cols for x in map(_round, d[c])])
    _csv(out / "differences.csv", ["run", "baseline"] + [f"{c}{s}" for c in cols for s in ("", "_lo", "_hi")], csv_rows)
    md = (f"Differences in accuracy points, paired on prompt ids scored in both runs, with "
          f"{int(ci * 100)}% bootstrap CI.\n\n" + _md(["run"] + [CLASS_ABBREV.get(c, c) for c in cols] + ["notes"], md_rows)
          + notes_legend(runs))
    _write_text(out / "differences.md", md)
    return md


def write_cost(runs: Sequence[RunResults], out: Path) -> str:
    parts, csv_rows = [], []
    for run in runs:
        means = stage_means(run)
        if not means:
            continue
        order = stage_names()  # the agent's stages in loop order (agent/registry.py)
        stages = [s for s in order if s in means] + sorted(s for s in means if s not in order)
        rows = []
        for key, name in COST_METRICS:
            if not any(key in means[s] for s in stages):
                continue  # not recorded (an older run, or a server that does not report it)
            rows.append([name] + [_num(means[s].get(key, 0.0), 2 if key == "seconds" else 1) for s in stages])
            csv_rows += [[run.label, s, key, round(means[s].get(key, 0.0), 4)] for s in stages]
        marks = notes_cell(run)
        est = " Token counts are estimates (word counts of a stand-in backbone)." if SIMULATED in run.labels else ""
        parts.append(f"**{run.label}**{' ' + marks if marks else ''} (mean per prompt over items whose agent "
                     f"phase did not fail).{est}\n\n" + _md(["metric"] + stages, rows))
        from orig_local.evaluation.costmeasure import versus_measured

        versus = versus_measured(run.meta, means)
        if versus:
            parts.append(versus)
    _csv(out / "cost.csv", ["run", "stage", "metric", "mean_per_prompt"], csv_rows)
    md = ("Per-stage cost (Table 6 layout).\n\n" + ("\n".join(parts) if parts else "No agent stage totals recorded.\n")
          + notes_legend(runs))
    _write_text(out / "cost.md", md)
    return md


def _retrieves(run: RunResults) -> bool:
    """Whether the run's condition retrieves (unknown condition: assume it does)."""
    from orig_local.conditions import CONDITION_NAMES, condition

    name = run.meta.get("condition")
    return name not in CONDITION_NAMES or condition(name).retrieves


def write_retrieval(runs: Sequence[RunResults], out: Path) -> str:
    keys = ["iterations", "retrieval_acc", "prompt_words", "references", "text_searches", "image_searches",
            "extension_in_tokens", "extension_out_tokens", "generation_acc"]
    head = ["run", "Iters", "R. Acc", "prompt words", "images", "text searches", "image searches",
            "ext. in tokens", "ext. out tokens", "G. Acc", "notes"]
    md_rows, csv_rows = [], []
    for run in runs:
        s = retrieval_summary(run)
        cells = [_pct(s[k]) if k.endswith("_acc") else _num(s[k]) for k in keys]
        if not _retrieves(run):  # nothing retrieved: a retrieval accuracy would be a made-up number
            cells[keys.index("retrieval_acc")] = "n/a"
            s["retrieval_acc"] = math.nan
        md_rows.append([run.label] + cells + [notes_cell(run)])
        csv_rows.append([run.label] + [None if math.isnan(s[k]) else round(s[k], 4) for k in keys])
    _csv(out / "retrieval.csv", ["run"] + keys, csv_rows)
    md = ("Retrieval and prompt statistics (Tables 4/7 layout; means per prompt).\n\n" + _md(head, md_rows)
          + notes_legend(runs))
    _write_text(out / "retrieval.md", md)
    return md


def write_status(runs: Sequence[RunResults], out: Path) -> str:
    """What happened in each run: items ok/degraded/failed per phase, stop reasons, judge
    errors, missing verdicts, data errors."""
    head = ["run", "agent ok/degr./failed", "stop reasons", "generate ok/failed", "judge ok/degr./failed",
            "judge errors (questions / whole items)", "missing verdicts", "data errors", "notes"]
    md_rows, csv_rows = [], []
    for run in runs:
        st = run.status
        tri = lambda ph, st=st: "/".join(str(st.get(ph, {}).get(k, 0)) for k in ("ok", "degraded", "failed"))  # noqa: E731
        gen = st.get("generate", {})
        stops = ", ".join(f"{k} {v}" for k, v in sorted(run.stop_reasons.items(), key=lambda kv: -kv[1])) or "–"
        c = run.counts
        q_err = (f"{c['judge_question_errors']} questions in {c.get('judge_items_with_question_errors', 0)} "
                 f"items / {c['judge_item_errors']} items")
        md_rows.append([run.label, tri("agent"), stops, f"{gen.get('ok', 0) + gen.get('degraded', 0)}/{gen.get('failed', 0)}",
                        tri("judge"), q_err, str(c.get("missing_verdicts", 0)), str(c.get("data_errors", 0)),
                        notes_cell(run)])
        csv_rows.append([run.label] + [st.get(ph, {}).get(k, 0) for ph in ("agent", "generate", "judge")
                                       for k in ("ok", "degraded", "failed")]
                        + [json_dumps(run.stop_reasons), c["judge_question_errors"],
                           c.get("judge_items_with_question_errors", 0), c["judge_item_errors"],
                           c.get("missing_verdicts", 0), c.get("data_errors", 0), notes_cell(run)])
    _csv(out / "status.csv", ["run"] + [f"{ph}_{k}" for ph in ("agent", "generate", "judge")
                                        for k in ("ok", "degraded", "failed")]
         + ["stop_reasons", "judge_question_errors", "judge_items_with_question_errors", "judge_item_errors",
            "missing_verdicts", "data_errors", "notes"], csv_rows)
    md = "What happened in each run (items per phase: ok / degraded / failed).\n\n" + _md(head, md_rows) + notes_legend(runs)
    warn = [f"- `{r.label}`: {w}" for r in runs for w in r.warnings]
    if warn:
        md += "\nWarnings:\n\n" + "\n".join(warn) + "\n"
    _write_text(out / "status.md", md)
    return md


def write_data_errors(runs: Sequence[RunResults], out: Path) -> str | None:
    """data_errors.md: every row left out of the scores, and why (None when there are none)."""
    lines = []
    for run in runs:
        for issue in run.data_errors:
            lines.append(f"| {run.label} | {issue.phase} | {issue.item or '(no id)'} | {issue.message} |")
    path, json_path = out / "data_errors.md", out / "data_errors.json"
    if not lines:
        for stale in (path, json_path):  # from an earlier report of the same folder
            if stale.exists():
                stale.unlink()
        return None
    _write_text(json_path, json_dumps([{"run": r.label, "phase": i.phase, "item": i.item, "problem": i.message}
                                       for r in runs for i in r.data_errors]) + "\n")
    md = ("Rows that could not be scored and were left out of every table (nothing was guessed).\n\n"
          "| run | phase | item | problem |\n|---|---|---|---|\n" + "\n".join(lines) + "\n")
    _write_text(path, md)
    return md


# Provenance fields every report prints (missing ones as "unknown"): (title, candidate keys).
