"""The one loop every phase runs: items concurrently, each row written the moment it exists.

A phase supplies ``work(item) -> row fields`` (sync or async) and what a row starts with; this
loop adds what every phase shares: the concurrency limit, an exception turned into a *failed*
row (the run goes on), timing, logging, the ok/degraded/failed tally (:class:`PhaseSummary`),
and the circuit breaker that stops a phase after N consecutive transport failures (a server
that is down) instead of writing a failed row for every remaining item.

Row contract (every phase): ``status`` is ``ok | degraded | failed``; ``error`` says why an item
failed (null otherwise); ``warning`` says why it is degraded. ``work`` may set ``_transport``
(True: the failure was a server that did not answer), which counts toward the breaker and is
not stored.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from orig_local.errors import OrigError
from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.jsonl_store import DISK_ERRNOS, DiskWriteError, JsonlStore
from orig_local.evaluation.phases.common import error_text, maybe_await, progress_bar
from orig_local.llm.base import is_transport_error

if TYPE_CHECKING:
    from orig_local.evaluation.judge import Judge

log = logging.getLogger(__name__)

STATUSES = ("ok", "degraded", "failed")


@dataclass
class PhaseSummary:
    """What one phase did (``orig eval --json`` prints :meth:`to_dict`; run.json's history keeps
    part of it). Every field is declared: a misspelt one is a type error, not a new key."""

    phase: str
    ran: int = 0
    skipped: int = 0  # already in the phase file
    waiting: int = 0  # no input row from the previous phase yet
    ok: int = 0  # this invocation's rows by status
    degraded: int = 0
    failed: int = 0
    seconds: float = 0.0
    stopped: str | None = None  # the circuit breaker's message, when it tripped
    # statuses of the selected items finished by an earlier invocation (skipped now)
    earlier: dict[str, int] = field(default_factory=dict)
    file: str | None = None
    # chat replies this invocation and how many came from the cache (phases that ask a model;
    # None for generate)
    replies: int | None = None
    from_cache: int | None = None

    @property
    def errors(self) -> int:
        """= ``failed`` (the name older callers read)."""
        return self.failed

    @property
    def failed_total(self) -> int:
        """Selected items whose row is failed, from this invocation or an earlier one."""
        return self.failed + self.earlier.get("failed", 0)

    def tally(self, status: str) -> None:
        """One more row of this invocation with ``status`` (ok / degraded / failed)."""
        self.ran += 1
        if status == "ok":
            self.ok += 1
        elif status == "degraded":
            self.degraded += 1
        else:
            self.failed += 1

    def __getitem__(self, key: str) -> Any:
        """``summary["ran"]``: the read the dict summaries before this class offered (declared
        fields and ``errors`` only)."""
        if key == "errors" or key in self.__dataclass_fields__:
            return getattr(self, key)
        raise KeyError(key)

    def count_earlier(self, items: Sequence[BenchmarkItem], done: dict[str, str]) -> PhaseSummary:
        """``done``: id -> stored status (:meth:`JsonlStore.statuses`)."""
        for item in items:
            if item.id in done:
                status = done[item.id]
                self.earlier[status] = self.earlier.get(status, 0) + 1
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON as ``orig eval --json`` prints it (reply counts only where a phase counts them)."""
        out: dict[str, Any] = {}
        for key, value in asdict(self).items():
            if key in ("replies", "from_cache") and value is None:
                continue
            out[key] = value
            if key == "failed":
                out["errors"] = value  # = failed, for older readers
        return out


def row_status(row: dict) -> str:
    """A row's status; rows written before statuses existed: failed iff they carry an error."""
    status = row.get("status")
    if status in STATUSES:
        return status
    return "failed" if row.get("error") else "ok"


def verdict_status(verdicts: Sequence[Any], what: str = "question") -> dict[str, Any]:
    """Row status fields for judged questions/facts (anything with an ``error``): failed when a
    request got no reply (transport) or every one errored, degraded when some did."""
    errs = [v.error for v in verdicts if v.error]
    transport = [e for e in errs if is_transport_error(e)]
    n = len(verdicts)
    if transport:
        return {"status": "failed", "_transport": True,
                "error": f"judge request failed on {len(transport)} of {n} {what}s: {transport[0][:300]}"}
    if errs and len(errs) == n:
        return {"status": "failed", "error": f"all {n} {what}s errored; first: {errs[0][:300]}"}
    if errs:
        return {"status": "degraded", "error": None,
                "warning": f"{len(errs)} of {n} {what}s errored; first: {errs[0][:300]}"}
    return {"status": "ok", "error": None}


def pending(phase: str, items: Sequence[BenchmarkItem], done: dict[str, str], inputs: dict | None = None,
            reads: str | None = None, eligible: Callable[[BenchmarkItem], bool] | None = None,
            ) -> tuple[list[BenchmarkItem], PhaseSummary]:
    """The items this phase still has to run (not ``done``; ``eligible``; with a row in ``inputs``,
    the rows of phase ``reads``), and its summary counting the rest: skipped (done, with their
    earlier statuses) and waiting (no input row yet)."""
    candidates = [it for it in items if it.id not in done and (eligible is None or eligible(it))]
    todo = [it for it in candidates if inputs is None or it.id in inputs]
    waiting = [it.id for it in candidates if inputs is not None and it.id not in inputs]
    if waiting:
        log.warning("%s: %d item(s) have no %s row yet (run --phase %s first): %s",
                    phase, len(waiting), reads, reads, ", ".join(waiting[:5]))
    summary = PhaseSummary(phase, skipped=len(items) - len(todo) - len(waiting), waiting=len(waiting))
    return todo, summary.count_earlier(items, done)


def judged(phase: str, judge: Judge, judge_name: str | None, close: bool, on_failure: dict) -> dict[str, Any]:
    """:func:`run_items` arguments shared by the phases that ask the judge (judge, retrieval)."""
    return dict(base=lambda it: {"id": it.id, "category": it.category, "judge": judge.name},
                on_failure=on_failure, desc=f"{phase}{'-' + judge_name if judge_name else ''}",
                aclose=judge.aclose if close else None)


def run_items(phase: str, items: Sequence[BenchmarkItem], store: JsonlStore, summary: PhaseSummary,
              work: Callable[[BenchmarkItem], Any], *, base: Callable[[BenchmarkItem], dict],
              on_failure: dict | None = None, concurrency: int = 1, progress: bool = True,
              max_consecutive_failures: int = 0, desc: str | None = None,
              aclose: Callable[[], Awaitable] | None = None) -> PhaseSummary:
    """Run ``work`` on every item (at most ``concurrency`` at once, at most twice that many tasks
    alive), append each row to ``store`` as soon as it is finished (completion order).
    ``base(item)``: the fields a row starts with; ``on_failure``: fields a row gets when
    ``work`` raises. ``aclose`` is awaited at the end inside this loop (where async clients
    live). ``max_consecutive_failures`` > 0 arms the circuit breaker."""
    t_start = time.perf_counter()

    async def go() -> None:
        sem = asyncio.Semaphore(concurrency)
        queue = iter(items)
        # A bounded window of tasks (not one per item up front: 100k items would be 100k
        # coroutines), each row appended the moment it exists, in completion order: one slow
        # item never holds back the rows finished after it (readers sort by id, never by line).
        window = max(1, concurrency) * 2
        running: dict[asyncio.Task, int] = {}  # task -> its item's position (ties keep item order)
        consecutive, started = 0, itertools.count()

        def top_up() -> None:
            while len(running) < window and (item := next(queue, None)) is not None:
                running[asyncio.create_task(_run_one(phase, item, sem, work, base, on_failure))] = next(started)

        try:
            with progress_bar(len(items), desc or phase, progress) as bar:
                top_up()
                while running:
                    finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                    for task in sorted(finished, key=running.__getitem__):
                        del running[task]
                        row = task.result()
                        transport = bool(row.pop("_transport", False))
                        store.append(row)
                        status = row_status(row)
                        summary.tally(status)
                        bar.update()
                        consecutive = consecutive + 1 if (status == "failed" and transport) else 0
                        if max_consecutive_failures and consecutive >= max_consecutive_failures:
                            summary.stopped = _breaker_message(phase, consecutive, row, summary.ran, len(items))
                            log.error("%s", summary.stopped)
                            return
                    top_up()
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            if aclose is not None:
                await aclose()

    asyncio.run(go())
    summary.seconds = round(time.perf_counter() - t_start, 3)
    summary.file = str(store.path)
    return summary


async def _run_one(phase: str, item: BenchmarkItem, sem: asyncio.Semaphore, work: Callable[[BenchmarkItem], Any],
                   base: Callable[[BenchmarkItem], dict], on_failure: dict | None) -> dict:
    """One item's row: ``base(item)`` plus what ``work`` returned, or ``on_failure`` and the
    error when it raised (a full disk and :class:`OrigError` are raised: they stop the phase)."""
    row = base(item)
    async with sem:
        t0 = time.perf_counter()
        try:
            # sync work (the generator) runs in a thread, so finished rows are written
            # while the next item computes, not in bursts after it
            fields = (await work(item) if inspect.iscoroutinefunction(work)
                      else await maybe_await(await asyncio.to_thread(work, item)))
            row.update(fields)
            row.setdefault("status", "ok")
            row.setdefault("error", None)
        except Exception as exc:  # recorded in the row; the run goes on
            if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
                where = exc.filename or f"the results of {item.id}"
                raise DiskWriteError(f"{phase}: cannot write {where}: {exc.strerror or exc}",
                                     hint="rows already written are intact; free space, then rerun the "
                                     "same command to resume") from exc
            if isinstance(exc, OrigError):
                raise
            row.update(on_failure or {})
            row.update(status="failed", error=error_text(exc), _transport=is_transport_error(exc))
        timing = row.get("timing") or {}
        row["timing"] = {"seconds": round(time.perf_counter() - t0, 3), **timing}
    if row["status"] == "failed":
        log.warning("%s failed on %s: %s", phase, item.id, str(row.get("error"))[:300])
    return row


def _breaker_message(phase: str, consecutive: int, row: dict, ran: int, total: int) -> str:
    return (f"{phase}: stopped after {consecutive} consecutive items whose server did not answer (last: "
            f"{str(row.get('error'))[:200]}); {ran} row(s) written, {total - ran} item(s) not run. Fix the "
            "server, then rerun the same command with --retry-errors to resume")


def summary_line(summary: PhaseSummary) -> str:
    """One readable line for a phase summary (``orig eval`` prints it; ``--json`` prints the dict):
    ``judge: ran 3 (ok 2, degraded 0, failed 1), skipped 5, waiting 0 in 12.3 s -> judge.jsonl``."""
    s = summary
    parts = f"{s.phase}: ran {s.ran} (ok {s.ok}, degraded {s.degraded}, failed {s.failed})"
    if s.skipped:
        earlier = ", ".join(f"{k} {v}" for k, v in sorted(s.earlier.items()))
        parts += f", skipped {s.skipped} already done" + (f" ({earlier})" if earlier else "")
    if s.waiting:
        parts += f", {s.waiting} waiting for the previous phase"
    parts += f" in {s.seconds:.1f} s"
    if s.file:
        parts += f" -> {s.file}"
    if s.stopped:
        parts += f"; STOPPED: {s.stopped}"
    return parts
