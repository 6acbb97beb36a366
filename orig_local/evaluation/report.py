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
  status.md / .csv       per run: items ok/degraded/failed per phase, stop reasons, judge errors
                         (questions and items), missing verdicts, data errors
  data_errors.md         every row that could not be scored, and why (when there are any)
  gallery/<label>.html   per prompt: image, references, final prompt, each question's verdict
  media/<label>/...      copies of the images the galleries show (the folder is self-contained:
                         copy it anywhere and every image still shows)
  report.md              all tables in one page, stand-in labels, provenance

Every table has a ``notes`` column: † = the run has failed items (its scores cover only what
ran), ‡ = rows with data errors were left out, SIMULATED / TINY = stand-in models (see
:mod:`orig_local.labels`). Runs judged by different judges (model or revision) are refused side
by side unless ``allow_mixed_judges``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

from orig_local.errors import UsageError
from orig_local.evaluation.gallery import GALLERY_PAGE, MEDIA_MODES, write_gallery
from orig_local.evaluation.items import CLASS_ABBREV, CONCEPTS
from orig_local.evaluation.phases.common import naming_disk_errors
from orig_local.evaluation.results import RunResults, load_run, retrieval_summary, stage_means
from orig_local.evaluation.scoring import ErrorPolicy, bootstrap_ci, paired_difference, table_classes, table_row
from orig_local.labels import SIMULATED, TINY

STAGE_ORDER = ["bootstrap", "planning", "retrieval", "accumulation", "sufficiency", "refinement",
               "extension", "enhance"]
COST_METRICS = [("calls", "calls"), ("prompt_tokens", "input tokens"),
                ("cacheable_tokens", "of which cacheable (est.)"),
                ("cache_hit_tokens", "of which served from the prefix cache (server)"),
                ("completion_tokens", "output tokens"),
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
    with naming_disk_errors(path), path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _write_text(path: Path, text: str) -> None:
    """A report file; a full disk is a DiskWriteError naming it (one line, no traceback)."""
    with naming_disk_errors(path):
        path.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- notes (footnotes)

FAILED_MARK, DATA_MARK = "†", "‡"


def run_notes(run: RunResults) -> list[str]:
    """The short marks of a run's notes column (explained by :func:`notes_legend`)."""
    marks = []
    if run.failed_items:
        marks.append(FAILED_MARK)
    if run.data_errors:
        marks.append(DATA_MARK)
    if SIMULATED in run.labels:
        marks.append("SIMULATED")
    if TINY in run.labels:
        marks.append("TINY")
    return marks


def notes_cell(run: RunResults) -> str:
    return " ".join(run_notes(run))


def notes_legend(runs: Sequence[RunResults]) -> str:
    """Footnotes for the marks used by ``runs`` (empty when none)."""
    lines = []
    for run in runs:
        if run.failed_items:
            what = ", ".join(f"{ph} {n}" for ph, n in run.failed_items.items())
            lines.append(f"{FAILED_MARK} `{run.label}` has failed items ({what}): they did not run as specified "
                         "and are left out of its scores, which cover only the items that ran; see Status, "
                         "rerun with `orig eval ... --retry-errors`.")
        if run.data_errors:
            lines.append(f"{DATA_MARK} `{run.label}`: {len(run.data_errors)} data error(s); those rows are left "
                         "out of every score (see data_errors.md).")
    used = {m for r in runs for m in run_notes(r)}
    if "SIMULATED" in used:
        lines.append(f"SIMULATED: {SIMULATED}.")
    if "TINY" in used:
        lines.append(f"TINY: {TINY}.")
    return ("\n" + "\n".join(f"- {ln}" for ln in lines) + "\n") if lines else ""


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


def write_accuracy(runs, out: Path, n_boot: int, ci: float, seed: int, table=None) -> str:
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


def choice_rule_note(runs) -> str:
    """Which rule read the multiple-choice replies of each run (from its verdicts), or ""."""
    lines = []
    for run in runs:
        rules = sorted({str(v.get("rule")) for r in run.judge_rows.values()
                        for v in (r.get("verdicts") if isinstance(r.get("verdicts"), list) else [])
                        if isinstance(v, dict) and v.get("rule")})
        if rules:
            lines.append(f"- `{run.label}`: multiple-choice replies read by "
                         + "; ".join(CHOICE_RULES.get(x, x) for x in rules))
    return ("\nMultiple-choice scoring:\n" + "\n".join(lines) + "\n") if lines else ""


def _number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


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
            f"{_signed(d[c][0])} ({_signed(d[c][1])}, {_signed(d[c][2])})" for c in cols]
            + [" ".join(dict.fromkeys(run_notes(run) + run_notes(baseline)))])
        csv_rows.append([run.label, baseline.label] + [x for c in cols for x in map(_round, d[c])])
    _csv(out / "differences.csv", ["run", "baseline"] + [f"{c}{s}" for c in cols for s in ("", "_lo", "_hi")], csv_rows)
    md = (f"Differences in accuracy points, paired on prompt ids scored in both runs, with "
          f"{int(ci * 100)}% bootstrap CI.\n\n" + _md(["run"] + [CLASS_ABBREV.get(c, c) for c in cols] + ["notes"], md_rows)
          + notes_legend(runs))
    _write_text(out / "differences.md", md)
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


def _retrieves(run) -> bool:
    """Whether the run's condition retrieves (unknown condition: assume it does)."""
    from orig_local.conditions import CONDITION_NAMES, condition

    name = run.meta.get("condition")
    return name not in CONDITION_NAMES or condition(name).retrieves


def write_retrieval(runs, out: Path) -> str:
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


def write_status(runs, out: Path) -> str:
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


def json_dumps(value) -> str:
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def write_data_errors(runs, out: Path) -> str | None:
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
PROVENANCE_FIELDS = [
    ("orig_local", ("code.orig_local", "orig_local_version", "orig_local", "version")),
    ("git commit", ("code.git_commit", "git_commit", "commit", "git.commit")),
    ("git dirty", ("code.git_dirty", "git_dirty", "dirty", "git.dirty")),
    ("python", ("libraries.python", "python", "python_version")),
    ("libraries", ("libraries", "packages", "versions")),
    ("host", ("host.host", "host", "hostname")),
    ("GPU", ("host.gpus", "gpus", "gpu", "accelerator")),
    ("started", ("started_at", "started", "timestamps.started")),
    ("finished", ("ended_at", "finished_at", "finished", "ended", "timestamps.finished")),
    ("config hash", ("config_sha256", "config_hash")),
]


def _lookup(data: dict, key: str):
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _fmt(value) -> str:
    if value is None or value == "" or value == {} or value == []:
        return "unknown"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_fmt(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) for v in value)
    return str(value)


def provenance_block(run: RunResults) -> str:
    """What produced a run, from run.json's ``provenance`` (read defensively: whatever is
    missing shows as "unknown")."""
    prov = run.provenance
    lines = [f"**{run.label}** ({run.dir})", ""]
    for title, keys in PROVENANCE_FIELDS:
        value = next((v for v in (_lookup(prov, k) for k in keys) if v not in (None, "")), None)
        lines.append(f"- {title}: {_fmt(value)}")
    models = found if isinstance(found := prov.get("models"), dict) else {}
    for role in ("backbone", "generator", "judge", "embedder"):
        m = models.get(role)
        preset_name = run.meta.get(role) if role != "embedder" else None
        if isinstance(m, dict):
            served = m.get("served_name") or m.get("served_model_name") or (
                m.get("model") if m.get("backend") == "openai" else None)
            fields = [("preset", m.get("preset") or preset_name), ("hub id", m.get("hub_id") or m.get("hf_id")),
                      ("revision", m.get("revision")), ("served as", served)]
            if m.get("backend"):
                fields.insert(0, ("backend", m["backend"]))
            if m.get("precision"):
                fields.append(("precision", m["precision"]))
            lines.append(f"- {role}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in fields))
        elif preset_name:
            lines.append(f"- {role}: preset {preset_name}, hub id unknown, revision unknown")
    lines.append(f"- judged by: {', '.join(run.judges) or 'unknown'}")
    if not prov:
        lines.append("- (run.json records no provenance: a run written before provenance was recorded)")
    return "\n".join(lines) + "\n"


def labels_banner(runs: Sequence[RunResults]) -> str:
    """Stand-in labels, unmissable at the top of report.md."""
    out = []
    for label in (SIMULATED, TINY):
        which = [r.label for r in runs if label in r.labels]
        if which:
            out.append(f"> **{label.upper() if label == SIMULATED else label.capitalize()}** "
                       f"(runs: {', '.join(f'`{w}`' for w in which)})\n")
    return "\n".join(out)


# --------------------------------------------------------------------------- figures


def figure_classes(runs, path: Path, n_boot: int, ci: float, seed: int, table=None) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cols, rows = table or accuracy_table(runs, n_boot, ci, seed)
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
        marks = notes_cell(runs[k])
        pos = x + (k - (len(rows) - 1) / 2) * width
        have = ~np.isnan(vals)  # no data is not 0 %: no bar, and said so
        colour = f"C{k % 10}"  # explicit: a run without any bar still gets its own legend colour
        label = r["label"] + (f" {marks}" if marks else "")
        if have.any():
            ax.bar(pos[have], vals[have], width, yerr=None if err is None else err[:, have], capsize=2,
                   color=colour, label=label)
        else:  # one zero-height bar: the run keeps its legend entry and colour
            ax.bar(pos[:1], [0.0], width, color=colour, label=label)
        for xp in pos[~have]:
            ax.text(xp, 1, "no data", rotation=90, ha="center", va="bottom", fontsize=7, color=colour)
    ax.set_xticks(x, [CLASS_ABBREV.get(c, c) for c in cols])
    ax.set_xlim(-0.5, len(cols) - 0.5)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    return _save_figure(fig, ax, path)


def figure_backbone_scale(runs, path: Path, n_boot: int, ci: float, seed: int, table=None) -> Path | None:
    """All vs backbone size (7B/32B/72B), one line per (condition, generator). ``table``: the
    accuracy table, whose All interval is reused for runs scored over the same classes."""
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
        lo, hi = _all_interval(r, runs, table, n_boot, ci, seed) if n_boot else (point, point)
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


def _all_interval(run, runs, table, n_boot: int, ci: float, seed: int) -> tuple[float, float]:
    """The All interval of ``run`` over its own classes: the accuracy table's when that table
    used the same classes (same bootstrap, same numbers), else a bootstrap of its own."""
    if table is not None and table_classes(run.prompts) == table[0][: len(table[0]) - len(CONCEPTS) - 1]:
        cells = table[1][next(k for k, r in enumerate(runs) if r is run)]["cells"]["All"]
        return (cells[1], cells[2])
    return bootstrap_ci(run.prompts, n_boot=n_boot, ci=ci, seed=seed)["All"]


def _save_figure(fig, ax, path: Path) -> Path:
    """The finishing touches both figures share: legend, no top/right frame, saved, closed.
    The legend sits below the axes, so it can never hide a bar or a point."""
    import matplotlib.pyplot as plt

    handles, _ = ax.get_legend_handles_labels()
    legend = ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                       ncol=min(max(len(handles), 1), 3))
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_extra_artists=[legend], bbox_inches="tight")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- all of it


def build_report(run_dirs: Sequence[str | Path], out: str | Path | None = None, *, judge_name: str | None = None,
                 baseline: str | Path | None = None, n_boot: int = 1000, ci: float = 0.95, seed: int = 0,
                 errors: ErrorPolicy = "exclude", gallery: bool = True, allow_mixed_judges: bool = False,
                 data: str | Path | None = None, benchmark: str | None = None,
                 ids: Sequence[str] | None = None, classes: Sequence[str] | None = None,
                 media_mode: str = "copy", page_size: int = GALLERY_PAGE) -> dict[str, Path]:
    """Write every table, figure and gallery for ``run_dirs`` into ``out`` (default
    ``<run>/report`` for one run). ``judge_name`` may list several judges ("default,qwen7b")
    to compare them side by side. ``data``/``benchmark``: where the benchmark is (default:
    run.json's), for checking verdicts against its question lists. ``ids``/``classes``
    restrict the tables (unknown ones are an error). ``media_mode``/``page_size``: how galleries
    show images and how many prompts a gallery page holds (:func:`write_gallery`). Returns the
    written paths by name.

    Memory: with several runs, each run's rows are dropped once its scores and table numbers
    are computed (:meth:`RunResults.compact`), and galleries reload one run at a time, so a
    study's report does not grow with the number of runs.

    Nothing is written (no folder created) when a run folder is missing or unreadable, or
    when runs judged by different judges would be compared without ``allow_mixed_judges``.
    A full disk while writing is one :class:`DiskWriteError` naming the file.

    Example (the bundled 3-item mini benchmark with tiny random-weight models: the numbers
    test the machinery only, and the report says so)::

        >>> import tempfile
        >>> from pathlib import Path
        >>> from orig_local import load_config
        >>> from orig_local.evaluation import build_report, load_benchmark, run_phases
        >>> from orig_local.evaluation.data import mini_path
        >>> config = load_config(["offline"], ["agent.condition=direct", "progress=false"])
        >>> run = Path(tempfile.mkdtemp()) / "direct"
        >>> summaries = run_phases(config, run, load_benchmark("jsonl", mini_path()))
        >>> [(s.phase, s.failed) for s in summaries]
        [('agent', 0), ('generate', 0), ('judge', 0)]
        >>> paths = build_report([run])
        >>> "tiny random-weight models" in paths["report"].read_text()
        True
    """
    if not run_dirs:
        raise UsageError("no run folder given", hint="orig report RUN [RUN ...]")
    if media_mode not in MEDIA_MODES:
        raise UsageError(f"--media {media_mode!r}: use one of {', '.join(MEDIA_MODES)}")
    # Several judges (comma-separated names, "default" = judge.jsonl): one row per run x judge.
    names = [None if n in ("", "default") else n for n in judge_name.split(",")] if judge_name else [None]
    loader = _RunLoader(errors, data, benchmark, ids, classes, compact=len(run_dirs) * len(names) > 1)
    runs = [loader.load(d, name, f" [{name or 'default'}]" if len(names) > 1 else "")
            for d in run_dirs for name in names]
    loader.check_selection()
    # One run whose rows come from several judges is warned about in its Status; several runs
    # judged differently must not stand side by side unless asked for.
    mixed = _mixed_judges(runs) if len(names) == 1 and len(runs) > 1 else None
    if mixed and not allow_mixed_judges:
        raise UsageError(f"runs were judged by different judges ({mixed}); their scores are not comparable",
                         hint="report them separately, rejudge with one judge, or pass --allow-mixed-judges")
    if out is None:
        if len(run_dirs) != 1:
            raise UsageError("several runs: pass --out DIR for the comparison report")
        out = runs[0].dir / "report"
    out = Path(out)
    base = runs[0]
    if baseline is not None and len(runs) > 1:  # before anything is written
        base = next((r for r in runs if r.dir.resolve() == Path(baseline).resolve()), None)  # type: ignore[assignment]
        if base is None:
            raise UsageError(f"--baseline {baseline} is not one of the runs",
                             hint="runs: " + ", ".join(str(r.dir) for r in runs))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the report folder {out}: {exc.strerror or exc}",
                         hint="pass --out a folder you can write") from exc
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):  # same folder name in different places
        for k, r in enumerate(runs):
            r.label = f"{r.label}#{k + 1}"
    with naming_disk_errors(out):
        written = _write_tables(runs, base, out, mixed, n_boot, ci, seed)
        if gallery:
            written.update(_write_galleries(runs, loader, out, media_mode, page_size))
            written["sections"].append("Galleries: " + ", ".join(
                f"[{r.label}](gallery/{_slug(r.label)}.html)" for r in runs) + "\n")
        sections = written.pop("sections") + ["## Provenance\n"] + [provenance_block(r) for r in runs]
        _write_text(out / "report.md", "\n".join(sections))
    written["report"] = out / "report.md"
    return written


def _write_galleries(runs: list[RunResults], loader: _RunLoader, out: Path, media_mode: str,
                     page_size: int) -> dict[str, Path]:
    """One gallery per run; a compacted run is reloaded for it (one run's rows at a time)."""
    written = {}
    for r in runs:
        full = r if not r.compacted else loader.reload(r)
        written[f"gallery:{r.label}"] = write_gallery(full, out / "gallery" / f"{_slug(r.label)}.html",
                                                      out / "media" / _slug(r.label), media_mode=media_mode,
                                                      page_size=page_size)
    return written


def _write_tables(runs: list[RunResults], base: RunResults, out: Path, mixed: str | None,
                  n_boot: int, ci: float, seed: int) -> dict:
    """Every table and figure; ``written["sections"]`` holds report.md's text so far."""
    written: dict = {}
    sections = ["# FIG-Eval report\n"]
    banner = labels_banner(runs)
    if banner:
        sections.append(banner)
    sections.append("Runs: " + ", ".join(f"`{r.label}` ({r.dir})" for r in runs) + "\n")
    if mixed:
        sections.append(f"> **Mixed judges** (allowed with --allow-mixed-judges): {mixed}. "
                        "Differences between these runs include the judges' differences.\n")
    sections += ["## Status\n", write_status(runs, out)]
    written["status"] = out / "status.md"
    errors_md = write_data_errors(runs, out)
    if errors_md:
        sections += ["## Data errors\n", errors_md]
        written["data_errors"] = out / "data_errors.md"
    table = accuracy_table(runs, n_boot, ci, seed)  # one bootstrap: accuracy.md, figures and results.json
    sections += ["## Accuracy\n", write_accuracy(runs, out, n_boot, ci, seed, table=table)]
    written["accuracy"] = out / "accuracy.md"
    if len(runs) > 1:
        sections += ["## Differences\n", write_differences(runs, base, out, n_boot, ci, seed)]
        written["differences"] = out / "differences.md"
    from orig_local.evaluation.results_file import write_results

    written.update(write_results(runs, out, table, n_boot=n_boot, ci=ci, seed=seed,
                                 baseline=base if len(runs) > 1 else None, classes=columns_for(runs)))
    sections += ["## Retrieval\n", write_retrieval(runs, out), "## Cost\n", write_cost(runs, out)]
    written["retrieval"], written["cost"] = out / "retrieval.md", out / "cost.md"
    fig = figure_classes(runs, out / "figures" / "classes.png", n_boot, ci, seed, table=table)
    if fig:
        written["fig_classes"] = fig
        sections.append("![per-class accuracy](figures/classes.png)\n")
    fig = figure_backbone_scale(runs, out / "figures" / "backbone_scale.png", n_boot, ci, seed, table=table)
    if fig:
        written["fig_backbone"] = fig
        sections.append("![backbone scale](figures/backbone_scale.png)\n")
    written["sections"] = sections
    return written


class _RunLoader:
    """Loads runs for one report: the benchmark once per (data, benchmark, options) however many
    runs use it, the ``ids``/``classes`` selection applied per run (checked over all runs by
    :meth:`check_selection`), and, with ``compact``, each run's rows dropped once scored."""

    def __init__(self, errors: ErrorPolicy, data, benchmark, ids, classes, compact: bool):
        from orig_local.evaluation.selection import normalize

        self.errors, self.data, self.benchmark, self.compact = errors, data, benchmark, compact
        self.ids, self.classes = ids, classes
        self.wanted = [normalize(c) for c in classes] if classes else None
        self.known: dict[str, str] = {}  # every id the runs hold -> its class (for the check)
        self.items_cache: dict[tuple, tuple] = {}
        self.labels: dict[int, str] = {}  # id(run) -> label suffix

    def _items(self, d, name: str | None):
        from orig_local.evaluation.results import load_benchmark_items, loader_options, read_run_meta
        from orig_local.evaluation.rundir import data_path

        meta = read_run_meta(d) if Path(d).is_dir() else {}
        bench_name = str(self.benchmark or meta.get("benchmark") or "figeval")
        key = (str(self.data or data_path(meta)), bench_name,
               repr(sorted(loader_options(d, bench_name, name).items())))
        if key not in self.items_cache:  # one load per benchmark (and options), however many runs use it
            self.items_cache[key] = (load_benchmark_items(meta, self.data, self.benchmark, d, name)
                                     if Path(d).is_dir() else (None, None))
        return self.items_cache[key]

    def load(self, d, name: str | None, suffix: str = "", compact: bool | None = None) -> RunResults:
        items, why = self._items(d, name)
        run = load_run(d, name, self.errors, items=items, check_benchmark=False)
        if items is None and why:
            run.warnings.insert(0, f"benchmark not checked: {why}; verdicts were validated without the "
                                   "question list (pass --data to check them)")
        elif why:
            run.warnings.insert(0, why)
        run.label += suffix
        if self.ids or self.classes:
            _restrict_run(run, self.ids, self.wanted, self.known)
        return run.compact() if (self.compact if compact is None else compact) else run

    def reload(self, run: RunResults) -> RunResults:
        """``run`` again with its rows (for its gallery), under its report label."""
        full = self.load(run.dir, run.judge_name, compact=False)
        full.label = run.label
        return full

    def check_selection(self) -> None:
        """Unknown ids/classes (over every run) are an error before anything is written."""
        if self.ids or self.classes:
            from types import SimpleNamespace

            from orig_local.evaluation.selection import check_selection

            check_selection([SimpleNamespace(id=i, category=c) for i, c in self.known.items()], self.ids, self.classes)


def _mixed_judges(runs: Sequence[RunResults]) -> str | None:
    """A description of the judges when the runs (or the rows of one run) were judged by more
    than one judge model/revision; None when they agree."""
    judged = [r for r in runs if r.judges]
    idents = {j for r in judged for j in r.judges}
    if len(idents) <= 1:
        return None
    return "; ".join(f"{r.label}: {', '.join(r.judges)}" for r in judged)


def _restrict(runs: Sequence[RunResults], ids, classes) -> None:
    """Keep only the selected items in every run's scores (unknown ids/classes: an error that
    lists the valid ones)."""
    from orig_local.evaluation.selection import normalize

    known: dict[str, str] = {}
    for r in runs:
        _known(r, known)
    loader = _RunLoader("exclude", None, None, ids, classes, compact=False)
    loader.known = known
    loader.check_selection()
    wanted = [normalize(c) for c in classes] if classes else None
    for r in runs:
        _restrict_run(r, ids, wanted, known)


def _known(run: RunResults, known: dict[str, str]) -> dict[str, str]:
    from orig_local.evaluation.selection import normalize

    for p in run.prompts:
        known[p.id] = p.category
    for rid, row in run.judge_rows.items():
        known.setdefault(rid, normalize(str(row.get("category", ""))))
    return known


def _restrict_run(r: RunResults, ids, wanted_classes, known: dict[str, str]) -> None:
    """Keep only the selected items of one run (``wanted_classes`` normalised); the ids and
    classes it holds are added to ``known``."""
    from collections import Counter

    from orig_local.evaluation.results import _status_counts
    from orig_local.evaluation.selection import normalize

    _known(r, known)

    def kept(rid: str, row: dict) -> bool:
        category = known.get(rid) or str(row.get("category", ""))
        return (not ids or rid in ids) and (not wanted_classes or normalize(category) in wanted_classes)

    r.prompts = [p for p in r.prompts if (not ids or p.id in ids)
                 and (not wanted_classes or normalize(p.category) in wanted_classes)]
    r.counts["judged_prompts"] = len(r.prompts)
    # Every table of the report covers the same selection: retrieval accuracy, cost, stop
    # reasons and failure counts over all items beside accuracy over a few would mislead.
    for attr in ("agent_rows", "gen_rows", "judge_rows", "retrieval_rows"):
        setattr(r, attr, {rid: row for rid, row in getattr(r, attr).items() if kept(rid, row)})
    for phase, rows in (("agent", r.agent_rows), ("generate", r.gen_rows), ("retrieval", r.retrieval_rows)):
        if phase in r.status:
            r.status[phase] = _status_counts(rows, phase)
    judged = Counter(st for rid, st in r.judge_status_of.items() if rid in r.judge_rows)
    r.status["judge"] = {k: judged.get(k, 0) for k in ("ok", "degraded", "failed")}
    r.stop_reasons = dict(Counter(str(x.get("stop_reason")) for x in r.agent_rows.values() if x.get("stop_reason")))
    r.counts["agent_rows"] = len(r.agent_rows)
    r.counts["agent_errors"] = r.status["agent"]["failed"]
    r.counts["generate_errors"] = r.status["generate"]["failed"]
    r.counts["images"] = sum(bool(x.get("image")) for x in r.gen_rows.values())
    r.data_errors = [e for e in r.data_errors if e.item is None or kept(e.item, {})]
    r.counts["data_errors"] = len(r.data_errors)


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


__all__ = ["accuracy_table", "build_report", "write_gallery"]
