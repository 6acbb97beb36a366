"""Phase 2: one image per prompt from its agent row -> images/<id>.png + generate.jsonl."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import phase_store, relative_to_run, save_image
from orig_local.evaluation.phases.loop import PhaseSummary, pending, row_status, run_items
from orig_local.evaluation.rundir import read_phase

if TYPE_CHECKING:
    from orig_local.generation.base import Generator

log = logging.getLogger(__name__)


def run_generate_phase(items: Sequence[BenchmarkItem], run_dir: Path, generator: Generator, *, seed: int = 0,
                       shard: tuple[int, int] = (0, 1), progress: bool = True, retry_errors: bool = False, retry_degraded: bool = False,
                       max_consecutive_failures: int = 0) -> PhaseSummary:
    """One image per item from its agent row -> images/<id>.png + generate.jsonl."""
    from PIL import Image

    from orig_local.generation.base import GenerationRequest

    run_dir = Path(run_dir)
    agent_rows = read_phase(run_dir, "agent")
    store, done = phase_store(run_dir, "generate", shard, retry_errors=retry_errors, retry_degraded=retry_degraded)
    todo, summary = pending("generate", items, done, agent_rows, "agent")

    def work(item: BenchmarkItem) -> dict:
        a = agent_rows[item.id]
        if row_status(a) == "failed":
            raise RuntimeError(f"agent phase failed: {a.get('error')}")
        refs = []
        for ref_path in a.get("references") or []:
            with Image.open(run_dir / ref_path) as im:
                refs.append(im.convert("RGB"))
        result = generator.generate(GenerationRequest(prompt=a["final_prompt"], references=refs, seed=seed))
        path = save_image(result.image, run_dir / "images" / f"{item.id}.png")
        return {"image": relative_to_run(path, run_dir), "references_used": result.references_used,
                "notes": list(result.notes), "params": _jsonable(result.params),
                "generator": getattr(generator, "name", None), "status": "ok", "error": None,
                "timing": {"generator_seconds": round(float(result.seconds), 3)}}

    return run_items("generate", todo, store, summary, work,
                     base=lambda it: {"id": it.id, "category": it.category, "image": None, "seed": seed},
                     progress=progress, max_consecutive_failures=max_consecutive_failures)


def _jsonable(value: Any):
    import json

    try:
        json.dumps(value)
        return value
    except TypeError:
        return {k: repr(v) for k, v in dict(value).items()} if isinstance(value, dict) else repr(value)
