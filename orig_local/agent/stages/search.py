"""The agent's web search step: modality-specific retrieval (paper Eq. 2, App. A), traced as
stage ``search`` (``retrieval`` in traces written before; they still load, renamed).

Text: top-10 hits per query; the backbone picks the 2 most relevant from title + snippet; those
pages are read in full. Images: top-10 hits per query; fetched best-ranked first until 5 have
downloaded and are unique. Every query of a round runs concurrently (:func:`retrieve_round`);
within a query, the reads and fetches run concurrently too. Search, read and fetch failures go
into the trace; nothing here raises for web trouble.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest
from orig_local.agent.stages.base import StageContext
from orig_local.agent.trace import Stage, StageRecord
from orig_local.agent.untrusted import delimit, drop_instructions
from orig_local.imagehash import fingerprint
from orig_local.retrieval.base import FetchFailure, SearchError


class PageSelection(BaseModel):
    """Which search results to read in full."""

    reason: str = Field("", description="one sentence on why these results are the most useful")
    chosen: list[int] = Field(description="result numbers of the best pages, best first", max_length=10)


def _simulate(req: SimRequest) -> dict:
    return {"reason": "most specific", "chosen": [1, 2]}


SPEC = StageSpec(
    name="search", doing="searching and reading", order=30,
    calls=(Call("select_pages", PageSelection, _simulate, reads=frozenset({"query", "result"}), example={
        "query": '<data id="Q">q</data>', "n_pages": 2, "results": '<data id="R1">T\nhttps://x.invalid\nsnippet</data>'}),),
)


class RetrievedPage(BaseModel):
    query: str
    url: str
    title: str = ""
    text: str
    round: int


@dataclass
class RetrievedImage:
    image: Any  # PIL RGB
    bytes_sha256: str
    url: str
    page_url: str | None
    title: str
    query: str
    round: int
    dhash: int | None = None


class RoundRetrieval(BaseModel):
    """Raw evidence of one round (R^t and R^v), before coarse filtering."""

    model_config = {"arbitrary_types_allowed": True}

    pages: list[RetrievedPage] = Field(default_factory=list)
    images: list[Any] = Field(default_factory=list)  # RetrievedImage
    searches: int = 0
    failed_searches: int = 0  # searches that returned no hits and reported failures


def failure_dict(failure: Any) -> dict[str, Any]:
    """A search/read/fetch failure as JSON for the trace, whatever its type."""
    if isinstance(failure, dict):
        return dict(failure)
    if hasattr(failure, "model_dump"):
        return failure.model_dump(mode="json")
    if dataclasses.is_dataclass(failure) and not isinstance(failure, type):
        return {k: str(v) for k, v in dataclasses.asdict(failure).items()}
    return {"detail": str(failure)}


async def _search(ctx: StageContext, modality: str, query: str, k: int, stage: Stage) -> tuple[list, StageRecord]:
    """One traced search. Returns (hits, record); a raised SearchError becomes a failure."""
    started_s = ctx.trace.elapsed()
    start = time.perf_counter()
    hits: list = []
    failures: list[dict[str, Any]] = []
    assert ctx.retriever is not None, "a retrieving condition has a retriever"
    try:
        fn = ctx.retriever.search_text if modality == "text" else ctx.retriever.search_images
        outcome = await fn(query, k=k)
        hits = list(outcome.hits)[:k]
        failures = [failure_dict(f) for f in getattr(outcome, "failures", [])]
    except SearchError as exc:
        failures = [{"kind": type(exc).__name__, "detail": str(exc)}]
    url_of = (lambda h: h.url) if modality == "text" else (lambda h: h.image_url)
    # the record made once, complete: each pydantic field assignment costs ~3 us
    record = StageRecord(
        stage=stage, step=f"search_{modality}", round=ctx.round, started_s=started_s,
        latency_s=time.perf_counter() - start, failures=failures,
        searches_text=int(modality == "text"), searches_image=int(modality != "text"),
        output={"query": query, "hits": [{"rank": h.rank, "title": h.title, "url": url_of(h)} for h in hits]},
        error=None if hits else "no results" + (f" ({len(failures)} failure(s))" if failures else ""))
    ctx.searches += 1
    if not hits:
        ctx.search_failures += int(_service_failed(record))
    ctx.trace.add(record)
    return hits, record


def _service_failed(record: StageRecord) -> bool:
    """No hits because the service failed (not merely an empty answer)."""
    return any(f.get("kind") != "empty" for f in record.failures)


async def search_snippets(ctx: StageContext, query: str, stage: Stage) -> tuple[list, bool]:
    """Text search only (the bootstrap's light retrieval). Returns (hits, search_failed)."""
    hits, record = await _search(ctx, "text", query, ctx.config.text_top_k, stage)
    return hits, (not hits and _service_failed(record))


async def retrieve_text(ctx: StageContext, query: str) -> tuple[list[RetrievedPage], bool]:
    """Search, let the backbone pick pages from title + snippet, read them in full."""
    cfg = ctx.config
    hits, record = await _search(ctx, "text", query, cfg.text_top_k, "search")
    failed = not hits and _service_failed(record)
    hits = [h for h in hits if h.url not in ctx.read_urls]
    if not hits:
        return [], failed

    chosen = hits
    if len(hits) > cfg.pages_per_query:
        listed: list[int] = []

        def results(left: int) -> str:  # best-ranked first, as many as the window holds
            # instruction-like titles/snippets never reach the model, even as data
            lines = [delimit(f"R{i}", f"{drop_instructions(h.title)[0]}\n{h.url}\n{drop_instructions(h.snippet or '')[0]}")
                     for i, h in enumerate(hits, 1)]
            listed[:] = range(1, ctx.budget.fitting(lines, left, at_least_one=True) + 1)
            return "\n".join(lines[: len(listed)])

        selection, rec = await ctx.ask(
            stage="search", step="select_pages", template="select_pages", schema=PageSelection,
            variables={"query": delimit("Q", query), "n_pages": cfg.pages_per_query}, fit=[("results", results)],
        )
        if len(listed) < len(hits):
            rec.notes.append(f"{len(hits) - len(listed)} lower-ranked result(s) not listed (window)")
        picked = [] if selection is None else [n for n in dict.fromkeys(selection.chosen) if n in listed]
        if picked:
            chosen = [hits[n - 1] for n in picked]
        else:
            rec.notes.append("no usable selection; reading the top-ranked results instead")
    chosen = chosen[: cfg.pages_per_query]
    for h in chosen:
        ctx.read_urls.add(h.url)

    async def read(hit) -> RetrievedPage | None:
        rec = StageRecord(stage="search", step="read_page", round=ctx.round, page_reads=1,
                          started_s=ctx.trace.elapsed(), output={"url": hit.url})
        start = time.perf_counter()
        assert ctx.retriever is not None
        page = await ctx.retriever.read_page(hit.url, query=query)  # a long page keeps what matches
        rec.latency_s = time.perf_counter() - start
        ctx.trace.add(rec)
        if isinstance(page, FetchFailure):
            rec.failures = [failure_dict(page)]
            rec.error = f"read failed: {page.kind}"
            return None
        if not page.text.strip():
            rec.error = "read failed: empty page"
            return None
        rec.output = {"url": hit.url, "title": page.title or hit.title, "chars": len(page.text)}
        return RetrievedPage(query=query, url=page.final_url or hit.url, title=page.title or hit.title,
                             text=page.text, round=ctx.round)

    pages = await asyncio.gather(*(read(h) for h in chosen))
    return [p for p in pages if p is not None], failed


def dhash_max_distance(ctx: StageContext) -> int:
    """``retrieval.fetch.dhash_max_distance``: the retriever's fetch config carries it (one
    setting for the retriever, this check and the deduper); its default for other retrievers."""
    from orig_local.retrieval.config import FetchConfig

    fetch = getattr(ctx.retriever, "fetch_config", None)
    return fetch.dhash_max_distance if isinstance(fetch, FetchConfig) else FetchConfig().dhash_max_distance


def _duplicate_reason(ctx: StageContext, bytes_sha256: str, fp: Any) -> str | None:
    """Fetch-time duplicate check against every image fetched in this run: the same bytes
    (sha256), or the same picture resized/recompressed (guarded dHash,
    :func:`~orig_local.imagehash.same_picture`) that is no better resolved than the copy
    already here. An equally or better resolved copy is kept when a deduper follows: it picks
    the best copy of the group with both pictures in hand (arrival order must not decide)."""
    from orig_local.imagehash import SAME_RESOLUTION, same_picture

    if bytes_sha256 in ctx.seen_images:
        return "exact copy (same bytes, sha256) of an image fetched in this run"
    max_bits = dhash_max_distance(ctx)
    for seen in ctx.seen_images.values():
        if seen is None:
            continue
        same, why = same_picture(fp, seen, max_bits)
        if not same:
            continue
        if ctx.dedup is not None and fp.width * fp.height >= SAME_RESOLUTION * seen.width * seen.height:
            continue  # possibly the better copy: the deduper decides
        return f"perceptual copy ({why}) of an image fetched in this run, no better resolved"
    return None


def _fingerprints(fetched: list) -> list:
    """The fingerprint of each fetched picture, in order (runs in a worker thread)."""
    return [fingerprint(res.image, getattr(res, "dhash", None)) for res in fetched]


async def retrieve_images(ctx: StageContext, query: str) -> tuple[list[RetrievedImage], bool]:
    """Search images; fetch best-ranked first, in concurrent waves, until enough are unique."""
    cfg = ctx.config
    hits, record = await _search(ctx, "image", query, cfg.image_top_k, "search")
    failed = not hits and _service_failed(record)
    kept: list[RetrievedImage] = []
    rec = StageRecord(stage="search", step="fetch_images", round=ctx.round,
                      started_s=ctx.trace.elapsed(), output={"query": query})
    start = time.perf_counter()
    i = 0
    while len(kept) < cfg.images_per_query and i < len(hits):
        wave = hits[i: i + cfg.images_per_query - len(kept)]
        i += len(wave)
        # dedup=False skips only the retriever's *shared* check (it serves many prompts at
        # once); this run's own sha256 + dHash check follows, before anything else sees them.
        retriever = ctx.retriever
        assert retriever is not None
        results = await asyncio.gather(*(retriever.fetch_image(h.image_url, page_url=h.page_url, dedup=False)
                                         for h in wave))
        rec.image_fetches += len(wave)
        # hashing pictures off the event loop (PIL releases the GIL): the other prompts in flight
        # keep running meanwhile. One worker call per wave, not per picture: each hop to a
        # thread costs the loop a task, a future and a wake-up (issue 22, 128 in flight)
        fetched = [res for res in results if not isinstance(res, FetchFailure)]
        fps = await asyncio.to_thread(_fingerprints, fetched) if fetched else []
        fp_iter = iter(fps)
        for hit, res in zip(wave, results, strict=True):  # rank order
            if isinstance(res, FetchFailure):
                rec.failures.append(failure_dict(res))
                continue
            fp = next(fp_iter)
            dhash = fp.dhash
            why = _duplicate_reason(ctx, res.bytes_sha256, fp)
            if why is not None:
                rec.failures.append({"url": hit.image_url, "kind": "duplicate", "detail": why})
                continue
            ctx.seen_images[res.bytes_sha256] = fp
            kept.append(RetrievedImage(
                image=res.image, bytes_sha256=res.bytes_sha256, url=res.url or hit.image_url,
                page_url=res.page_url or hit.page_url, title=hit.title, query=query,
                round=ctx.round, dhash=dhash,
            ))
    rec.latency_s = time.perf_counter() - start
    rec.output = {"query": query, "kept": [k.url for k in kept]}
    if hits:
        ctx.trace.add(rec)
    return kept, failed


async def retrieve_round(ctx: StageContext, text_queries: list[str], image_queries: list[str]) -> RoundRetrieval:
    """All of a round's queries at once; near-duplicate images dropped before any VLM sees them."""
    for q in text_queries + image_queries:
        ctx.asked_queries.add(q.lower().strip())
    tasks: list[Awaitable[tuple[Sequence[RetrievedPage | RetrievedImage], bool]]] = [
        retrieve_text(ctx, q) for q in text_queries]
    tasks += [retrieve_images(ctx, q) for q in image_queries]
    results = await asyncio.gather(*tasks)
    out = RoundRetrieval(searches=len(tasks))
    for items, failed in results:
        out.failed_searches += int(failed)
        for item in items:
            if isinstance(item, RetrievedPage):
                out.pages.append(item)
            else:
                out.images.append(item)
    out.images = await drop_near_duplicates(ctx, out.images)
    return out


async def drop_near_duplicates(ctx: StageContext, images: list[RetrievedImage]) -> list[RetrievedImage]:
    """Near-duplicate removal against K and within the new set (if a deduper is configured):
    exact and dHash copies of images fetched this run are already gone at fetch time; the
    deduper repeats both checks against K and adds CLIP similarity (crops, re-framings). Images already in K are never
    dropped; each dropped candidate's reason goes into the trace."""
    if ctx.dedup is None or not images:
        return images
    existing = [v.image for v in ctx.knowledge.images if v.image is not None]
    start = time.perf_counter()
    dropped: list[dict[str, Any]] = []
    if hasattr(ctx.dedup, "dedup"):  # orig_local.embeddings.dedup.ImageDeduplicator
        outcome = await asyncio.to_thread(ctx.dedup.dedup, [im.image for im in images], existing)
        kept_new = [images[i] for i in outcome.kept]
        for d in outcome.decisions:
            if not d.kept:
                dropped.append({"url": images[d.index].url, "reason": d.reason,
                                "similarity": d.similarity, "of_existing": d.duplicate_of_existing})
    else:  # a bare keep(images) -> indices deduper
        keep = await asyncio.to_thread(ctx.dedup.keep, existing + [im.image for im in images])
        kept_new = [images[i - len(existing)] for i in keep if i >= len(existing)]
        kept_ids = {id(im) for im in kept_new}
        dropped = [{"url": im.url} for im in images if id(im) not in kept_ids]
    ctx.trace.add(StageRecord(
        stage="search", step="dedup_images", round=ctx.round, started_s=ctx.trace.elapsed(),
        latency_s=time.perf_counter() - start,
        output={"candidates": len(images), "kept": len(kept_new), "dropped": dropped},
    ))
    return kept_new
