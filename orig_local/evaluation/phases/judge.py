"""Phase 3: the judge answers every question about every generated image -> judge.jsonl."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import phase_store
from orig_local.evaluation.phases.loop import PhaseSummary, judged, pending, row_status, run_items, verdict_status
from orig_local.evaluation.rundir import read_phase

if TYPE_CHECKING:
    from orig_local.evaluation.judge import Judge

log = logging.getLogger(__name__)


def run_judge_phase(items: Sequence[BenchmarkItem], run_dir: Path, judge: Judge, *, judge_name: str | None = None,
                    concurrency: int = 16, shard: tuple[int, int] = (0, 1), progress: bool = True,
                    retry_errors: bool = False, retry_degraded: bool = False, max_consecutive_failures: int = 0, close: bool = False) -> PhaseSummary:
    """Every question of every generated image -> judge.jsonl (or judge-<name>.jsonl).

    An item is failed when a question got no reply from the judge server, or every question
    errored; degraded when some questions errored (unparseable reply, missing reference)."""
    from orig_local.evaluation.scoring import prompt_score

    run_dir = Path(run_dir)
    gen_rows = read_phase(run_dir, "generate")
    store, done = phase_store(run_dir, "judge", shard, judge_name, retry_errors, retry_degraded)
    todo, summary = pending("judge", items, done, gen_rows, "generate")
    replies = {"replies": 0, "from_cache": 0}  # judge verdicts this invocation, and cache hits

    async def work(item: BenchmarkItem) -> dict:
        g = gen_rows[item.id]
        if row_status(g) == "failed" or not g.get("image"):
            raise RuntimeError(f"no image: {g.get('error') or 'generate row has no image'}")
        verdicts = await judge.judge_item(item, run_dir / g["image"])
        replies["replies"] += sum(1 for v in verdicts if v.raw)
        replies["from_cache"] += sum(1 for v in verdicts if v.cached)
        # A graded rubric verdict (WISE's WiScore) has no right/wrong: left out of S_i.
        ps = prompt_score(item.id, item.category, [(v.concept, v.correct) for v in verdicts
                                                   if v.correct is not None or v.error])
        rows = [{**v.to_row(), "text": q.text, "reference_image": _absolute(q.reference_image)}
                for v, q in zip(verdicts, item.questions, strict=True)]
        return {"verdicts": rows, "score": ps.s if ps.total else None, "n_questions": len(verdicts),
                "n_errors": ps.errors, **verdict_status(verdicts, "question")}

    summary = run_items("judge", todo, store, summary, work, concurrency=concurrency, progress=progress,
                        max_consecutive_failures=max_consecutive_failures,
                        **judged("judge", judge, judge_name, close, {"verdicts": [], "score": None}))
    # how many replies came from the chat cache (run.json keeps them too)
    summary.replies, summary.from_cache = replies["replies"], replies["from_cache"]
    return summary


def _absolute(path: str | None) -> str | None:
    """A reference image's path as the gallery can find it later: absolute (a relative --data
    made it relative to the working directory of this command, which a report does not know)."""
    if not path or "://" in path:
        return path
    return os.path.abspath(path)
