"""WISE scores as their authors compute them, from a run's judge rows.

* ``wiscore`` - **WiScore** (legacy WISE, GPT-4o judge): per image (0.7·consistency +
  0.2·realism + 0.1·aesthetic quality) / 2 from three 0-2 grades; a category is the mean over
  its prompts; Overall = 0.4·Cultural + 0.167·Time + 0.133·Space + 0.1·Biology + 0.1·Physics +
  0.1·Chemistry (WISE_legacy/README.md; ``wise_culture.py`` / ``wise_science.py`` divide by 2,
  ``wise_space-time.py`` divides the category mean by 2 - the same number).
* ``verified`` - **WISE_Verified** score: a binary 0/1 per image; category means; Overall =
  0.40·Culture + 0.12·(Time + Space + Biology + Physics + Chemistry) (README and leadboard.md
  of the Verified release; its BAGEL (w/ CoT) row gives 0.628).
* ``statement`` - **statement accuracy (ours)**: this project's earlier simplification, one
  true/false statement per prompt, categories averaged unweighted. Not a WISE number.

Failures never look like scores: an item whose judge failed (or that has no image) is
counted in ``errors`` and either left out (``errors="exclude"``) or scored 0
(``errors="false"``); Overall needs every item scored (no errors, no missing row) and all six
categories, and the table says how many items
were scored. The authors' calculators refuse an incomplete result file outright.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from orig_local.errors import DataError
from orig_local.evaluation.loaders.wise import CATEGORIES
from orig_local.evaluation.rows import JudgeRow
from orig_local.evaluation.wise_judge import wiscore

Score = Literal["wiscore", "verified", "statement"]
SCORES: tuple[str, ...] = ("wiscore", "verified", "statement")
NAMES = {"wiscore": "WiScore", "verified": "WISE_Verified", "statement": "statement accuracy (ours)"}
COLUMNS = {"cultural": "Cultural", "time": "Time", "space": "Space", "biology": "Biology",
           "physics": "Physics", "chemistry": "Chemistry"}
WEIGHTS: dict[str, dict[str, float] | None] = {
    # WISE_legacy README: "Overall WiScore = 0.4*Cultural + 0.167*Time + 0.133*Space + 0.1*Biology
    # + 0.1*Physics + 0.1*Chemistry" (the share of each category among the 1,000 prompts).
    "wiscore": {"cultural": 0.4, "time": 0.167, "space": 0.133, "biology": 0.1, "physics": 0.1, "chemistry": 0.1},
    # WISE_Verified README / calculate_verified.py: 0.40 culture, 0.12 for each other category.
    "verified": {"cultural": 0.40, "time": 0.12, "space": 0.12, "biology": 0.12, "physics": 0.12, "chemistry": 0.12},
    "statement": None,  # ours: unweighted mean of the six categories
}


@dataclass
class WiseSummary:
    """One run's WISE score: per-category means, Overall, and what was (not) scored."""

    score: str
    categories: dict[str, float]
    scored: dict[str, int]
    items: int = 0  # judge rows seen
    errors: int = 0  # items whose score could not be read (judge error, no image, not judged)
    error_ids: list[str] = field(default_factory=list)
    overall: float = math.nan
    missing: int = 0  # benchmark items without a judge row (when the benchmark's size is known)

    @property
    def name(self) -> str:
        return NAMES[self.score]

    @property
    def complete(self) -> bool:
        return self.errors == 0 and not math.isnan(self.overall)


def _as_row(row: JudgeRow | dict) -> JudgeRow:
    """A judge row as its typed record (callers may pass the stored dicts; ``_duplicate`` kept)."""
    if isinstance(row, JudgeRow):
        return row
    typed = JudgeRow.model_validate(row)
    typed._duplicate = int(row.get("_duplicate") or 0)
    return typed


def _verdicts(row: JudgeRow) -> list[dict]:
    return [v for v in (row.verdicts if isinstance(row.verdicts, list) else []) if isinstance(v, dict)]


def item_value(row: JudgeRow | dict, score: str) -> float | None:
    """The item's value under ``score`` (0..1), or None when it failed or was not judged so."""
    row = _as_row(row)
    if row.error or row.duplicate:
        return None  # a failed item, or an id with several rows (which one is right is not decided here)
    verdicts = {v.get("qid"): v for v in _verdicts(row)}
    v = verdicts.get(score)
    if v is None or v.get("error"):
        return None
    answer = v.get("answer")
    if score == "wiscore":
        grades = ("consistency", "realism", "aesthetic_quality")
        if not isinstance(answer, dict) or any(
                type(answer.get(k)) is not int or answer[k] not in (0, 1, 2) for k in grades):
            return None  # missing, out of the 0-2 scale, or not a number ("2", true): not a grade
        return wiscore(answer["consistency"], answer["realism"], answer["aesthetic_quality"])
    if score == "verified":
        given = answer.get("score") if isinstance(answer, dict) else None
        return float(given) if type(given) is int and given in (0, 1) else None  # true/"1" are not scores
    return None if v.get("correct") is None else float(bool(v["correct"]))


def overall(categories: dict[str, float], score: str) -> float:
    """Overall from category means: WISE's weights (``wiscore``/``verified``) or the unweighted
    mean (``statement``). NaN unless all six categories have a value."""
    values = [categories.get(c, math.nan) for c in CATEGORIES]
    if any(math.isnan(v) for v in values):
        return math.nan
    weights = WEIGHTS[score]
    if weights is None:
        return sum(values) / len(values)
    return sum(weights[c] * categories[c] for c in CATEGORIES)


def authors_category(item_id: str, category: str, release: str | None) -> str:
    """The category WISE's own calculators count an item in: they go by ``prompt_id`` range
    (Verified: 1-400 culture, then blocks of 120; legacy: 1-400 culture, 701-800 biology,
    801-900 physics, 901-1000 chemistry, and time/space by subcategory in 401-700), not by the
    ``Category`` string. Where the release or a numeric id is unknown, the row's category."""
    from orig_local.evaluation.loaders.wise import _category_by_id

    pid = str(item_id).removeprefix("wise_")
    if release not in ("legacy", "verified") or not pid.isdigit():
        return category
    n = int(pid)
    if release == "legacy" and 400 < n <= 700:
        return category  # time or space: decided by the subcategory, which the Category mirrors
    return _category_by_id(n, release, None) or category  # type: ignore[arg-type]


def summarize(rows: Iterable[JudgeRow | dict], score: str, errors: str = "exclude", release: str | None = None,
              expected: int | None = None) -> WiseSummary:
    """Score judge rows (``{"id", "category", "verdicts", "error"}``) under ``score``; with the
    data's ``release`` known, items are counted in the category WISE's calculators give them
    (:func:`authors_category`) for WiScore and WISE_Verified. Overall only when every item is
    scored: no errors (whatever ``errors`` does to the category means) and, with ``expected``
    (the benchmark's item count), no item without a row."""
    if score not in SCORES:
        raise DataError(f"unknown WISE score {score!r}; choose {', '.join(SCORES)}")
    sums = {c: 0.0 for c in CATEGORIES}
    counts = {c: 0 for c in CATEGORIES}
    out = WiseSummary(score, {}, counts)
    for stored in rows:
        row = _as_row(stored)
        out.items += 1
        cat = row.category
        if cat not in sums:
            raise DataError(f"judge row {row.id} has category {cat!r}, not a WISE category "
                            f"({', '.join(CATEGORIES)}): judged with an older loader? rerun the judge phase")
        if score != "statement":
            cat = authors_category(row.id, cat, release)
        value = item_value(row, score)
        if value is None:
            out.errors += 1
            out.error_ids.append(row.id)
            if errors != "false":
                continue
            value = 0.0
        sums[cat] += value
        counts[cat] += 1
    out.categories = {c: (sums[c] / counts[c] if counts[c] else math.nan) for c in CATEGORIES}
    out.missing = max(0, expected - out.items) if expected else 0
    # The authors' calculators give no Overall when an id is missing or unscored: neither do we
    # (category means stay, with the counts beside them).
    out.overall = math.nan if out.errors or out.missing else overall(out.categories, score)
    return out


def judged_scores(rows: Iterable[JudgeRow | dict]) -> list[str]:
    """Which of the scores the judge produced in these rows (by verdict id)."""
    qids = {v.get("qid") for r in rows for v in _verdicts(_as_row(r))}
    return [s for s in SCORES if s in qids]


def _release(meta: dict) -> str | None:
    """The WISE release recorded in run.json, wherever the run folder stores it."""
    stack = [meta]
    while stack:
        d = stack.pop()
        if d.get("loader") == "wise" and d.get("release"):
            return d["release"]
        stack += [v for v in d.values() if isinstance(v, dict)]
    if meta.get("release"):
        return meta["release"]
    if meta.get("benchmark") == "wise" and meta.get("data"):
        # run.json names the data: the release is in its layout (file names, data_verified/)
        try:
            from orig_local.evaluation.loaders.wise import resolve

            return resolve(meta["data"], meta.get("variant") or "base")[0].release
        except Exception:  # noqa: BLE001 - moved or unreadable: no release known (the default order applies)
            return None
    return None


def is_wise_run(run_dir: str | Path, judge_name: str | None = None) -> bool:
    from orig_local.evaluation.rundir import read_meta, read_phase

    meta = read_meta(Path(run_dir))
    if meta.get("benchmark"):
        return meta["benchmark"] == "wise"
    rows = read_phase(Path(run_dir), "judge", judge_name)
    return bool(rows) and all(str(i).startswith("wise_") for i in rows)


def run_summary(run_dir: str | Path, score: str | None = None, judge_name: str | None = None,
                errors: str = "exclude", ids: Sequence[str] | None = None,
                classes: Sequence[str] | None = None) -> WiseSummary:
    """One run's WISE score. ``score=None``: the release's own (Verified -> ``verified``,
    legacy -> ``wiscore``) when judged, else the first judged of verified, wiscore, statement.
    ``ids`` / ``classes`` (categories or domains, as ``orig eval --classes``) restrict the items;
    Overall then needs all six categories still, so a class selection shows categories only."""
    from orig_local.evaluation.rundir import read_meta

    rows = _select(_judge_rows(Path(run_dir), judge_name), ids, classes)
    judged = judged_scores(rows)
    if score is None:
        own = {"verified": "verified", "legacy": "wiscore"}.get(_release(read_meta(Path(run_dir))) or "")
        order = ([own] if own else []) + ["verified", "wiscore", "statement"]
        score = next((s for s in order if s in judged), "verified")
    elif rows and score not in judged:
        raise DataError(f"{run_dir}: no {NAMES[score]} verdicts (judged: {', '.join(judged) or 'none'}); "
                        f"judge with eval.wise_judge including {score!r} (--set eval.wise_judge=[{score}] "
                        "--phase judge --retry-errors into a new --judge-name)")
    meta = read_meta(Path(run_dir))
    # The whole benchmark's size, when the run recorded it and no selection narrows the table
    expected = None if ids or classes else (meta.get("benchmark_identity") or {}).get("items")
    return summarize(rows, score, errors, release=_release(meta),
                     expected=expected if isinstance(expected, int) else None)


def _select(rows: list[JudgeRow], ids: Sequence[str] | None, classes: Sequence[str] | None) -> list[JudgeRow]:
    if ids:
        wanted_ids = set(ids)
        rows = [r for r in rows if r.id in wanted_ids]
    if classes:
        from orig_local.evaluation.loaders.wise import class_filter

        wanted = class_filter(classes) or set()
        rows = [r for r in rows if r.category in wanted]
    return rows


def _judge_rows(run_dir: Path, judge_name: str | None) -> list[JudgeRow]:
    """One row per id over the main and shard files; an id with several rows is kept once,
    marked duplicate (counted as an error, never "first row wins")."""
    from orig_local.evaluation.run_rows import _by_id, read_all_rows

    rows = [r for r in read_all_rows(run_dir, "judge", judge_name) if isinstance(r, JudgeRow)]
    return list(_by_id(rows, "judge", []).values())


def _cell(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:.4f}"


def format_table(summaries: Sequence[tuple[str, WiseSummary]]) -> str:
    """Markdown: one row per run, the six categories, Overall, scored/total and errors."""
    head = ["Run", "Score", *COLUMNS.values(), "Overall", "Scored", "Errors"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for label, s in summaries:
        scored = sum(s.scored.values())
        lines.append("| " + " | ".join([label, s.name, *(_cell(s.categories[c]) for c in COLUMNS),
                                         _cell(s.overall), f"{scored}/{s.items + s.missing}", str(s.errors)]) + " |")
        if s.errors:
            notes.append(f"- `{label}`: INCOMPLETE - {s.errors} of {s.items} item(s) have no {s.name} "
                         f"(judge error, no image, not judged or duplicate rows): {', '.join(s.error_ids[:10])}"
                         f"{' ...' if len(s.error_ids) > 10 else ''}")
        if s.missing:
            notes.append(f"- `{label}`: INCOMPLETE - {s.missing} benchmark item(s) have no judge row")
        if math.isnan(s.overall):
            why = ("every item scored, as WISE's calculators require" if s.errors or s.missing
                   else "all six categories")
            notes.append(f"- `{label}`: no Overall - WISE's Overall needs {why}")
    formulas = []
    for score in dict.fromkeys(s.score for _, s in summaries):
        weights = WEIGHTS[score]
        formula = (" + ".join(f"{w:g}·{COLUMNS[c]}" for c, w in weights.items()) if weights
                   else "unweighted mean of the six categories (not a WISE score)")
        formulas.append(f"{NAMES[score]} Overall = {formula}.")
    return "\n".join(lines + [""] + formulas + ([""] + notes if notes else [])) + "\n"


def wise_report(run_dirs: Sequence[str | Path], score: str | None = None, judge_name: str | None = None,
                errors: str = "exclude", out: str | Path | None = None, ids: Sequence[str] | None = None,
                classes: Sequence[str] | None = None) -> str | None:
    """The WISE table for the WISE runs among ``run_dirs`` (None when there are none); also
    written to ``out/wise.md`` when ``out`` is given. ``judge_name`` may list several judges
    ("default,qwen7b") like ``orig report``."""
    from orig_local.evaluation.rundir import run_label

    names = [None if n in ("", "default") else n for n in judge_name.split(",")] if judge_name else [None]
    summaries = []
    for d in run_dirs:
        for name in names:
            if is_wise_run(d, name):
                label = run_label(Path(d)) + (f" [{name or 'default'}]" if len(names) > 1 else "")
                summaries.append((label, run_summary(d, score, name, errors, ids=ids, classes=classes)))
    if not summaries:
        if score is not None:
            raise DataError("--wise-score: none of these runs is a WISE run")
        return None
    text = "## WISE\n\n" + format_table(summaries)
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "wise.md").write_text(text, encoding="utf-8")
    return text
