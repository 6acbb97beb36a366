"""Phase 1: the agent (or a condition without one) turns each prompt into an extended prompt,
reference images, evidence and a trace -> agent.jsonl."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import (
    AgentFn, AgentOutput, progress_bar, error_text, maybe_await, phase_store, relative_to_run, save_image,
)

log = logging.getLogger(__name__)


def run_agent_phase(items: Sequence[BenchmarkItem], run_dir: Path, agent: AgentFn, *,
                    shard=(0, 1), progress=True, retry_errors=False, concurrency: int = 1,
                    aclose: Callable[[], Awaitable] | None = None) -> dict:
    """Extended prompt + references + evidence + trace per item -> agent.jsonl.

    ``concurrency`` > 1 runs that many (async) agent calls at once - a vLLM backbone batches
    them - while rows are still written in item order. ``aclose`` is awaited at the end, inside
    the phase's event loop (where the backbone's HTTP client lives)."""
    run_dir = Path(run_dir)
    store, done = phase_store(run_dir, "agent", shard, retry_errors=retry_errors)
    todo = [it for it in items if it.id not in done]
    errors = 0

    async def one(item: BenchmarkItem, sem: asyncio.Semaphore) -> dict:
        t0 = time.perf_counter()
        row: dict[str, Any] = {"id": item.id, "category": item.category, "prompt": item.prompt}
        async with sem:
            try:
                out = await maybe_await(agent(item))
                row.update(_agent_row(item, out, run_dir))
                row["error"] = out.error
            except Exception as exc:  # recorded in the row; the run goes on
                log.warning("agent failed on %s: %s", item.id, error_text(exc), exc_info=log.isEnabledFor(logging.DEBUG))
                row["error"] = error_text(exc)
        row["timing"] = {"seconds": round(time.perf_counter() - t0, 3)}
        return row

    async def go():
        nonlocal errors
        sem = asyncio.Semaphore(concurrency)
        try:
            tasks = [asyncio.create_task(one(it, sem)) for it in todo]
            with progress_bar(len(todo), "agent", progress) as bar:
                for task in tasks:
                    row = await task
                    errors += bool(row.get("error"))
                    store.append(row)
                    bar.update()
        finally:
            if aclose is not None:
                await aclose()

    asyncio.run(go())
    return {"phase": "agent", "skipped": len(items) - len(todo), "ran": len(todo), "errors": errors}


def _agent_row(item: BenchmarkItem, out: AgentOutput, run_dir: Path) -> dict:
    import json

    refs = [relative_to_run(save_image(img, run_dir / "refs" / item.id / f"{j}.png"), run_dir)
            for j, img in enumerate(out.references)]
    evidence = None
    if out.evidence_texts or out.evidence_images:
        ev_images = [relative_to_run(save_image(img, run_dir / "evidence" / item.id / f"{j}.png"), run_dir)
                     for j, img in enumerate(out.evidence_images)]
        path = run_dir / "evidence" / f"{item.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"texts": list(out.evidence_texts), "images": ev_images},
                                   ensure_ascii=False), encoding="utf-8")
        evidence = relative_to_run(path, run_dir)
    trace = None
    if out.trace is not None:
        path = run_dir / "traces" / f"{item.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out.trace, ensure_ascii=False), encoding="utf-8")
        trace = relative_to_run(path, run_dir)
    return {
        "final_prompt": out.final_prompt, "final_prompt_words": len(out.final_prompt.split()),
        "references": refs, "evidence": evidence, "trace": trace, "stages": out.stages,
        "rounds": out.rounds, "iterations": out.iterations, "stop_reason": out.stop_reason,
        "notes": out.notes,
    }
