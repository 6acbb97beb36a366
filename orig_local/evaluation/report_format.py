"""Formatting shared by every part of a report: numbers, Markdown and CSV tables, report files,
and the notes column (†, ‡, SIMULATED, TINY) with its footnotes."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path

from orig_local.evaluation.phases.common import naming_disk_errors
from orig_local.evaluation.results import RunResults
from orig_local.evaluation.scoring import table_classes
from orig_local.labels import SIMULATED, TINY


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


def _round(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(100 * v, 2)


def _signed(v: float) -> str:
    return "–" if math.isnan(v) else f"{100 * v:+.1f}"


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


def json_dumps(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


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
