"""Phase 4: retrieval accuracy (paper Eq. 12) - each gold fact judged against the agent's
evidence -> retrieval.jsonl."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Sequence

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import progress_bar, error_text, phase_store
from orig_local.evaluation.rundir import read_phase

log = logging.getLogger(__name__)


def run_retrieval_phase(items: Sequence[BenchmarkItem], run_dir: Path, judge, *, judge_name: str | None = None,
                        concurrency: int = 16, max_chars: int = 8000, max_images: int = 4,
                        shard=(0, 1), progress=True, retry_errors=False, close: bool = False) -> dict:
    """Retrieval accuracy (paper Eq. 12): each gold fact judged against the agent's evidence."""
    import json

    from orig_local.evaluation.scoring import retrieval_accuracy

    run_dir = Path(run_dir)
    agent_rows = read_phase(run_dir, "agent")
    store, done = phase_store(run_dir, "retrieval", shard, judge_name, retry_errors)
    todo = [it for it in items if it.id not in done and it.id in agent_rows and it.facts]

    async def one(item: BenchmarkItem, sem: asyncio.Semaphore) -> dict:
        a = agent_rows[item.id]
        row: dict[str, Any] = {"id": item.id, "category": item.category, "judge": judge.name}
        async with sem:
            try:
                if a.get("error"):
                    raise RuntimeError(f"agent phase failed: {a['error']}")
                texts, images = [], []
                if a.get("evidence"):
                    ev = json.loads((run_dir / a["evidence"]).read_text(encoding="utf-8"))
                    texts, images = ev.get("texts", []), [run_dir / p for p in ev.get("images", [])]
                verdicts = await asyncio.gather(*(
                    judge.judge_fact(f, texts, images, max_chars=max_chars, max_images=max_images)
                    for f in item.facts))
                acc = retrieval_accuracy(v.correct for v in verdicts)
                row.update(facts=[{**v.to_row(), "text": f.text} for v, f in zip(verdicts, item.facts)],
                           accuracy=None if acc != acc else acc,
                           n_errors=sum(v.error is not None for v in verdicts), error=None)
            except Exception as exc:  # recorded in the row; the run goes on
                row.update(facts=[], accuracy=None, error=error_text(exc))
        return row

    async def go():
        sem = asyncio.Semaphore(concurrency)
        tasks = [asyncio.create_task(one(it, sem)) for it in todo]
        with progress_bar(len(todo), "retrieval", progress) as bar:
            for task in tasks:
                store.append(await task)
                bar.update()
        if close:
            await judge.chat.aclose()

    asyncio.run(go())
    return {"phase": "retrieval", "ran": len(todo)}
