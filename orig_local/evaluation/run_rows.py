"""A run folder read back for scoring: run.json, its phase files as typed rows
(:mod:`~orig_local.evaluation.rows`: streamed line by line, every shard file included,
duplicates and malformed rows turned into data issues, never resolved), each row's
ok/degraded/failed status, the benchmark the run was made with, and its stand-in labels."""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from orig_local.errors import DataError
from orig_local.evaluation.rows import ROW_MODELS, AgentRow, PhaseRow, RowFormatError, parse_row
from orig_local.evaluation.rundir import phase_file, shard_files

if TYPE_CHECKING:
    from orig_local.evaluation.loaders import Loaded

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
                issues.append(DataIssue(phase, item, f"{exc}; the row is left out of this report"))
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


def _status_counts(rows: Mapping[str, PhaseRow], phase: str) -> dict[str, int]:
    """ok/degraded/failed over a phase's rows (duplicated ids are data errors, not counted)."""
    c = Counter(row_status(r, phase) for r in rows.values() if not r.duplicate)
    return {s: c.get(s, 0) for s in STATUSES}


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


@dataclass(frozen=True)
class ReadBenchmark:
    """A benchmark read earlier in this process: ``orig eval`` hands the read its phases ran on
    to its final report, so the data is parsed once per command. It serves a load of the same
    loader, data (resolved path) and loader options; any other load reads the files."""

    benchmark: str
    data: str
    options: dict[str, Any]
    loaded: Loaded

    @classmethod
    def of(cls, benchmark: str, data: str | Path, options: dict[str, Any], loaded: Loaded) -> ReadBenchmark:
        return cls(benchmark, str(Path(data).resolve()), dict(options), loaded)

    def serves(self, benchmark: str, data: str | Path, options: dict[str, Any]) -> bool:
        return (benchmark, str(Path(data).resolve()), options) == (self.benchmark, self.data, self.options)


def load_benchmark_items(meta: dict, data: str | Path | None = None, benchmark: str | None = None,
                         run_dir: str | Path | None = None, judge_name: str | None = None,
                         read: ReadBenchmark | None = None):
    """The run's benchmark items by id, or (None, reason) when they cannot be loaded. With
    ``run_dir``, the loader options the run recorded are used (e.g. WISE's judged protocols).
    The data is run.json's absolute path (from any working directory). ``read``: the same
    benchmark already read in this process, taken instead of the files when it serves."""
    from orig_local.evaluation.rundir import data_path

    data = data or data_path(meta)
    benchmark = benchmark or meta.get("benchmark") or "figeval"
    if not data:
        return None, "run.json names no benchmark data"
    options = loader_options(run_dir, benchmark, judge_name)
    try:
        from orig_local.evaluation.loaders import load_benchmark, select_benchmark

        if read is not None and read.serves(benchmark, data, options):  # what load_benchmark would give
            items, source = select_benchmark(benchmark, read.loaded.items, None, True), read.loaded.source
        else:
            items, source = load_benchmark(benchmark, data, include_others=True, **options), None
    except Exception as exc:  # a moved or unreadable benchmark: say so, check what we can
        return None, f"benchmark {benchmark} at {data} could not be loaded ({' '.join(str(exc).split())[:200]})"
    from orig_local.evaluation.identity import current_identity, identity_differs

    recorded = meta.get("benchmark_identity") or {}
    changed = (identity_differs(recorded, current_identity(meta, benchmark, data, items, source=source))
               if recorded else None)
    if changed:  # checked anyway, but never silently against other data than the run's
        return {it.id: it for it in items}, (f"the benchmark at {data} is not the data this run was made with "
                                             f"({changed}); verdicts were checked against it as it is now")
    return {it.id: it for it in items}, None


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
