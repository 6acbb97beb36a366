"""Fine-grained multimodal refinement (paper Eq. 7-8).

1. Near-duplicate images are removed from K^v by embedding similarity (when a deduper is set).
2. The backbone extracts visual descriptors F^t from K's text and keeps the most informative
   images, best first, at most ``max_references``: the refined set K^v_R (Eq. 7).
3. For each kept image it states, guided by F^t, what the generator should preserve and what it
   should ignore: F^v (Eq. 8).

With ``refinement`` off (paper Table 5, "w.o. Fine-grained Refinement") or when step 2 fails,
F^t is K's text as is and K^v_R is K's first images; the fallback is noted in the trace.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from orig_local.agent.knowledge import ImageEvidence
from orig_local.agent.stages.base import StageContext


class RefinedText(BaseModel):
    features: list[str] = Field(default_factory=list, max_length=20,
                                description="visual descriptors: appearance, colours, parts, layout, time")
    keep_images: list[int] = Field(default_factory=list, max_length=8,
                                   description="numbers of the most informative images, best first")


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
    contributes: str = ""
    preserve: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)


class RefinementResult(BaseModel):
    text_features: list[str] = Field(default_factory=list)  # F^t
    references: list[Reference] = Field(default_factory=list)  # K^v_R with F^v, ordered
    refined: bool = False  # False: the fallback (switch off or failed call) was used


def unrefined(ctx: StageContext) -> RefinementResult:
    """F^t = K's text, K^v_R = K's first images (no backbone call)."""
    return RefinementResult(
        text_features=[t.text for t in ctx.knowledge.texts],
        references=[Reference(id=v.id, contributes=v.description) for v in ctx.knowledge.images[: ctx.config.max_references]],
    )


async def refine(ctx: StageContext) -> RefinementResult:
    cfg = ctx.config
    candidates = await _dedup(ctx, list(ctx.knowledge.images))
    shown = candidates[: cfg.max_images_per_call]
    if len(candidates) > len(shown):
        ctx.note("refinement", "cap", f"{len(candidates) - len(shown)} image(s) beyond max_images_per_call not shown")
    refined, record = await ctx.ask(
        stage="refinement", step="text_features", template="refine_text", schema=RefinedText,
        variables={
            "knowledge": ctx.knowledge.render_text(cfg.max_knowledge_chars),
            "candidates": [{"n": i, "id": v.id, "shows": v.description} for i, v in enumerate(shown, 1)],
            "max_references": cfg.max_references,
        },
        images=[v.image for v in shown],
        evidence_ids=[t.id for t in ctx.knowledge.texts] + [v.id for v in shown],
    )
    if refined is None:
        record.notes.append("refinement failed: using K unrefined")
        fallback = unrefined(ctx)
        fallback.references = [Reference(id=v.id, contributes=v.description) for v in shown[: cfg.max_references]]
        return fallback

    order = [n for n in dict.fromkeys(refined.keep_images) if 1 <= n <= len(shown)][: cfg.max_references]
    kept = [shown[n - 1] for n in order]
    result = RefinementResult(text_features=[f.strip() for f in refined.features if f.strip()], refined=True,
                              references=[Reference(id=v.id, contributes=v.description) for v in kept])
    if kept:
        await _visual_features(ctx, kept, result)
    return result


async def _visual_features(ctx: StageContext, kept: list[ImageEvidence], result: RefinementResult) -> None:
    features, _ = await ctx.ask(
        stage="refinement", step="visual_features", template="refine_visual", schema=VisualFeatures,
        variables={
            "text_features": result.text_features,
            "references": [{"n": i, "id": v.id, "shows": v.description} for i, v in enumerate(kept, 1)],
        },
        images=[v.image for v in kept],
        evidence_ids=[v.id for v in kept],
    )
    if features is None:
        return
    by_n = {f.image: f for f in features.images}
    for n, ref in enumerate(result.references, 1):
        f = by_n.get(n)
        if f is not None:
            ref.contributes = f.contributes or ref.contributes
            ref.preserve, ref.ignore = f.preserve, f.ignore


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
