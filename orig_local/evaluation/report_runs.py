"""Loading the runs of one report: the benchmark once per data set, the ``ids``/``classes``
selection applied to every table alike, rows dropped once scored (memory does not grow with the
number of runs), and the check that runs judged differently are not compared silently."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from orig_local.evaluation.results import PhaseRowT, RunResults, load_run
from orig_local.evaluation.rows import PhaseRow
from orig_local.evaluation.run_rows import ReadBenchmark
from orig_local.evaluation.scoring import ErrorPolicy


class _RunLoader:
    """Loads runs for one report: the benchmark once per (data, benchmark, options) however many
    runs use it, the ``ids``/``classes`` selection applied per run (checked over all runs by
    :meth:`check_selection`), and, with ``compact``, each run's rows dropped once scored.
    ``read``: the benchmark as this process already read it (``orig eval``'s final report),
    used wherever it serves instead of reading the files again."""

    def __init__(self, errors: ErrorPolicy, data, benchmark, ids, classes, compact: bool,
                 read: ReadBenchmark | None = None):
        from orig_local.evaluation.selection import normalize

        self.errors, self.data, self.benchmark, self.compact = errors, data, benchmark, compact
        self.ids, self.classes, self.read = ids, classes, read
        self.wanted = [normalize(c) for c in classes] if classes else None
        self.known: dict[str, str] = {}  # every id the runs hold -> its class (for the check)
        self.items_cache: dict[tuple, tuple] = {}
        self.labels: dict[int, str] = {}  # id(run) -> label suffix

    def _items(self, d, name: str | None):
        from orig_local.evaluation.run_rows import load_benchmark_items, loader_options, read_run_meta
        from orig_local.evaluation.rundir import data_path

        meta = read_run_meta(d) if Path(d).is_dir() else {}
        bench_name = str(self.benchmark or meta.get("benchmark") or "figeval")
        key = (str(self.data or data_path(meta)), bench_name,
               repr(sorted(loader_options(d, bench_name, name).items())))
        if key not in self.items_cache:  # one load per benchmark (and options), however many runs use it
            self.items_cache[key] = (load_benchmark_items(meta, self.data, self.benchmark, d, name, self.read)
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


def _known(run: RunResults, known: dict[str, str]) -> dict[str, str]:
    from orig_local.evaluation.selection import normalize

    for p in run.prompts:
        known[p.id] = p.category
    for rid, row in run.judge_rows.items():
        known.setdefault(rid, normalize(str(row.category if row.category is not None else "")))
    return known


def _restrict_run(r: RunResults, ids, wanted_classes, known: dict[str, str]) -> None:
    """Keep only the selected items of one run (``wanted_classes`` normalised); the ids and
    classes it holds are added to ``known``."""
    from collections import Counter

    from orig_local.evaluation.run_rows import _status_counts
    from orig_local.evaluation.selection import normalize

    _known(r, known)

    def kept(rid: str, row: PhaseRow | None) -> bool:
        stored = row.category if row is not None and row.category is not None else ""
        category = known.get(rid) or str(stored)
        return (not ids or rid in ids) and (not wanted_classes or normalize(category) in wanted_classes)

    def keep(rows: dict[str, PhaseRowT]) -> dict[str, PhaseRowT]:
        return {rid: row for rid, row in rows.items() if kept(rid, row)}

    r.prompts = [p for p in r.prompts if (not ids or p.id in ids)
                 and (not wanted_classes or normalize(p.category) in wanted_classes)]
    r.counts["judged_prompts"] = len(r.prompts)
    # Every table of the report covers the same selection: retrieval accuracy, cost, stop
    # reasons and failure counts over all items beside accuracy over a few would mislead.
    r.agent_rows, r.gen_rows = keep(r.agent_rows), keep(r.gen_rows)
    r.judge_rows, r.retrieval_rows = keep(r.judge_rows), keep(r.retrieval_rows)
    rows: Mapping[str, PhaseRow]
    for phase, rows in (("agent", r.agent_rows), ("generate", r.gen_rows), ("retrieval", r.retrieval_rows)):
        if phase in r.status:
            r.status[phase] = _status_counts(rows, phase)
    judged = Counter(st for rid, st in r.judge_status_of.items() if rid in r.judge_rows)
    r.status["judge"] = {k: judged.get(k, 0) for k in ("ok", "degraded", "failed")}
    r.stop_reasons = dict(Counter(x.stop_reason for x in r.agent_rows.values() if x.stop_reason))
    r.counts["agent_rows"] = len(r.agent_rows)
    r.counts["agent_errors"] = r.status["agent"]["failed"]
    r.counts["generate_errors"] = r.status["generate"]["failed"]
    r.counts["images"] = sum(bool(x.image) for x in r.gen_rows.values())
    r.data_errors = [e for e in r.data_errors if e.item is None or kept(e.item, None)]
    r.counts["data_errors"] = len(r.data_errors)
