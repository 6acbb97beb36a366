"""Multimodal knowledge accumulation (paper Eq. 3-5): coarse filtering into K.

First text: each page read this round is checked against P and K (aligned with the prompt,
consistent with what K holds) and reduced to short facts; a long page is shown as its passages
most related to the query and sub-questions (:mod:`orig_local.agent.passages`). Then images: the candidates are shown
to the VLM (downscaled to ``images.image_filter`` pixels) beside the text evidence (K after this round's text) and kept only if they fit it.
Both steps run their calls concurrently. With ``accumulation_filter`` off (paper Table 5, "w.o.
Knowledge Accumulation") everything retrieved enters K unfiltered: pages as whole passages (each
truncated to an equal share of the token budget wherever K is rendered), all images. Sentences
that read like instructions to the model are removed from pages either way.
"""

from __future__ import annotations

import asyncio
import re

from pydantic import BaseModel, Field

from orig_local.agent.budget import truncate_to_tokens
from orig_local.agent.gate import UNDESCRIBED, clean_field
from orig_local.agent.knowledge import Source
from orig_local.agent.passages import select_passages
from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest
from orig_local.agent.stages.base import StageContext
from orig_local.agent.stages.search import RetrievedImage, RetrievedPage, RoundRetrieval
from orig_local.agent.untrusted import delimit, drop_instructions, looks_like_instruction, sanitize


class TextFilter(BaseModel):
    # reasoning first: under guided decoding the model writes fields in schema order
    reason: str = Field("", description="one or two sentences on relevance and consistency")
    relevant: bool = Field(description="the page is about what the prompt shows")
    consistent: bool = Field(description="the page does not contradict the knowledge so far")
    facts: list[str] = Field(default_factory=list, max_length=12,
                             description="short, self-contained facts that help draw the scene")


class ImageDecision(BaseModel):
    image: int = Field(description="the image's number")
    shows: str = Field("", description="what the image shows, in a few words")
    reason: str = ""
    keep: bool


class ImageFilter(BaseModel):
    decisions: list[ImageDecision] = Field(default_factory=list)


class AccumulationResult(BaseModel):
    added_text: list[str] = Field(default_factory=list)
    added_images: list[str] = Field(default_factory=list)
    rejected_pages: int = 0
    rejected_images: int = 0
    failed_calls: int = 0

    @property
    def added(self) -> int:
        return len(self.added_text) + len(self.added_images)


def _simulate_text(req: SimRequest) -> dict:
    """Every sentence of the page (title, URL and headings left out) is a fact."""
    page = next((b for i, b in req.blocks() if i == "P"), "")
    body = page.split("\n", 2)[-1]  # title and URL lines first
    body = "\n".join(ln for ln in body.splitlines() if not ln.lstrip().startswith("#"))  # headings
    facts = [s.strip() for s in re.split(r"(?<=[.!?])\s+", body) if len(s.strip()) > 10]
    return {"reason": "about the prompt", "relevant": True, "consistent": True, "facts": facts[: req.options.max_facts]}


def _simulate_images(req: SimRequest) -> dict:
    """Every picture kept, described by its caption."""
    titles = req.image_titles()
    return {"decisions": [{"image": i, "shows": titles.get(f"I{i}", f"candidate {i}"), "reason": "fits", "keep": True}
                          for i in range(1, req.n_images + 1)]}


# Consolidation (consolidation.py) is the rest of this stage: its own SPEC, the same name.
SPEC = StageSpec(
    name="accumulation", doing="filtering evidence into the knowledge base", switch="accumulation_filter", order=40,
    calls=(Call("text_filter", TextFilter, _simulate_text, reads=frozenset({"query", "knowledge", "page"}), example={
                "knowledge": "", "query": '<data id="Q">q</data>', "page": '<data id="P">body</data>'}),
           Call("image_filter", ImageFilter, _simulate_images,
                reads=frozenset({"query", "knowledge", "image_knowledge", "image"}), example={
                    "knowledge": '<data id="T1">f</data>', "image_knowledge": "", "candidates": [
                        {"n": 1, "query": '<data id="Q1">q</data>', "block": '<data id="I1">t</data>'}]})),
)


async def accumulate(ctx: StageContext, raw: RoundRetrieval) -> AccumulationResult:
    result = AccumulationResult()
    if not ctx.config.accumulation_filter:
        _add_unfiltered(ctx, raw, result)
        return result
    await asyncio.gather(*(_filter_page(ctx, page, result) for page in raw.pages))
    batch = ctx.config.max_images_per_call
    batches = [raw.images[i: i + batch] for i in range(0, len(raw.images), batch)]
    await asyncio.gather(*(_filter_images(ctx, b, result) for b in batches))
    return result


def _source(item: RetrievedPage | RetrievedImage, url: str | None) -> Source:
    return Source(url=url, title=item.title, query=item.query, round=item.round, origin="retrieval")


async def _filter_page(ctx: StageContext, page: RetrievedPage, result: AccumulationResult) -> None:
    # Sentences addressed to the model (injected instructions) never reach it, even as data.
    text, injected = drop_instructions(page.text)
    title, injected_title = drop_instructions(page.title)
    injected += injected_title
    cut: list[str] = []

    def page_block(left: int) -> str:
        limit = min(left, ctx.config.max_page_tokens) - 40
        if ctx.config.page_text == "passages":
            question = " ".join([page.query, *ctx.sub_questions, *ctx.focus])
            chosen = select_passages(text, question, limit, ctx.budget.counter)
            body = chosen.text
            if chosen.cut:
                cut.append(f"{chosen.kept} of {chosen.passages} passages shown (BM25 against the query and "
                           f"sub-questions), {chosen.chars_left_out:,} characters left out")
        else:
            body, was_cut = truncate_to_tokens(text, limit, ctx.budget.counter)
            if was_cut:
                cut.append(f"page text cut after {len(body):,} of {len(text):,} characters")
        return delimit("P", f"{title}\n{page.url}\n{body}")

    verdict, record = await ctx.ask(
        stage="accumulation", step="text_filter", template="text_filter", schema=TextFilter,
        variables={"query": delimit("Q", page.query)},  # queries derive from web text too
        fit=[("knowledge", ctx.knowledge_filler("accumulation")), ("page", page_block)],
    )
    if injected:
        record.notes.append(f"{len(injected)} instruction-like sentence(s) removed from the page: "
                            + " | ".join(x[:80] for x in injected[:3]))
    if cut:
        record.notes.append(f"{cut[-1]} to fit {ctx.config.max_page_tokens} tokens ({ctx.budget.counter.label})")
    if verdict is None:
        result.failed_calls += 1
        return
    if not (verdict.relevant and verdict.consistent):
        result.rejected_pages += 1
        return
    for fact in verdict.facts:
        if looks_like_instruction(fact):
            record.notes.append(f"instruction-like fact dropped: {fact[:120]!r}")
            continue
        item = ctx.knowledge.add_text(sanitize(fact), _source(page, page.url))
        if item:
            result.added_text.append(item.id)
            record.evidence_ids.append(item.id)


async def _filter_images(ctx: StageContext, images: list[RetrievedImage], result: AccumulationResult) -> None:
    # one block per distinct query (the template names a query once for the pictures it found)
    queries = {q: delimit(f"Q{k}", q) for k, q in enumerate(dict.fromkeys(im.query for im in images), 1)}
    listing = [{"n": i, "query": queries[im.query],
                "block": delimit(f"I{i}", f"{clean_field(im.title, UNDESCRIBED)}\n{im.page_url or ''}")}
               for i, im in enumerate(images, 1)]
    verdict, record = await ctx.ask(
        stage="accumulation", step="image_filter", template="image_filter", schema=ImageFilter,
        variables={"image_knowledge": ctx.knowledge.render_images(), "candidates": listing},
        fit=[("knowledge", ctx.knowledge_filler("accumulation"))],
        images=[im.image for im in images], max_pixels=ctx.config.images.image_filter,
    )
    if verdict is None:
        result.failed_calls += 1
        return
    decisions = {d.image: d for d in verdict.decisions if 1 <= d.image <= len(images)}
    if len(decisions) < len(images):
        record.notes.append(f"{len(images) - len(decisions)} image(s) without a decision: not kept")
    for n, im in enumerate(images, 1):
        d = decisions.get(n)
        if d is None or not d.keep:
            result.rejected_images += 1
            continue
        # the model's description, else the page's title for the image; neither unchecked
        shows = d.shows if d.shows and not looks_like_instruction(d.shows) else clean_field(sanitize(im.title), UNDESCRIBED)
        item = ctx.knowledge.add_image(im.image, im.bytes_sha256, _source(im, im.page_url), url=im.url,
                                       page_url=im.page_url, description=shows)
        if item:
            result.added_images.append(item.id)
            record.evidence_ids.append(item.id)


def _add_unfiltered(ctx: StageContext, raw: RoundRetrieval, result: AccumulationResult) -> None:
    for page in raw.pages:
        # Whole passages: each is truncated to its share wherever K is rendered (so all fit).
        text, _ = drop_instructions(page.text)
        item = ctx.knowledge.add_text(text, _source(page, page.url), kind="passage")
        if item:
            result.added_text.append(item.id)
    for im in raw.images:
        image_item = ctx.knowledge.add_image(im.image, im.bytes_sha256, _source(im, im.page_url), url=im.url,
                                             page_url=im.page_url, description=clean_field(sanitize(im.title), UNDESCRIBED))
        if image_item:
            result.added_images.append(image_item.id)
    ctx.note("accumulation", "unfiltered", "accumulation_filter off: retrieved evidence added to K as is",
             evidence_ids=result.added_text + result.added_images)
