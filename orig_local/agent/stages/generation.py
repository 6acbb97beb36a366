"""Image generation (paper §3.3): P̂ and the ordered references go to the generator, when one
is configured. No backbone call; a generator that raises is recorded (the run keeps its
prompt and references), never re-raised."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from orig_local.agent.registry import StageSpec
from orig_local.agent.stages.base import StageContext
from orig_local.agent.trace import StageRecord

log = logging.getLogger(__name__)

SPEC = StageSpec(name="generation", doing="generating the image", order=90)


async def generate(ctx: StageContext, generator: Any, result: Any, lock: asyncio.Lock) -> None:
    """Generate ``result``'s image (an AgentResult: ``final_prompt``, ``references``), one image
    at a time per ``lock`` (one pipeline); sets ``result.generation``."""
    from orig_local.generation.base import GenerationRequest

    refs = [v.image for v in result.references]
    request = GenerationRequest(prompt=result.final_prompt, references=refs, seed=ctx.config.seed)
    record = StageRecord(stage="generation", step="generate", round=ctx.round,
                         started_s=ctx.trace.elapsed(), evidence_ids=[v.id for v in result.references])
    start = time.perf_counter()
    ctx.trace.starting("generation", ctx.round)
    async with lock:
        try:
            result.generation = await asyncio.to_thread(generator.generate, request)
            record.notes = list(result.generation.notes)
            record.output = {"references_used": result.generation.references_used}
        except Exception as exc:  # a generator failure must not lose the run's prompt
            log.exception("generation failed")
            record.error = f"{type(exc).__name__}: {exc}"
    record.latency_s = time.perf_counter() - start
    ctx.trace.add(record)
