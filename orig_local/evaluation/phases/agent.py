"""Phase 1: the agent (or a condition without one) turns each prompt into an extended prompt,
reference images, evidence and a trace -> agent.jsonl."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import (
    AgentFn,
    AgentOutput,
    maybe_await,
    phase_store,
    relative_to_run,
    save_image,
    write_text,
)
from orig_local.evaluation.phases.loop import PhaseSummary, pending, run_items

log = logging.getLogger(__name__)


def run_agent_phase(items: Sequence[BenchmarkItem], run_dir: Path, agent: AgentFn, *,
                    shard: tuple[int, int] = (0, 1), progress: bool = True, retry_errors: bool = False, retry_degraded: bool = False,
                    concurrency: int = 1, max_consecutive_failures: int = 0,
                    aclose: Callable[[], Awaitable] | None = None) -> PhaseSummary:
    """Extended prompt + references + evidence + trace per item -> agent.jsonl.

    ``concurrency`` > 1 runs that many (async) agent calls at once - a vLLM backbone batches
    them - each row is written the moment it is finished. ``aclose`` is awaited at the end, inside
    the phase's event loop (where the backbone's HTTP client lives)."""
    run_dir = Path(run_dir)
    store, done = phase_store(run_dir, "agent", shard, retry_errors=retry_errors, retry_degraded=retry_degraded)
    todo, summary = pending("agent", items, done)
    replies = {"replies": 0, "from_cache": 0}  # backbone replies this invocation, and cache hits

    async def work(item: BenchmarkItem) -> dict:
        out = await maybe_await(agent(item))
        for totals in (out.stages or {}).values():
            replies["replies"] += int(totals.get("calls") or 0)
            replies["from_cache"] += int(totals.get("cached") or 0)
        row = _agent_row(item, out, run_dir)
        status = "failed" if out.error else out.status
        row.update(status=status, error=out.error or (out.failure if status == "failed" else None),
                   _transport=out.transport)
        if status == "degraded":
            row["warning"] = out.failure
        return row

    summary = run_items("agent", todo, store, summary, work,
                        base=lambda it: {"id": it.id, "category": it.category, "prompt": it.prompt},
                        concurrency=concurrency, progress=progress,
                        max_consecutive_failures=max_consecutive_failures, aclose=aclose)
    # how many replies came from the chat cache (run.json keeps them too)
    summary.replies, summary.from_cache = replies["replies"], replies["from_cache"]
    return summary


def _agent_row(item: BenchmarkItem, out: AgentOutput, run_dir: Path) -> dict:
    import json

    refs = [relative_to_run(save_image(img, run_dir / "refs" / item.id / f"{j}.png"), run_dir)
            for j, img in enumerate(out.references)]
    evidence = None
    if out.evidence_texts or out.evidence_images:
        ev_images = [relative_to_run(save_image(img, run_dir / "evidence" / item.id / f"{j}.png"), run_dir)
                     for j, img in enumerate(out.evidence_images)]
        path = write_text(run_dir / "evidence" / f"{item.id}.json",
                          json.dumps({"texts": list(out.evidence_texts), "images": ev_images}, ensure_ascii=False))
        evidence = relative_to_run(path, run_dir)
    trace = None
    if out.trace is not None:
        path = write_text(run_dir / "traces" / f"{item.id}.json", json.dumps(out.trace, ensure_ascii=False))
        trace = relative_to_run(path, run_dir)
    return {
        "final_prompt": out.final_prompt, "final_prompt_words": len(out.final_prompt.split()),
        "references": refs, "evidence": evidence, "trace": trace, "stages": out.stages,
        "rounds": out.rounds, "iterations": out.iterations, "stop_reason": out.stop_reason,
        "notes": out.notes,
    }
