"""Fine-grained multimodal refinement (paper Eq. 7-8).

1. Near-duplicate images are removed from K^v by embedding similarity (when a deduper is set).
2. The backbone extracts visual descriptors F^t from K's (consolidated) text and keeps the most
   informative images, best first, at most what the generator takes (``max_references`` and
   its reference capacity): the refined set K^v_R (Eq. 7). By default it chooses from what the
   image filter said each picture shows (``images.text_features: 0``; no pixels are re-sent). When K holds more images than one
   call may show, a shortlist is drawn from all of them (CLIP against the prompt, else spread
   over rounds). A text-only generator gets no reference: the chosen images' features become
   words in F^t instead.
3. For each kept image it states, guided by F^t, what the generator should preserve and what it
   should ignore: F^v (Eq. 8). This is where a reference is looked at in full
   (``images.visual_features``).

With ``refinement`` off (paper Table 5, "w.o. Fine-grained Refinement") or when step 2 fails,
F^t is K's text as is and K^v_R is K's first images; the fallback is noted in the trace.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field, field_validator

from orig_local.agent.knowledge import ImageEvidence
from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import IMAGE_ID, SimRequest, after, blocks, words
from orig_local.agent.stages.base import StageContext
from orig_local.agent.untrusted import delimit, list_block, list_line, looks_like_instruction


class KeptImage(BaseModel):
    # reasoning first: under guided decoding the model writes fields in schema order
    reason: str = Field("", description="what this image shows that the picture needs")
    image: int = Field(description="the image's number")


class RefinedText(BaseModel):
    features: list[str] = Field(default_factory=list, max_length=20,
                                description="visual descriptors: appearance, colours, parts, layout, time")
    keep_images: list[KeptImage] = Field(default_factory=list, max_length=8,
                                         description="the most informative images, best first, each with why")

    @field_validator("keep_images", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        # a bare list of numbers (older prompt folders, scripted replies) is a choice without reasons
        if isinstance(value, list):
            return [{"image": v} if isinstance(v, int) and not isinstance(v, bool) else v for v in value]
        return value


class ImageFeatures(BaseModel):
    image: int = Field(description="the image's number")
    contributes: str = Field(description="what this reference gives the picture, in a few words")
    preserve: list[str] = Field(default_factory=list, max_length=8)
    ignore: list[str] = Field(default_factory=list, max_length=8)


class VisualFeatures(BaseModel):
    images: list[ImageFeatures] = Field(default_factory=list)


class Reference(BaseModel):
    """One reference image of K^v_R, in order, with its F^v."""

    id: str  # K id (V3)
    reason: str = ""  # why refinement kept it (RefinedText.keep_images)
    contributes: str = ""
    preserve: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)


class RefinementResult(BaseModel):
    text_features: list[str] = Field(default_factory=list)  # F^t
    references: list[Reference] = Field(default_factory=list)  # K^v_R with F^v, ordered
    refined: bool = False  # False: the fallback (switch off or failed call) was used
    looked: bool = False  # F^v was written from the pictures (else prompt extension needs them)


def _simulate_text(req: SimRequest) -> dict:
    """K's statements most about the prompt's subject (K's order among them); every image."""
    knowledge = req.after("\nKnowledge:\n").split("\nImages (", 1)[0]
    facts = [b for _, b in blocks(knowledge)]
    want = words(req.prompt)
    chosen = set(sorted(range(len(facts)), key=lambda i: (-len(words(facts[i]) & want), i))[: req.options.max_facts])
    facts = [f for i, f in enumerate(facts) if i in chosen]
    # the images shown, or (no pixels sent) the images described
    listed = req.n_images or len([i for i, _ in blocks(after(req.text, "\nImages (")) if IMAGE_ID.fullmatch(i)])
    return {"features": facts, "keep_images": [{"reason": "shows the subject", "image": i} for i in range(1, listed + 1)]}


def _simulate_visual(req: SimRequest) -> dict:
    shows = req.image_titles()
    return {"images": [{"image": i, "contributes": shows.get(f"I{i}", f"the look of image {i}"),
                        "preserve": ["colours", "shape"], "ignore": ["background"]}
                       for i in range(1, (req.n_images or len(shows)) + 1)]}


# One reference as the refinement and extension templates list it (sample renders).
SAMPLE_REFERENCE = {"n": 1, "id": "V1", "contributes": "the tower", "preserve": ["bands"], "ignore": ["sky"],
                    "shows": "a tower", "block": '<data id="I1">a tower</data>'}
SPEC = StageSpec(
    name="refinement", doing="refining the evidence", switch="refinement", order=60,
    calls=(Call("refine_text", RefinedText, _simulate_text, reads=frozenset({"knowledge", "image"}), example={
                "knowledge": '<data id="T1">f</data>', "candidates": [SAMPLE_REFERENCE], "max_references": 3,
                "pixels": False}),
           Call("refine_visual", VisualFeatures, _simulate_visual, reads=frozenset({"feature", "image"}), example={
               "text_features": ['<data id="list">F1: teal bands</data>'], "references": [SAMPLE_REFERENCE],
               "as_references": True})),
)


def reference_limit(ctx: StageContext) -> int:
    """References the generator will receive: the config's cap and the generator's capacity."""
    return max(min(ctx.config.max_references, ctx.reference_capacity), 0)


def unrefined(ctx: StageContext) -> RefinementResult:
    """F^t = K's text (the consolidated summary when there is one), K^v_R = K's first images
    (no backbone call)."""
    return RefinementResult(
        text_features=[e.text for e in ctx.knowledge.text_entries()],
        references=[Reference(id=v.id, contributes=v.description) for v in ctx.knowledge.images[: reference_limit(ctx)]],
    )


async def refine(ctx: StageContext) -> RefinementResult:
    cfg = ctx.config
    limit = reference_limit(ctx)
    # A text-only generator gets no image, but the images still inform the prompt: up to
    # max_references are described (F^v) and their features written into P̂ as words.
    pick = limit if ctx.reference_capacity > 0 else cfg.max_references
    candidates = await _dedup(ctx, list(ctx.knowledge.images))
    pixels = cfg.images.text_features != 0  # 0: choose from the filter's descriptions
    shown = await _shortlist(ctx, candidates) if pick else []
    refined, record = await ctx.ask(
        stage="refinement", step="text_features", template="refine_text", schema=RefinedText,
        variables={
            "candidates": [{"n": i, "id": v.id, "block": delimit(f"I{i}", v.description or "image")}
                           for i, v in enumerate(shown, 1)],
            "max_references": pick, "pixels": pixels,
        },
        fit=[("knowledge", ctx.knowledge_filler("refinement"))],
        images=[v.image for v in shown], max_pixels=cfg.images.text_features,
        evidence_ids=[t.id for t in ctx.knowledge.texts] + [v.id for v in shown],
    )
    if refined is None:
        record.notes.append("refinement failed: using K unrefined")
        fallback = unrefined(ctx)
        fallback.references = [Reference(id=v.id, contributes=v.description) for v in shown[:limit]]
        return fallback

    reasons = {k.image: k.reason for k in refined.keep_images}
    order = [n for n in dict.fromkeys(k.image for k in refined.keep_images) if 1 <= n <= len(shown)][:pick]
    if not order and shown and pick:
        # The authors keep 1-5 of the images that passed the filter, never none: the first
        # candidate (CLIP-ranked or K's order) stands in for the choice the model did not make.
        order = [1]
        record.notes.append("the backbone kept no image though images passed the filter: image 1 kept "
                            "(at least one reference when any image passed)")
    kept = [shown[n - 1] for n in order]
    features = [f.strip() for f in refined.features if f.strip() and not looks_like_instruction(f)]
    result = RefinementResult(text_features=features, refined=True, references=[
        Reference(id=v.id, contributes=v.description, reason=reasons.get(n, "")) for n, v in zip(order, kept, strict=True)])
    if kept:
        await _visual_features(ctx, kept, result, as_references=limit > 0)
    if limit == 0 and result.references:
        # Text-only generator: F^v becomes words in F^t; no reference reaches the generator.
        result.text_features += [_as_words(r) for r in result.references]
        ctx.note("refinement", "text_only_generator",
                 f"the generator takes no reference image: features of {len(result.references)} "
                 "image(s) written into the prompt text instead", evidence_ids=[r.id for r in result.references])
        result.references = []
    return result


def _as_words(ref: Reference) -> str:
    text = ref.contributes.strip().rstrip(".") or "the subject"
    if ref.preserve:
        text += ": " + ", ".join(ref.preserve)
    return text


async def _shortlist(ctx: StageContext, candidates: list[ImageEvidence]) -> list[ImageEvidence]:
    """At most ``max_images_per_call`` candidates for the one refinement call, chosen over all
    of K's images: ranked against the prompt with CLIP when an embedder is available, else
    spread over the rounds (newest first), so images found late (usually aimed at what was
    missing) can still become references. What is left out is traced."""
    n = ctx.config.max_images_per_call
    if len(candidates) <= n:
        return candidates
    embedder = getattr(ctx.dedup, "embedder", None)
    how = "clip"
    if embedder is not None and hasattr(embedder, "text_image_similarity"):
        from orig_local.embeddings.dedup import rank_images_for_text

        ranked = await asyncio.to_thread(rank_images_for_text, ctx.prompt, [v.image for v in candidates], embedder)
        chosen = sorted(r.index for r in ranked[:n])  # K order among the best
    else:
        how = "round-robin over rounds, newest first"
        by_round: dict[int, list[int]] = {}
        for i, v in enumerate(candidates):
            by_round.setdefault(v.source.round, []).append(i)
        queues = [by_round[r] for r in sorted(by_round, reverse=True)]
        picked: list[int] = []
        while len(picked) < n:
            for q in queues:
                if q and len(picked) < n:
                    picked.append(q.pop(0))
        chosen = sorted(picked)
    shown = [candidates[i] for i in chosen]
    shown_ids = {v.id for v in shown}
    left_out = [v.id for v in candidates if v.id not in shown_ids]
    ctx.note("refinement", "shortlist", f"{len(candidates)} candidate images, {n} per call: "
             f"shortlisted by {how}; not shown: {', '.join(left_out)}", evidence_ids=left_out)
    return shown


async def _visual_features(ctx: StageContext, kept: list[ImageEvidence], result: RefinementResult,
                           as_references: bool = True) -> bool:
    features, _ = await ctx.ask(
        stage="refinement", step="visual_features", template="refine_visual", schema=VisualFeatures,
        variables={
            "text_features": feature_list(result.text_features),
            "references": [{"n": i, "id": v.id, "block": delimit(f"I{i}", v.description or "image")}
                           for i, v in enumerate(kept, 1)],
            "as_references": as_references,
        },
        images=[v.image for v in kept], max_pixels=ctx.config.images.visual_features,
        evidence_ids=[v.id for v in kept],
    )
    if features is None:
        return False
    result.looked = True
    by_n = {f.image: f for f in features.images}
    for n, ref in enumerate(result.references, 1):
        f = by_n.get(n)
        if f is not None:
            ok = [x for x in f.preserve if not looks_like_instruction(x)]
            ref.contributes = f.contributes if f.contributes and not looks_like_instruction(f.contributes) else ref.contributes
            ref.preserve, ref.ignore = ok, [x for x in f.ignore if not looks_like_instruction(x)]
    return True


async def describe_in_words(ctx: StageContext, images: list[ImageEvidence], text_features: list[str]) -> list[str]:
    """F^v of images the generator will not receive, as words for F^t (a text-only generator,
    or gold images beyond its capacity): at most one call's worth of images. Empty when the
    call fails (the trace has its error)."""
    images = images[: ctx.config.max_images_per_call]
    described = RefinementResult(text_features=text_features,
                                 references=[Reference(id=v.id, contributes=v.description) for v in images])
    if not images or not await _visual_features(ctx, images, described, as_references=False):
        return []
    return [_as_words(r) for r in described.references]


async def _dedup(ctx: StageContext, images: list[ImageEvidence]) -> list[ImageEvidence]:
    if ctx.dedup is None or len(images) < 2:
        return images
    keep = await asyncio.to_thread(ctx.dedup.keep, [v.image for v in images])
    kept = [images[i] for i in keep]
    if len(kept) < len(images):
        kept_ids = {v.id for v in kept}
        dropped = [v.id for v in images if v.id not in kept_ids]
        ctx.note("refinement", "dedup_images", f"near-duplicates dropped: {', '.join(dropped)}", evidence_ids=dropped)
    return kept


def feature_list(features: list[str]) -> list[str]:
    """F^t for a request: one list block (F1, F2, ... one a line), or none."""
    block = list_block([list_line(f"F{i}", f) for i, f in enumerate(features, 1)])
    return [block] if block else []
