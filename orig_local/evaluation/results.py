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

import json
import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from orig_local.errors import DataError
from orig_local.evaluation.rows import (
    ROW_MODELS,
    AgentRow,
    GenerateRow,
    JudgeRow,
    PhaseRow,
    RetrievalRow,
    RowFormatError,
    parse_row,
)
from orig_local.evaluation.rundir import check_run_dir, phase_file, run_label, shard_files
from orig_local.evaluation.scoring import ErrorPolicy, PromptScore, check_verdicts, mean_ignoring_nan, prompt_score

log = logging.getLogger(__name__)

STATUSES = ("ok", "degraded", "failed")
PhaseRowT = TypeVar("PhaseRowT", bound=PhaseRow)


@dataclass
class DataIssue:
    """One data error: a row (or verdict) that cannot be scored as it is."""

    phase: str
    item: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.phase} {self.item or '(no id)'}: {self.message}"


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


def read_run_meta(run_dir: str | Path) -> dict:
    """``run.json`` of a run folder ({} when absent); a corrupt one is a DataError naming it."""
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path} is not valid JSON ({exc})",
                        hint="restore it from a backup or rerun `orig eval` with a new --out") from exc
    if not isinstance(meta, dict):
        raise DataError(f"{path}: expected a JSON object, got {type(meta).__name__}")
    return meta


def read_all_rows(run_dir: Path, phase: str, judge_name: str | None = None,
                  warnings: list[str] | None = None, issues: list[DataIssue] | None = None) -> list[PhaseRow]:
    """Every row of a phase as its typed record (:mod:`~orig_local.evaluation.rows`), main file
    then shard files, duplicates kept (the caller counts them). Streamed line by line: a file is
    never held whole. Lines that cannot be read are counted into ``warnings``; a row whose fields
    do not fit its record is a data error in ``issues`` naming the file and line."""
    main = phase_file(run_dir, phase, judge_name)
    rows: list[PhaseRow] = []
    for path in [main] + shard_files(run_dir, main.name[: -len(".jsonl")]):
        if not path.is_file():
            if path.is_symlink() or path.exists():  # a directory or a dangling link: never "no rows"
                what = "a dangling link" if path.is_symlink() and not path.exists() else "not a file"
                raise DataError(f"{path} is {what}; its rows cannot be read",
                                hint="restore the file, or move it away if the phase never ran")
            continue
        rows += _read_file(path, phase, warnings, issues)
    return rows


def _read_file(path: Path, phase: str, warnings: list[str] | None, issues: list[DataIssue] | None) -> list[PhaseRow]:
    """One phase file's rows; what :func:`~orig_local.evaluation.jsonl_store.read_rows` skips
    (corrupt lines; a torn last line silently) is skipped and said the same way."""
    from orig_local.evaluation.jsonl_store import corrupt_path, iter_lines, parse_line

    model = ROW_MODELS[phase]
    rows: list[PhaseRow] = []
    corrupt: list[int] = []
    lines = read = 0
    for number, line, complete in iter_lines(path):
        if not line.strip():
            continue
        lines += 1
        raw = parse_line(line)
        if raw is None:
            if complete:  # a torn last line is a run in progress or killed: not corrupt
                corrupt.append(number)
            continue
        read += 1
        try:
            rows.append(parse_row(model, raw, path, number))
        except RowFormatError as exc:
            if issues is not None:
                item = raw.get("id") if isinstance(raw.get("id"), str) else None
                issues.append(DataIssue(phase, item, f"{exc}; the row is not scored"))
    if corrupt:
        message = (f"{path}: {len(corrupt)} corrupt line(s) skipped (line {', '.join(map(str, corrupt[:5]))}); "
                   f"{read} valid row(s) read. Resuming the run moves them to {corrupt_path(path).name}")
        log.warning("%s", message)
        if warnings is not None:
            warnings.append(message)
    if warnings is not None and lines > read:
        warnings.append(f"{path.name}: {lines - read} of {lines} line(s) could not be read "
                        "(corrupt or torn); their items are not in this report")
    return rows


def _by_id(rows: list[PhaseRowT], phase: str, issues: list[DataIssue]) -> dict[str, PhaseRowT]:
    """id -> row; ids given more than once are data errors (and left out of the scores: which
    of two rows is right cannot be decided here; the first is kept, marked duplicate)."""
    counts = Counter(r.id for r in rows)
    out: dict[str, PhaseRowT] = {}
    for row in rows:
        rid = row.id
        if not rid:
            issues.append(DataIssue(phase, None, "row without an id"))
        elif counts[rid] > 1:
            if rid not in out:
                issues.append(DataIssue(phase, rid, f"{counts[rid]} rows for this item (duplicate rows are "
                                                    "not resolved: remove the wrong one, or rerun it)"))
                row._duplicate = counts[rid]
                out[rid] = row
        else:
            out[rid] = row
    return out


def row_status(row: PhaseRow, phase: str = "") -> str:
    """ok / degraded / failed: the row's ``status``, or - for rows written before it existed -
    failed when the row has an ``error`` (or the agent stopped with ``error``)."""
    status = row.status
    if status in STATUSES:
        return status
    if status is not None:  # "weird", "FAILED": never counted as ok (load_run reports it as a data error)
        return "failed"
    if row.error:
        return "failed"
    if phase == "agent" and isinstance(row, AgentRow) and row.stop_reason == "error":
        return "failed"
    return "ok"


def loader_options(run_dir: str | Path | None, benchmark: str, judge_name: str | None = None) -> dict:
    """The loader options the run's judge phase was made with (``config.judge[-<name>].yaml``,
    else ``config.yaml``'s ``eval`` section): WISE's variant and judged protocols decide which
    questions an item has. {} when not recorded."""
    if run_dir is None:
        return {}
    config_file = Path(run_dir) / (f"config.judge-{judge_name}.yaml" if judge_name else "config.judge.yaml")
    if not config_file.is_file():
        config_file = Path(run_dir) / "config.yaml"
    if not config_file.is_file():
        return {}
    try:
        from types import SimpleNamespace

        import yaml

        from orig_local.evaluation.loaders import benchmark_options

        cfg = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
        ev = cfg.get("eval") if isinstance(cfg, dict) else None
        ev = ev if isinstance(ev, dict) else {}
        return benchmark_options(SimpleNamespace(benchmark=benchmark, variant=ev.get("variant") or "base",
                                                 wise_judge=ev.get("wise_judge")))
    except Exception:  # noqa: BLE001 - an unreadable config: the loader's defaults (the check says what differs)
        return {}


def load_benchmark_items(meta: dict, data: str | Path | None = None, benchmark: str | None = None,
                         run_dir: str | Path | None = None, judge_name: str | None = None):
    """The run's benchmark items by id, or (None, reason) when they cannot be loaded. With
    ``run_dir``, the loader options the run recorded are used (e.g. WISE's judged protocols).
    The data is run.json's absolute path (from any working directory)."""
    from orig_local.evaluation.rundir import data_path

    data = data or data_path(meta)
    benchmark = benchmark or meta.get("benchmark") or "figeval"
    if not data:
        return None, "run.json names no benchmark data"
    try:
        from orig_local.evaluation.loaders import load_benchmark

        items = load_benchmark(benchmark, data, include_others=True,
                               **loader_options(run_dir, benchmark, judge_name))
    except Exception as exc:  # a moved or unreadable benchmark: say so, check what we can
        return None, f"benchmark {benchmark} at {data} could not be loaded ({' '.join(str(exc).split())[:200]})"
    from orig_local.evaluation.identity import current_identity, identity_differs

    recorded = meta.get("benchmark_identity") or {}
    changed = identity_differs(recorded, current_identity(meta, benchmark, data, items)) if recorded else None
    if changed:  # checked anyway, but never silently against other data than the run's
        return {it.id: it for it in items}, (f"the benchmark at {data} is not the data this run was made with "
                                             f"({changed}); verdicts were checked against it as it is now")
    return {it.id: it for it in items}, None


# --------------------------------------------------------------------------- one run


def load_run(run_dir: str | Path, judge_name: str | None = None, errors: ErrorPolicy = "exclude", *,
             data: str | Path | None = None, benchmark: str | None = None, check_benchmark: bool = True,
             items: dict | None = None) -> RunResults:
    """Scores of one run from its JSONL. ``errors``: how unparseable verdicts count (see
    scoring). ``data``/``benchmark`` override where the benchmark is read from (default: what
    run.json names); ``items`` passes it ready-loaded (id -> BenchmarkItem)."""
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
        items, why = load_benchmark_items(meta, data, benchmark, run_dir, judge_name)
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

    prompts: list[PromptScore] = []
    question_errors = item_errors = missing = items_with_q_errors = failed_upstream = 0
    judge_of: dict[str, str] = {}  # item -> its judge status (selections recount from it)
    judges: list[str] = []
    for rid, row in judge_rows.items():
        if row.judge and row.judge not in judges:
            judges.append(row.judge)
        if row.duplicate:
            continue  # a data error (counted there), not a judge failure
        if row.status is not None and row.status not in STATUSES:
            issues.append(DataIssue("judge", rid, f"unknown status {row.status!r} (expected one of "
                                                  f"{', '.join(STATUSES)}); the row is not scored"))
            continue
        item = items.get(rid) if items is not None else None
        if items is not None and item is None:
            issues.append(DataIssue("judge", rid, "id is not in the benchmark (rejected)"))
            continue
        category = norm(item.category if item is not None else row.category)
        if item is not None and row.category and norm(row.category) != category:
            issues.append(DataIssue("judge", rid, f"class {row.category!r} differs from the benchmark's "
                                                  f"{item.category!r}"))
            continue
        upstream = [ph for ph, before in (("agent", agent_rows.get(rid)), ("generate", gen_rows.get(rid)))
                    if before is not None and row_status(before, ph) == "failed"]
        if upstream:  # judged, but not what the condition specifies (e.g. the raw-prompt fallback)
            failed_upstream += 1
            judge_of[rid] = "failed"
            continue
        row_state = row_status(row, "judge")
        if row_state == "failed" and not row.verdicts:  # the item could not be judged at all
            item_errors += 1
            judge_of[rid] = "failed"
            continue
        questions = [(q.id, q.concept) for q in item.questions] if item is not None else None
        graded = [q.id for q in item.questions if q.rubric == "wise_wiscore"] if item is not None else None
        check = check_verdicts(row.verdicts, questions, graded)
        missing += len(check.missing)
        if not check.ok:
            for problem in check.problems:
                issues.append(DataIssue("judge", rid, problem))
            continue
        question_errors += check.question_errors
        items_with_q_errors += bool(check.question_errors)
        if row_state == "failed" or (check.outcomes and check.question_errors == len(check.outcomes)):
            judge_of[rid] = "failed"  # every question errored (or the row says failed): not scored
            continue
        elif check.question_errors or row_state == "degraded":
            judge_of[rid] = "degraded"
        else:
            judge_of[rid] = "ok"
        ps = prompt_score(rid, category, check.outcomes, errors=errors)
        if ps.total:
            prompts.append(ps)

    judge_status = Counter(judge_of.values())
    status = {
        "agent": _status_counts(agent_rows, "agent"),
        "generate": _status_counts(gen_rows, "generate"),
        "judge": {s: judge_status.get(s, 0) for s in STATUSES},
    }
    if retrieval_rows:
        status["retrieval"] = _status_counts(retrieval_rows, "retrieval")
    stop_reasons = Counter(r.stop_reason for r in agent_rows.values() if r.stop_reason)
    revision = _judge_revision(meta)
    # The judge's identity: the model name on its rows (run.json's judge for older rows), plus
    # the revision when provenance recorded it. Runs without verdicts have none.
    ident = [f"{j} @ {revision}" if revision else j for j in judges] or (
        [str(meta["judge"]) + (f" @ {revision}" if revision else "")] if meta.get("judge") and judge_rows else [])
    # Items that ran upstream but have no judge row (an interrupted judge phase): not failed, not
    # scored, and easy to miss behind a smaller "prompts" count - say so.
    upstream_ids = {rid for rows in (agent_rows, gen_rows) for rid in rows}
    not_judged = sorted(upstream_ids - set(judge_rows))
    if not_judged and judge_rows:
        shown = ", ".join(not_judged[:5]) + (" ..." if len(not_judged) > 5 else "")
        warnings.append(f"{len(not_judged)} item(s) have agent/generate rows but no judge row, so no score "
                        f"({shown}); run the judge phase again to complete it")
    if not judge_rows:
        warnings.insert(0, f"never judged: no {judge_file.name} rows, so no accuracy (run `orig eval --phase judge "
                           f"--out {run_dir}`{' --judge-name ' + judge_name if judge_name else ''})")
    if len(judges) > 1:
        warnings.append(f"{judge_file.name}: rows from {len(judges)} different judges ({', '.join(judges)})")
    counts = {
        "agent_rows": len(agent_rows), "agent_errors": status["agent"]["failed"],
        "images": sum(bool(r.image) for r in gen_rows.values()),
        "generate_errors": status["generate"]["failed"],
        "judged_prompts": len(prompts), "judge_item_errors": item_errors,
        "judge_question_errors": question_errors, "judge_items_with_question_errors": items_with_q_errors,
        "questions": sum(len(r.verdicts) for r in judge_rows.values() if isinstance(r.verdicts, list)),
        "missing_verdicts": missing, "data_errors": len(issues), "not_scored_failed_upstream": failed_upstream,
        "data_error_items": len({(i.phase, i.item) for i in issues}),
        "not_judged": len(not_judged) if judge_rows else 0,
    }
    result = RunResults(run_dir, meta.get("label") or run_label(run_dir), meta, judge_name, prompts,
                        judge_rows, agent_rows, gen_rows, retrieval_rows, counts, status, dict(stop_reasons),
                        issues, warnings, ident, run_stand_in_labels(run_dir, meta, agent_notes(agent_rows)),
                        benchmark_checked=items is not None)
    result.judge_status_of = judge_of
    return result


def agent_notes(agent_rows: Mapping[str, AgentRow]) -> Iterator[str]:
    """The labels and notes the agent rows recorded."""
    for row in agent_rows.values():
        yield from (row.labels or []) + (row.notes or [])


def _status_counts(rows: Mapping[str, PhaseRow], phase: str) -> dict[str, int]:
    """ok/degraded/failed over a phase's rows (duplicated ids are data errors, not counted)."""
    c = Counter(row_status(r, phase) for r in rows.values() if not r.duplicate)
    return {s: c.get(s, 0) for s in STATUSES}


def _judge_revision(meta: dict) -> str | None:
    """The judge model's revision from run.json's provenance, when recorded."""
    models = (meta.get("provenance") or {}).get("models") if isinstance(meta.get("provenance"), dict) else None
    judge = models.get("judge") if isinstance(models, dict) else None
    rev = judge.get("revision") if isinstance(judge, dict) else None
    return str(rev) if rev else None


def run_stand_in_labels(run_dir: Path, meta: dict, recorded: Iterable[str] = ()) -> list[str]:
    """Stand-in labels of a run: from its config.yaml (the backbone only when the condition
    uses one), and ``recorded``: the labels and notes its agent rows hold."""
    from orig_local.labels import config_labels

    labels: list[str] = []
    cfg_path = Path(run_dir) / "config.yaml"
    if cfg_path.is_file():
        try:
            import yaml

            cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) or {}
        except Exception:
            cfg = {}
        if isinstance(cfg, dict):
            from orig_local.conditions import CONDITIONS

            spec = CONDITIONS.get(meta.get("condition") or (cfg.get("agent") or {}).get("condition") or "")
            roles = ["judge", "generator"]
            if spec is None or spec.uses_backbone:
                roles.append("backbone")
            if spec is None or "image" in spec.modalities:  # CLIP dedups the retrieved images
                roles.append("embedder")
            labels += config_labels(cfg, roles)
    from orig_local.labels import SIMULATED, STAND_IN_BACKENDS, TINY, _ordered

    models = (meta.get("provenance") or {}).get("models") if isinstance(meta.get("provenance"), dict) else None
    for role, info in (models or {}).items() if isinstance(models, dict) else []:
        if not isinstance(info, dict):
            continue
        if role == "backbone" and info.get("backend") in STAND_IN_BACKENDS and SIMULATED not in labels:
            labels.append(SIMULATED)
        elif info.get("tiny_random_weights") and TINY not in labels and not (
                role == "backbone" and info.get("backend") in STAND_IN_BACKENDS):
            labels.append(TINY)

    for note in recorded:  # labels the agent recorded in its notes
        if note in (SIMULATED, TINY) and note not in labels:
            labels.append(note)

    return _ordered(labels)


# --------------------------------------------------------------------------- derived numbers


def stage_means(run: RunResults) -> dict[str, dict[str, float]]:
    """Per-stage totals averaged over prompts whose agent phase succeeded (cost tables)."""
    if "stage_means" in run.derived:
        return run.derived["stage_means"]
    rows = [r for r in run.agent_rows.values() if row_status(r, "agent") != "failed" and r.stages is not None]
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        for stage, totals in (r.stages or {}).items():
            slot = out.setdefault(stage, {})
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
