"""Phase 3: the judge answers every question about every generated image -> judge.jsonl."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any, Sequence

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import progress_bar, error_text, phase_store
from orig_local.evaluation.rundir import read_phase

log = logging.getLogger(__name__)


def run_judge_phase(items: Sequence[BenchmarkItem], run_dir: Path, judge, *, judge_name: str | None = None,
                    concurrency: int = 16, shard=(0, 1), progress=True, retry_errors=False,
                    close: bool = False) -> dict:
    """Every question of every generated image -> judge.jsonl (or judge-<name>.jsonl)."""
    from orig_local.evaluation.scoring import prompt_score

    run_dir = Path(run_dir)
    gen_rows = read_phase(run_dir, "generate")
    store, done = phase_store(run_dir, "judge", shard, judge_name, retry_errors)
    todo = [it for it in items if it.id not in done and it.id in gen_rows]
    waiting = sum(1 for it in items if it.id not in done and it.id not in gen_rows)
    if waiting:
        log.warning("judge: %d item(s) have no generate row yet (run --phase generate first)", waiting)
    errors = 0

    async def one(item: BenchmarkItem, sem: asyncio.Semaphore) -> dict:
        t0 = time.perf_counter()
        g = gen_rows[item.id]
        row: dict[str, Any] = {"id": item.id, "category": item.category, "judge": judge.name}
        async with sem:
            try:
                if g.get("error") or not g.get("image"):
                    raise RuntimeError(f"no image: {g.get('error') or 'generate row has no image'}")
                verdicts = await judge.judge_item(item, run_dir / g["image"])
                # A graded rubric verdict (WISE's WiScore) has no right/wrong: left out of S_i.
                ps = prompt_score(item.id, item.category, [(v.concept, v.correct) for v in verdicts
                                                           if v.correct is not None or v.error])
                rows = [{**v.to_row(), "text": q.text, "reference_image": q.reference_image}
                        for v, q in zip(verdicts, item.questions)]
                row.update(verdicts=rows, score=ps.s if ps.total else None,
                           n_questions=len(verdicts), n_errors=ps.errors, error=None)
            except Exception as exc:  # recorded in the row; the run goes on
                log.warning("judge failed on %s: %s", item.id, error_text(exc))
                row.update(verdicts=[], score=None, error=error_text(exc))
        row["timing"] = {"seconds": round(time.perf_counter() - t0, 3)}
        return row

    async def go():
        nonlocal errors
        sem = asyncio.Semaphore(concurrency)
        tasks = [asyncio.create_task(one(it, sem)) for it in todo]
        with progress_bar(len(todo), f"judge{'-' + judge_name if judge_name else ''}", progress) as bar:
            # Rows are written in item order (deterministic files) while items run concurrently.
            for task in tasks:
                row = await task
                errors += bool(row.get("error"))
                store.append(row)
                bar.update()
        if close:  # inside the loop that owns the judge's HTTP client
            await judge.chat.aclose()

    asyncio.run(go())
    return {"phase": "judge", "skipped": len(items) - len(todo) - waiting, "ran": len(todo),
            "errors": errors, "waiting": waiting}
