"""Image de-duplication before any VLM sees candidate images, and text->image ranking.

Three stages, cheapest first, so the VLM is never asked to compare pairs of pictures:

1. exact copies (same pixels, :func:`~orig_local.imagehash.pixels_sha256`) - no embedding;
2. optional perceptual copies: 64-bit dHash within ``dhash_max_bits`` (resized/recompressed/
   lightly watermarked copies; not crops), guarded by shape, colour and aspect
   (:func:`~orig_local.imagehash.same_picture`: flat logos and text pages are a few bits apart
   in dHash alone) - no embedding;
3. near-duplicates: open_clip image embeddings (batched, cached by content hash) with cosine
   similarity >= ``threshold``.

Within each group of duplicates the best copy is kept, whichever arrived first
(:func:`~orig_local.imagehash.best_copy`: most pixels, then not a softer recompressed copy, then fewest added edges such as a
watermark, then the earliest); ``prefer="order"`` keeps the earliest always. Images already in
the knowledge base (``existing``) are never dropped: a candidate duplicating one of them is.
Every decision is returned with its reason, so the agent's trace can say why an image
disappeared.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from orig_local.imagehash import pixels_sha256

log = logging.getLogger(__name__)

Reason = Literal["unique", "exact_duplicate", "perceptual_duplicate", "near_duplicate"]


class DedupDecision(BaseModel):
    index: int  # position in the candidate list
    kept: bool
    reason: Reason
    duplicate_of: int | None = None  # index of the kept candidate (or existing image) it repeats
    duplicate_of_existing: bool = False  # duplicate_of indexes `existing`, not the candidates
    similarity: float | None = None  # cosine (near) or 1 - bits/64 (perceptual); 1.0 for exact
    width: int
    height: int
    sha256: str


class DedupResult(BaseModel):
    kept: list[int]  # candidate indices kept, in input order
    dropped: list[int]
    decisions: list[DedupDecision]
    threshold: float
    embedded: int  # images actually run through the embedder in this call (cache misses)

    def reasons(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for d in self.decisions:
            counts[d.reason] = counts.get(d.reason, 0) + 1
        return counts


class ImageDeduplicator:
    """``dedup(images, existing=())`` -> :class:`DedupResult`; ``keep(images)`` -> kept indices.

    ``embedder`` is an :class:`~orig_local.embeddings.clip.OpenClipEmbedder` (anything with
    ``embed_images(list) -> (n, d)`` unit rows and an ``images_embedded`` counter). The
    threshold depends on the model: ~0.95 for real CLIP ViT-B/32 and ViT-L/14; random tiny
    models put all images close together and need a much stricter one (see docs/generation.md).
    """

    def __init__(self, embedder: Any, threshold: float = 0.95, dhash_max_bits: int | None = None,
                 prefer: Literal["resolution", "order"] = "resolution"):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if prefer not in ("resolution", "order"):
            raise ValueError(f"prefer must be 'resolution' or 'order', got {prefer!r}")
        self.embedder = embedder
        self.threshold = threshold
        self.dhash_max_bits = dhash_max_bits
        self.prefer = prefer

    def keep(self, images: Sequence[Any]) -> list[int]:
        """Indices of the images to keep, in input order (the agent's ``Deduper`` protocol)."""
        return self.dedup(images).kept

    def dedup(self, images: Sequence[Any], existing: Sequence[Any] = ()) -> DedupResult:
        images, existing = list(images), list(existing)
        n = len(images)
        hashes = [pixels_sha256(im) for im in images]
        decisions = [DedupDecision(index=i, kept=True, reason="unique", width=im.width, height=im.height,
                                   sha256=hashes[i]) for i, im in enumerate(images)]
        # Visit candidates best first; a candidate is compared with the representatives so far.
        order = sorted(range(n), key=(lambda i: (-images[i].width * images[i].height, i))
                       if self.prefer == "resolution" else (lambda i: i))

        # 1. exact copies
        existing_hash: dict[str, int] = {}
        for j, im in enumerate(existing):
            existing_hash.setdefault(pixels_sha256(im), j)
        first_with_hash: dict[str, int] = {}
        for i in order:
            if hashes[i] in existing_hash:
                _drop(decisions[i], "exact_duplicate", existing_hash[hashes[i]], True, 1.0)
            elif hashes[i] in first_with_hash:
                _drop(decisions[i], "exact_duplicate", first_with_hash[hashes[i]], False, 1.0)
            else:
                first_with_hash[hashes[i]] = i
        alive = [i for i in order if decisions[i].kept]

        # 2. perceptual copies (guarded dHash), still without embedding anything
        if self.dhash_max_bits is not None and alive:
            self._perceptual(images, existing, alive, decisions)
            alive = [i for i in alive if decisions[i].kept]

        # 3. near-duplicates by embedding similarity (one batched call; cached by content hash)
        before = getattr(self.embedder, "images_embedded", 0)
        if len(alive) + (len(existing) if alive else 0) >= 2:
            vectors = self.embedder.embed_images(existing + [images[i] for i in alive])
            ex_vecs, cand_vecs = vectors[: len(existing)], vectors[len(existing):]
            rep_vecs: list[np.ndarray] = list(ex_vecs)
            rep_ids: list[tuple[int, bool]] = [(j, True) for j in range(len(existing))]
            for vec, i in zip(cand_vecs, alive, strict=True):
                if rep_vecs:
                    sims = np.stack(rep_vecs) @ vec
                    best = int(np.argmax(sims))
                    if float(sims[best]) >= self.threshold:
                        _drop(decisions[i], "near_duplicate", rep_ids[best][0], rep_ids[best][1], float(sims[best]))
                        continue
                rep_vecs.append(vec)
                rep_ids.append((i, False))
        embedded = getattr(self.embedder, "images_embedded", 0) - before

        if self.prefer == "resolution":
            _keep_best_copies(images, decisions)
        kept = [d.index for d in decisions if d.kept]
        dropped = [d.index for d in decisions if not d.kept]
        if dropped:
            log.debug("dedup: kept %d of %d (%s)", len(kept), n, _reason_summary(decisions))
        return DedupResult(kept=kept, dropped=dropped, decisions=decisions, threshold=self.threshold,
                           embedded=embedded)


    def _perceptual(self, images: list, existing: list, alive: list[int], decisions: list[DedupDecision]) -> None:
        from orig_local.imagehash import fingerprint, hamming, same_picture

        assert self.dhash_max_bits is not None
        reps = [(j, True, fingerprint(im)) for j, im in enumerate(existing)]
        for i in alive:
            fp = fingerprint(images[i])
            match = next(((j, ex, fj) for j, ex, fj in reps if same_picture(fp, fj, self.dhash_max_bits)[0]), None)
            if match is None:
                reps.append((i, False, fp))
            else:
                bits = hamming(fp.dhash, match[2].dhash)
                _drop(decisions[i], "perceptual_duplicate", match[0], match[1], 1.0 - bits / 64)


def _keep_best_copies(images: list, decisions: list[DedupDecision]) -> None:
    """In each group (a kept candidate and the candidates dropped as its copies) keep the best
    copy (:func:`~orig_local.imagehash.best_copy`) instead of the one visited first."""
    from orig_local.imagehash import best_copy

    groups: dict[int, list[int]] = {}
    for d in decisions:
        if not d.kept and d.duplicate_of is not None and not d.duplicate_of_existing:
            groups.setdefault(d.duplicate_of, []).append(d.index)
    for rep, members in groups.items():
        group = sorted([rep, *members])  # arrival order breaks ties
        best = group[best_copy([images[i] for i in group])]
        if best == rep:
            continue
        old, new = decisions[rep], decisions[best]
        old.kept, old.reason, old.duplicate_of, old.similarity = False, new.reason, best, new.similarity
        new.kept, new.reason, new.duplicate_of, new.similarity = True, "unique", None, None
        for i in members:
            if i != best:
                decisions[i].duplicate_of = best


def _drop(decision: DedupDecision, reason: Reason, of: int, existing: bool, similarity: float) -> None:
    decision.kept = False
    decision.reason = reason
    decision.duplicate_of = of
    decision.duplicate_of_existing = existing
    decision.similarity = similarity


def _reason_summary(decisions: list[DedupDecision]) -> str:
    counts: dict[str, int] = {}
    for d in decisions:
        if not d.kept:
            counts[d.reason] = counts.get(d.reason, 0) + 1
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))


class RankedImage(BaseModel):
    index: int
    score: float  # cosine similarity between the text and the image


def rank_images_for_text(text: str, images: Sequence[Any], embedder: Any,
                         top_k: int | None = None) -> list[RankedImage]:
    """Candidates ordered by CLIP text-image similarity, best first (ties: input order)."""
    if not images:
        return []
    scores = embedder.text_image_similarity([text], list(images))[0]
    order = sorted(range(len(images)), key=lambda i: (-float(scores[i]), i))
    ranked = [RankedImage(index=i, score=float(scores[i])) for i in order]
    return ranked[:top_k] if top_k is not None else ranked
