"""Phased, resumable benchmark runs: agent -> generate -> judge (-> retrieval accuracy).

Each phase reads the previous phase's rows, skips ids already in its own JSONL, appends one
row per item as soon as it exists (see :mod:`orig_local.evaluation.store`), and records an
item's failure in its row instead of stopping. Phases run alone (``phases=["generate"]``), so
one GPU can hold the backbone, then the generator, then the judge. Components are passed in
(agent callable, :class:`~orig_local.generation.base.Generator`, :class:`Judge`); the ones not
passed are built from the config only when their phase runs.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.rundir import phase_file, read_phase
from orig_local.evaluation.store import JsonlStore

log = logging.getLogger(__name__)


@dataclass
class AgentOutput:
    """What the agent phase needs from any agent/condition for one prompt."""

    final_prompt: str
    references: list[Any] = field(default_factory=list)  # PIL images or paths, for the generator
    evidence_texts: list[str] = field(default_factory=list)  # retrieved text R^t (Eq. 12)
    evidence_images: list[Any] = field(default_factory=list)  # retrieved images R^v
    stages: dict[str, dict] = field(default_factory=dict)  # per-stage totals (calls, tokens, ...)
    rounds: int | None = None
    stop_reason: str | None = None
    trace: dict | None = None  # JSON-able trace, saved to traces/<id>.json
    notes: list[str] = field(default_factory=list)
    iterations: int | None = None  # retrieval iterations incl. bootstrap (paper Table 4 "Iters")
    error: str | None = None  # a failure the agent recovered from enough to report (row error)


AgentFn = Callable[[BenchmarkItem], "AgentOutput | Awaitable[AgentOutput]"]


# --------------------------------------------------------------------------- selection


def parse_shard(text: str | None) -> tuple[int, int]:
    """``"i/n"`` -> (i, n), 0 <= i < n."""
    if not text:
        return (0, 1)
    i, _, n = text.partition("/")
    try:
        i_, n_ = int(i), int(n)
    except ValueError:
        raise ValueError(f"--shard wants i/n, e.g. 0/4; got {text!r}") from None
    if not (n_ >= 1 and 0 <= i_ < n_):
        raise ValueError(f"--shard {text}: need 0 <= i < n")
    return (i_, n_)


def shard_from_env(env: dict | None = None) -> tuple[int, int] | None:
    """(RANK, WORLD_SIZE) when launched by ``accelerate launch`` / ``torchrun`` with >1 process."""
    env = os.environ if env is None else env
    try:
        rank, world = int(env.get("RANK", "0")), int(env.get("WORLD_SIZE", "1"))
    except ValueError:
        return None
    return (rank, world) if world > 1 else None


def select_items(items: Sequence[BenchmarkItem], ids: Sequence[str] | None = None,
                 classes: Sequence[str] | None = None, limit: int | None = None,
                 shard: tuple[int, int] = (0, 1)) -> list[BenchmarkItem]:
    """Filter by ids / classes, cut to ``limit``, then take shard i of n (every n-th item, so
    shards get a similar class mix)."""
    out = list(items)
    if ids:
        wanted = set(ids)
        out = [it for it in out if it.id in wanted]
    if classes:
        wanted_c = set(classes)
        out = [it for it in out if it.category in wanted_c]
    if limit is not None:
        out = out[:limit]
    i, n = shard
    return out[i::n]


# --------------------------------------------------------------------------- helpers


def _rel(path: Path, run_dir: Path) -> str:
    return os.path.relpath(path, run_dir)


def save_image(image: Any, path: Path) -> Path:
    """Write a PIL image (or copy an image file) atomically: temp file, then rename."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp" + path.suffix)
    if isinstance(image, (str, Path)):
        with Image.open(image) as im:
            im.convert("RGB").save(tmp)
    else:
        image.save(tmp)
    os.replace(tmp, path)
    return path


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:500]}"


def _bar(total: int, desc: str, progress: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="item", disable=not progress, dynamic_ncols=True)


def _store(run_dir: Path, phase: str, shard, judge_name=None, retry_errors=False) -> tuple[JsonlStore, set[str]]:
    """This shard's store, and the ids finished anywhere (main file or this shard file)."""
    store = JsonlStore(phase_file(run_dir, phase, judge_name, shard), drop_errors=retry_errors)
    done = set(store.done)
    if shard[1] > 1:
        main = JsonlStore(phase_file(run_dir, phase, judge_name), drop_errors=retry_errors)
        done |= main.done
    return store, done


async def _maybe_await(value):
    return await value if inspect.isawaitable(value) else value


# --------------------------------------------------------------------------- phases


def run_agent_phase(items: Sequence[BenchmarkItem], run_dir: Path, agent: AgentFn, *,
                    shard=(0, 1), progress=True, retry_errors=False, concurrency: int = 1,
                    aclose: Callable[[], Awaitable] | None = None) -> dict:
    """Extended prompt + references + evidence + trace per item -> agent.jsonl.

    ``concurrency`` > 1 runs that many (async) agent calls at once - a vLLM backbone batches
    them - while rows are still written in item order. ``aclose`` is awaited at the end, inside
    the phase's event loop (where the backbone's HTTP client lives)."""
    run_dir = Path(run_dir)
    store, done = _store(run_dir, "agent", shard, retry_errors=retry_errors)
    todo = [it for it in items if it.id not in done]
    errors = 0

    async def one(item: BenchmarkItem, sem: asyncio.Semaphore) -> dict:
        t0 = time.perf_counter()
        row: dict[str, Any] = {"id": item.id, "category": item.category, "prompt": item.prompt}
        async with sem:
            try:
                out = await _maybe_await(agent(item))
                row.update(_agent_row(item, out, run_dir))
                row["error"] = out.error
            except Exception as exc:  # recorded in the row; the run goes on
                log.warning("agent failed on %s: %s", item.id, _error(exc), exc_info=log.isEnabledFor(logging.DEBUG))
                row["error"] = _error(exc)
        row["timing"] = {"seconds": round(time.perf_counter() - t0, 3)}
        return row

    async def go():
        nonlocal errors
        sem = asyncio.Semaphore(concurrency)
        try:
            tasks = [asyncio.create_task(one(it, sem)) for it in todo]
            with _bar(len(todo), "agent", progress) as bar:
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

    refs = [_rel(save_image(img, run_dir / "refs" / item.id / f"{j}.png"), run_dir)
            for j, img in enumerate(out.references)]
    evidence = None
    if out.evidence_texts or out.evidence_images:
        ev_images = [_rel(save_image(img, run_dir / "evidence" / item.id / f"{j}.png"), run_dir)
                     for j, img in enumerate(out.evidence_images)]
        path = run_dir / "evidence" / f"{item.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"texts": list(out.evidence_texts), "images": ev_images},
                                   ensure_ascii=False), encoding="utf-8")
        evidence = _rel(path, run_dir)
    trace = None
    if out.trace is not None:
        path = run_dir / "traces" / f"{item.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out.trace, ensure_ascii=False), encoding="utf-8")
        trace = _rel(path, run_dir)
    return {
        "final_prompt": out.final_prompt, "final_prompt_words": len(out.final_prompt.split()),
        "references": refs, "evidence": evidence, "trace": trace, "stages": out.stages,
        "rounds": out.rounds, "iterations": out.iterations, "stop_reason": out.stop_reason,
        "notes": out.notes,
    }


def run_generate_phase(items: Sequence[BenchmarkItem], run_dir: Path, generator, *, seed: int = 0,
                       shard=(0, 1), progress=True, retry_errors=False) -> dict:
    """One image per item from its agent row -> images/<id>.png + generate.jsonl."""
    from PIL import Image

    from orig_local.generation.base import GenerationRequest

    run_dir = Path(run_dir)
    agent_rows = read_phase(run_dir, "agent")
    store, done = _store(run_dir, "generate", shard, retry_errors=retry_errors)
    todo = [it for it in items if it.id not in done]
    missing = [it.id for it in todo if it.id not in agent_rows]
    if missing:
        log.warning("generate: %d item(s) have no agent row yet (run --phase agent first): %s",
                    len(missing), ", ".join(missing[:5]))
    todo = [it for it in todo if it.id in agent_rows]
    errors = 0
    with _bar(len(todo), "generate", progress) as bar:
        for item in todo:
            t0 = time.perf_counter()
            a = agent_rows[item.id]
            row: dict[str, Any] = {"id": item.id, "category": item.category, "image": None, "seed": seed}
            try:
                if a.get("error"):
                    raise RuntimeError(f"agent phase failed: {a['error']}")
                refs = []
                for rel in a.get("references") or []:
                    with Image.open(run_dir / rel) as im:
                        refs.append(im.convert("RGB"))
                result = generator.generate(GenerationRequest(prompt=a["final_prompt"], references=refs, seed=seed))
                path = save_image(result.image, run_dir / "images" / f"{item.id}.png")
                row.update(image=_rel(path, run_dir), references_used=result.references_used,
                           notes=list(result.notes), params=_jsonable(result.params),
                           generator=getattr(generator, "name", None), error=None)
                row["timing"] = {"seconds": round(time.perf_counter() - t0, 3),
                                 "generator_seconds": round(float(result.seconds), 3)}
            except Exception as exc:  # recorded in the row; the run goes on
                log.warning("generate failed on %s: %s", item.id, _error(exc))
                row["error"] = _error(exc)
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


def run_judge_phase(items: Sequence[BenchmarkItem], run_dir: Path, judge, *, judge_name: str | None = None,
                    concurrency: int = 16, shard=(0, 1), progress=True, retry_errors=False,
                    close: bool = False) -> dict:
    """Every question of every generated image -> judge.jsonl (or judge-<name>.jsonl)."""
    from orig_local.evaluation.scoring import prompt_score

    run_dir = Path(run_dir)
    gen_rows = read_phase(run_dir, "generate")
    store, done = _store(run_dir, "judge", shard, judge_name, retry_errors)
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
                ps = prompt_score(item.id, item.category, [(v.concept, v.correct) for v in verdicts])
                rows = [{**v.to_row(), "text": q.text, "reference_image": q.reference_image}
                        for v, q in zip(verdicts, item.questions)]
                row.update(verdicts=rows, score=ps.s if ps.total else None,
                           n_questions=len(verdicts), n_errors=ps.errors, error=None)
            except Exception as exc:  # recorded in the row; the run goes on
                log.warning("judge failed on %s: %s", item.id, _error(exc))
                row.update(verdicts=[], score=None, error=_error(exc))
        row["timing"] = {"seconds": round(time.perf_counter() - t0, 3)}
        return row

    async def go():
        nonlocal errors
        sem = asyncio.Semaphore(concurrency)
        tasks = [asyncio.create_task(one(it, sem)) for it in todo]
        with _bar(len(todo), f"judge{'-' + judge_name if judge_name else ''}", progress) as bar:
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


def run_retrieval_phase(items: Sequence[BenchmarkItem], run_dir: Path, judge, *, judge_name: str | None = None,
                        concurrency: int = 16, max_chars: int = 8000, max_images: int = 4,
                        shard=(0, 1), progress=True, retry_errors=False, close: bool = False) -> dict:
    """Retrieval accuracy (paper Eq. 12): each gold fact judged against the agent's evidence."""
    import json

    from orig_local.evaluation.scoring import retrieval_accuracy

    run_dir = Path(run_dir)
    agent_rows = read_phase(run_dir, "agent")
    store, done = _store(run_dir, "retrieval", shard, judge_name, retry_errors)
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
                row.update(facts=[], accuracy=None, error=_error(exc))
        return row

    async def go():
        sem = asyncio.Semaphore(concurrency)
        tasks = [asyncio.create_task(one(it, sem)) for it in todo]
        with _bar(len(todo), "retrieval", progress) as bar:
            for task in tasks:
                store.append(await task)
                bar.update()
        if close:
            await judge.chat.aclose()

    asyncio.run(go())
    return {"phase": "retrieval", "ran": len(todo)}
