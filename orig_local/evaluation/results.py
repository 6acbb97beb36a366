"""Read a run folder's JSONL back into scores (everything reports need, nothing cached).

Rows are checked before they are scored; nothing is silently resolved:

* every row of a phase is read from the main file and every shard file; an id that appears
  more than once is a *data error* (the item is not scored), never "first wins";
* each judge row's verdicts are checked (:func:`~orig_local.evaluation.scoring.check_verdicts`)
  against the benchmark's question list when the benchmark named in ``run.json`` (or given
  with ``data=``) can be loaded: ids outside the benchmark, missing or extra verdicts and
  non-boolean verdicts are data errors;
* class names are normalised (``sport`` -> ``sports``) before scoring;
* every row gets a status (``ok``/``degraded``/``failed``: the row's own ``status`` field, or
  derived from ``error`` for rows written before it existed), counted per phase.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from orig_local.agent.registry import RENAMED_STAGES
from orig_local.errors import DataError
from orig_local.evaluation.rows import AgentRow, GenerateRow, JudgeRow, RetrievalRow
from orig_local.evaluation.run_rows import (  # re-exported: results is where readers look for them
    STATUSES,
    DataIssue,
    PhaseRowT,
    ReadBenchmark,
    _by_id,
    _judge_revision,
    _status_counts,
    load_benchmark_items,
    loader_options,
    read_all_rows,
    read_run_meta,
    row_status,
    run_stand_in_labels,
)
from orig_local.evaluation.rundir import check_run_dir, phase_file, run_label, shard_files
from orig_local.evaluation.scoring import ErrorPolicy, PromptScore, check_verdicts, mean_ignoring_nan, prompt_score

log = logging.getLogger(__name__)


@dataclass
class RunResults:
    dir: Path
    label: str
    meta: dict
    judge_name: str | None
    prompts: list[PromptScore]  # judged prompts with at least one scored question
    judge_rows: dict[str, JudgeRow]
    agent_rows: dict[str, AgentRow]
    gen_rows: dict[str, GenerateRow]
    retrieval_rows: dict[str, RetrievalRow]
    counts: dict[str, int] = field(default_factory=dict)
    status: dict[str, dict[str, int]] = field(default_factory=dict)  # phase -> ok/degraded/failed
    stop_reasons: dict[str, int] = field(default_factory=dict)
    data_errors: list[DataIssue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # unreadable lines, benchmark not checked...
    judges: list[str] = field(default_factory=list)  # judge identities (model [@ revision])
    labels: list[str] = field(default_factory=list)  # stand-in labels (orig_local.labels)
    benchmark_checked: bool = False
    judge_status_of: dict[str, str] = field(default_factory=dict)  # item -> ok/degraded/failed (judge)
    derived: dict = field(default_factory=dict)  # what the tables need, kept when the rows are dropped

    @property
    def compacted(self) -> bool:
        return bool(self.derived.get("compacted"))

    def compact(self) -> RunResults:
        """Keep what the tables need (scores, counts, statuses, stage means, retrieval numbers)
        and drop the rows: a report over many runs holds one run's rows at a time, so its
        memory does not grow with the number of runs. Galleries need the rows: reload the run."""
        self.derived.update(stage_means=stage_means(self), retrieval=_retrieval_numbers(self),
                            retrieval_accuracy=self.retrieval_accuracy, compacted=True)
        self.agent_rows, self.gen_rows, self.judge_rows, self.retrieval_rows = {}, {}, {}, {}
        self.judge_status_of = {}  # only a selection (applied before compacting) reads it
        return self

    @property
    def retrieval_accuracy(self) -> float:
        """Mean over prompts of A_i (paper Eq. 12). Items whose agent phase failed are left out,
        as they are from generation accuracy: their evidence is not what the condition retrieves."""
        if "retrieval_accuracy" in self.derived:
            return self.derived["retrieval_accuracy"]
        failed = {rid for rid, r in self.agent_rows.items() if row_status(r, "agent") == "failed"}
        return mean_ignoring_nan(r.accuracy for rid, r in self.retrieval_rows.items()
                                 if r.accuracy is not None and not r.duplicate and rid not in failed)

    @property
    def scores(self) -> dict[str, float]:
        """S_i of every scored item, by id (what galleries show: never a row's stored score)."""
        return {p.id: p.s for p in self.prompts}

    @property
    def failed_items(self) -> dict[str, int]:
        """Failed rows per phase (phases with none left out)."""
        return {ph: c["failed"] for ph, c in self.status.items() if c.get("failed")}

    @property
    def provenance(self) -> dict:
        prov = self.meta.get("provenance")
        return prov if isinstance(prov, dict) else {}


# --------------------------------------------------------------------------- reading


# --------------------------------------------------------------------------- one run


def load_run(run_dir: str | Path, judge_name: str | None = None, errors: ErrorPolicy = "exclude", *,
             data: str | Path | None = None, benchmark: str | None = None, check_benchmark: bool = True,
             items: dict | None = None, read: ReadBenchmark | None = None) -> RunResults:
    """Scores of one run from its JSONL. ``errors``: how unparseable verdicts count (see
    scoring). ``data``/``benchmark`` override where the benchmark is read from (default: what
    run.json names); ``items`` passes it ready-loaded (id -> BenchmarkItem), ``read`` as read."""
    from orig_local.evaluation.items import FIGEVAL_CLASSES
    from orig_local.evaluation.loaders.figeval import normalize_class

    run_dir = check_run_dir(run_dir)  # missing or empty: a DataError
    meta = read_run_meta(run_dir)
    warnings: list[str] = []
    issues: list[DataIssue] = []
    judge_file = phase_file(run_dir, "judge", judge_name)
    if judge_name and not judge_file.is_file() and not shard_files(run_dir, judge_file.stem):
        raise DataError(f"{run_dir}: no verdicts of judge {judge_name!r} ({judge_file.name})")

    if items is None and check_benchmark:
        items, why = load_benchmark_items(meta, data, benchmark, run_dir, judge_name, read)
        if items is None:
            warnings.append(f"benchmark not checked: {why}; verdicts were validated without the question list")
        elif why:
            warnings.append(why)

    def norm(category) -> str:
        name = normalize_class(str(category or ""))
        return name if name in FIGEVAL_CLASSES else str(category or "")

    def rows(phase: str, model: type[PhaseRowT]) -> dict[str, PhaseRowT]:
        name = judge_name if phase in ("judge", "retrieval") else None
        read = read_all_rows(run_dir, phase, name, warnings, issues)
        return _by_id([r for r in read if isinstance(r, model)], phase, issues)

    agent_rows, gen_rows = rows("agent", AgentRow), rows("generate", GenerateRow)
    judge_rows, retrieval_rows = rows("judge", JudgeRow), rows("retrieval", RetrievalRow)
    tally = _JudgeTally(items, agent_rows, gen_rows, errors, issues, norm)
    for rid, row in judge_rows.items():
        tally.score(rid, row)

    status = _phase_status(agent_rows, gen_rows, retrieval_rows, tally.judge_of)
    stop_reasons = Counter(r.stop_reason for r in agent_rows.values() if r.stop_reason)
    revision = _judge_revision(meta)
    # The judge's identity: the model name on its rows (run.json's judge for older rows), plus
    # the revision when provenance recorded it. Runs without verdicts have none.
    judges = tally.judges
    ident = [f"{j} @ {revision}" if revision else j for j in judges] or (
        [str(meta["judge"]) + (f" @ {revision}" if revision else "")] if meta.get("judge") and judge_rows else [])
    not_judged = _not_judged(agent_rows, gen_rows, judge_rows)
    warnings += _judge_warnings(not_judged, judges, judge_file.name) if judge_rows else []
    if not judge_rows:
        warnings.insert(0, f"never judged: no {judge_file.name} rows, so no accuracy (run `orig eval --phase judge "
                           f"--out {run_dir}`{' --judge-name ' + judge_name if judge_name else ''})")
    counts = _counts(agent_rows, gen_rows, judge_rows, status, tally, issues)
    counts["not_judged"] = len(not_judged) if judge_rows else 0
    result = RunResults(run_dir, meta.get("label") or run_label(run_dir), meta, judge_name, tally.prompts,
                        judge_rows, agent_rows, gen_rows, retrieval_rows, counts, status, dict(stop_reasons),
                        issues, warnings, ident, run_stand_in_labels(run_dir, meta, agent_notes(agent_rows)),
                        benchmark_checked=items is not None)
    result.judge_status_of = tally.judge_of
    return result


def _phase_status(agent_rows: Mapping[str, AgentRow], gen_rows: Mapping[str, GenerateRow],
                  retrieval_rows: Mapping[str, RetrievalRow], judge_of: dict[str, str]) -> dict[str, dict[str, int]]:
    """phase -> ok/degraded/failed counts (the judge's from the scoring, not the rows' own)."""
    judge_status = Counter(judge_of.values())
    status = {
        "agent": _status_counts(agent_rows, "agent"),
        "generate": _status_counts(gen_rows, "generate"),
        "judge": {s: judge_status.get(s, 0) for s in STATUSES},
    }
    if retrieval_rows:
        status["retrieval"] = _status_counts(retrieval_rows, "retrieval")
    return status


def _counts(agent_rows: Mapping[str, AgentRow], gen_rows: Mapping[str, GenerateRow],
            judge_rows: Mapping[str, JudgeRow], status: dict[str, dict[str, int]], tally: _JudgeTally,
            issues: list[DataIssue]) -> dict[str, int]:
    return {
        "agent_rows": len(agent_rows), "agent_errors": status["agent"]["failed"],
        "images": sum(bool(r.image) for r in gen_rows.values()),
        "generate_errors": status["generate"]["failed"],
        "judged_prompts": len(tally.prompts), "judge_item_errors": tally.item_errors,
        "judge_question_errors": tally.question_errors,
        "judge_items_with_question_errors": tally.items_with_q_errors,
        "questions": sum(len(r.verdicts) for r in judge_rows.values() if isinstance(r.verdicts, list)),
        "missing_verdicts": tally.missing, "data_errors": len(issues),
        "not_scored_failed_upstream": tally.failed_upstream,
        "data_error_items": len({(i.phase, i.item) for i in issues}),
    }


def _not_judged(agent_rows: Mapping[str, AgentRow], gen_rows: Mapping[str, GenerateRow],
                judge_rows: Mapping[str, JudgeRow]) -> list[str]:
    """Items that ran upstream but have no judge row (an interrupted judge phase)."""
    upstream_ids = {rid for rows in (agent_rows, gen_rows) for rid in rows}
    return sorted(upstream_ids - set(judge_rows))


def _judge_warnings(not_judged: list[str], judges: list[str], judge_file: str) -> list[str]:
    out = []
    if not_judged:  # not failed, not scored, and easy to miss behind a smaller "prompts" count
        shown = ", ".join(not_judged[:5]) + (" ..." if len(not_judged) > 5 else "")
        out.append(f"{len(not_judged)} item(s) have agent/generate rows but no judge row, so no score "
                   f"({shown}); run the judge phase again to complete it")
    if len(judges) > 1:
        out.append(f"{judge_file}: rows from {len(judges)} different judges ({', '.join(judges)})")
    return out


class _JudgeTally:
    """Scores one run's judge rows, one at a time: each row checked (data issues, upstream
    failures, judge failures) before its verdicts count."""

    def __init__(self, items: dict | None, agent_rows: Mapping[str, AgentRow], gen_rows: Mapping[str, GenerateRow],
                 errors: ErrorPolicy, issues: list[DataIssue], norm: Callable[[object], str]):
        self.items, self.agent_rows, self.gen_rows = items, agent_rows, gen_rows
        self.errors, self.issues, self.norm = errors, issues, norm
        self.prompts: list[PromptScore] = []
        self.judge_of: dict[str, str] = {}  # item -> its judge status (selections recount from it)
        self.judges: list[str] = []
        self.question_errors = self.item_errors = self.missing = self.items_with_q_errors = 0
        self.failed_upstream = 0

    def _issue(self, rid: str, message: str) -> None:
        self.issues.append(DataIssue("judge", rid, message))

    def _category(self, rid: str, row: JudgeRow) -> str | None:
        """The item's class (the benchmark's when loaded), or None after a data issue."""
        item = self.items.get(rid) if self.items is not None else None
        if self.items is not None and item is None:
            self._issue(rid, "id is not in the benchmark (rejected)")
            return None
        category = self.norm(item.category if item is not None else row.category)
        if item is not None and row.category and self.norm(row.category) != category:
            self._issue(rid, f"class {row.category!r} differs from the benchmark's {item.category!r}")
            return None
        return category

    def score(self, rid: str, row: JudgeRow) -> None:
        if row.judge and row.judge not in self.judges:
            self.judges.append(row.judge)
        if row.duplicate:
            return  # a data error (counted there), not a judge failure
        if row.status is not None and row.status not in STATUSES:
            self._issue(rid, f"unknown status {row.status!r} (expected one of {', '.join(STATUSES)}); "
                             "the row is not scored")
            return
        category = self._category(rid, row)
        if category is None:
            return
        upstream = [ph for ph, before in (("agent", self.agent_rows.get(rid)), ("generate", self.gen_rows.get(rid)))
                    if before is not None and row_status(before, ph) == "failed"]
        if upstream:  # judged, but not what the condition specifies (e.g. the raw-prompt fallback)
            self.failed_upstream += 1
            self.judge_of[rid] = "failed"
            return
        row_state = row_status(row, "judge")
        if row_state == "failed" and not row.verdicts:  # the item could not be judged at all
            self.item_errors += 1
            self.judge_of[rid] = "failed"
            return
        self._verdicts(rid, row, row_state, category)

    def _verdicts(self, rid: str, row: JudgeRow, row_state: str, category: str) -> None:
        item = self.items.get(rid) if self.items is not None else None
        questions = [(q.id, q.concept) for q in item.questions] if item is not None else None
        graded = [q.id for q in item.questions if q.rubric == "wise_wiscore"] if item is not None else None
        check = check_verdicts(row.verdicts, questions, graded)
        self.missing += len(check.missing)
        if not check.ok:
            for problem in check.problems:
                self._issue(rid, problem)
            return
        self.question_errors += check.question_errors
        self.items_with_q_errors += bool(check.question_errors)
        if row_state == "failed" or (check.outcomes and check.question_errors == len(check.outcomes)):
            self.judge_of[rid] = "failed"  # every question errored (or the row says failed): not scored
            return
        self.judge_of[rid] = "degraded" if check.question_errors or row_state == "degraded" else "ok"
        ps = prompt_score(rid, category, check.outcomes, errors=self.errors)
        if ps.total:
            self.prompts.append(ps)


def agent_notes(agent_rows: Mapping[str, AgentRow]) -> Iterator[str]:
    """The labels and notes the agent rows recorded."""
    for row in agent_rows.values():
        yield from (row.labels or []) + (row.notes or [])


# --------------------------------------------------------------------------- derived numbers


def stage_means(run: RunResults) -> dict[str, dict[str, float]]:
    """Per-stage totals averaged over prompts whose agent phase succeeded (cost tables)."""
    if "stage_means" in run.derived:
        return run.derived["stage_means"]
    rows = [r for r in run.agent_rows.values() if row_status(r, "agent") != "failed" and r.stages is not None]
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        for stage, totals in (r.stages or {}).items():
            slot = out.setdefault(RENAMED_STAGES.get(stage, stage), {})  # rows written before a rename
            for key, value in totals.items():
                if isinstance(value, (int, float)):
                    slot[key] = slot.get(key, 0.0) + value
    n = len(rows)
    return {s: {k: v / n for k, v in d.items()} for s, d in out.items()} if n else {}


def retrieval_summary(run: RunResults) -> dict[str, float]:
    """Table 4/7 layout numbers: iterations, retrieval accuracy, final-prompt length, references,
    searches, prompt-extension tokens, generation accuracy (All)."""
    from orig_local.evaluation.scoring import table_row

    numbers = run.derived.get("retrieval") or _retrieval_numbers(run)
    return {**numbers, "generation_acc": table_row(run.prompts)["All"] if run.prompts else math.nan}


def _retrieval_numbers(run: RunResults) -> dict[str, float]:
    """:func:`retrieval_summary` without generation accuracy (that one comes from the scores)."""
    rows = [r for r in run.agent_rows.values() if row_status(r, "agent") != "failed"]
    means = stage_means(run)

    def avg(values):
        values = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return sum(values) / len(values) if values else math.nan

    total = lambda key: sum(d.get(key, 0.0) for d in means.values()) if means else math.nan  # noqa: E731
    ext = means.get("extension", {})
    return {
        "iterations": avg(r.iterations for r in rows),
        "retrieval_acc": run.retrieval_accuracy,
        "prompt_words": avg(r.final_prompt_words for r in rows),
        "references": avg(len(r.references or []) for r in rows),
        "text_searches": total("searches_text"),
        "image_searches": total("searches_image"),
        "extension_in_tokens": ext.get("prompt_tokens", math.nan),
        "extension_out_tokens": ext.get("completion_tokens", math.nan),
    }


# The readers moved to run_rows.py; these names stay importable from here.
__all__ = ["STATUSES", "DataIssue", "PhaseRowT", "ReadBenchmark", "RunResults", "load_benchmark_items", "load_run", "loader_options",
           "read_all_rows", "read_run_meta", "retrieval_summary", "row_status", "run_stand_in_labels", "stage_means"]
