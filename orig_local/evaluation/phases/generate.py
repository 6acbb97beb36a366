"""Phase 2: one image per prompt from its agent row -> images/<id>.png + generate.jsonl."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Sequence

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import progress_bar, error_text, phase_store, relative_to_run, save_image
from orig_local.evaluation.rundir import read_phase

log = logging.getLogger(__name__)


def run_generate_phase(items: Sequence[BenchmarkItem], run_dir: Path, generator, *, seed: int = 0,
                       shard=(0, 1), progress=True, retry_errors=False) -> dict:
    """One image per item from its agent row -> images/<id>.png + generate.jsonl."""
    from PIL import Image

    from orig_local.generation.base import GenerationRequest

    run_dir = Path(run_dir)
    agent_rows = read_phase(run_dir, "agent")
    store, done = phase_store(run_dir, "generate", shard, retry_errors=retry_errors)
    todo = [it for it in items if it.id not in done]
    missing = [it.id for it in todo if it.id not in agent_rows]
    if missing:
        log.warning("generate: %d item(s) have no agent row yet (run --phase agent first): %s",
                    len(missing), ", ".join(missing[:5]))
    todo = [it for it in todo if it.id in agent_rows]
    errors = 0
    with progress_bar(len(todo), "generate", progress) as bar:
        for item in todo:
            t0 = time.perf_counter()
            a = agent_rows[item.id]
            row: dict[str, Any] = {"id": item.id, "category": item.category, "image": None, "seed": seed}
            try:
                if a.get("error"):
                    raise RuntimeError(f"agent phase failed: {a['error']}")
                refs = []
                for ref_path in a.get("references") or []:
                    with Image.open(run_dir / ref_path) as im:
                        refs.append(im.convert("RGB"))
                result = generator.generate(GenerationRequest(prompt=a["final_prompt"], references=refs, seed=seed))
                path = save_image(result.image, run_dir / "images" / f"{item.id}.png")
                row.update(image=relative_to_run(path, run_dir), references_used=result.references_used,
                           notes=list(result.notes), params=_jsonable(result.params),
                           generator=getattr(generator, "name", None), error=None)
                row["timing"] = {"seconds": round(time.perf_counter() - t0, 3),
                                 "generator_seconds": round(float(result.seconds), 3)}
            except Exception as exc:  # recorded in the row; the run goes on
                log.warning("generate failed on %s: %s", item.id, error_text(exc))
                row["error"] = error_text(exc)
                row["timing"] = {"seconds": round(time.perf_counter() - t0, 3)}
                errors += 1
            store.append(row)
            bar.update()
    return {"phase": "generate", "skipped": len(items) - len(todo), "ran": len(todo), "errors": errors,
            "waiting": len(missing)}


def _jsonable(value):
    import json

    try:
        json.dumps(value)
        return value
    except TypeError:
        return {k: repr(v) for k, v in dict(value).items()} if isinstance(value, dict) else repr(value)
