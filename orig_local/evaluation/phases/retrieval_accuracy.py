"""Phase 4: retrieval accuracy (paper Eq. 12) - each gold fact judged against the agent's
evidence -> retrieval.jsonl."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import phase_store
from orig_local.evaluation.phases.loop import PhaseSummary, judged, pending, row_status, run_items, verdict_status
from orig_local.evaluation.rundir import read_phase
from orig_local.llm.base import ImageRef

if TYPE_CHECKING:
    from orig_local.evaluation.judge import Judge

log = logging.getLogger(__name__)


def run_retrieval_phase(items: Sequence[BenchmarkItem], run_dir: Path, judge: Judge, *, judge_name: str | None = None,
                        concurrency: int = 16, max_chars: int = 8000, max_images: int = 4,
                        shard: tuple[int, int] = (0, 1), progress: bool = True, retry_errors: bool = False, retry_degraded: bool = False,
                        max_consecutive_failures: int = 0, close: bool = False) -> PhaseSummary:
    """Retrieval accuracy (paper Eq. 12): each gold fact judged against the agent's evidence."""
    import json

    from orig_local.evaluation.scoring import retrieval_accuracy

    run_dir = Path(run_dir)
    agent_rows = read_phase(run_dir, "agent")
    store, done = phase_store(run_dir, "retrieval", shard, judge_name, retry_errors, retry_degraded)
    todo, summary = pending("retrieval", items, done, agent_rows, "agent", eligible=lambda it: bool(it.facts))
    replies = {"replies": 0, "from_cache": 0}  # judge verdicts this invocation, and cache hits

    async def work(item: BenchmarkItem) -> dict:
        a = agent_rows[item.id]
        if row_status(a) == "failed":
            raise RuntimeError(f"agent phase failed: {a.get('error')}")
        texts, images = [], []
        if a.get("evidence"):
            ev = json.loads((run_dir / a["evidence"]).read_text(encoding="utf-8"))
            # one ImageRef per picture: every fact's request shares its encoding
            texts, images = ev.get("texts", []), [ImageRef(run_dir / p) for p in ev.get("images", [])]
        verdicts = await asyncio.gather(*(
            judge.judge_fact(f, texts, images, max_chars=max_chars, max_images=max_images)
            for f in item.facts))
        replies["replies"] += sum(1 for v in verdicts if v.raw)
        replies["from_cache"] += sum(1 for v in verdicts if v.cached)
        acc = retrieval_accuracy(v.correct for v in verdicts)
        return {"facts": [{**v.to_row(), "text": f.text} for v, f in zip(verdicts, item.facts, strict=True)],
                "accuracy": None if acc != acc else acc,
                "n_errors": sum(v.error is not None for v in verdicts), **verdict_status(verdicts, "fact")}

    summary = run_items("retrieval", todo, store, summary, work, concurrency=concurrency, progress=progress,
                        max_consecutive_failures=max_consecutive_failures,
                        **judged("retrieval", judge, judge_name, close, {"facts": [], "accuracy": None}))
    # how many replies came from the chat cache (run.json keeps them too)
    summary.replies, summary.from_cache = replies["replies"], replies["from_cache"]
    return summary
