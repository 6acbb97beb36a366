"""Image fingerprints, one name per meaning. Neither ``retrieval`` nor ``embeddings`` owns
them, so both import from here and not from each other.

* :func:`pixels_sha256` - exact identity of the decoded picture (mode + size + pixels),
  independent of the file format; the CLIP embedding cache and exact-copy dedup use it.
* :func:`dhash64` / :func:`hamming` - a 64-bit perceptual hash and its bit distance, for
  resized/recompressed copies; :func:`fingerprint` / :func:`same_picture` - the dHash guarded
  by what it cannot see (shape at 48x48, colours, aspect ratio), the check every perceptual
  copy decision uses; :func:`best_copy` - which copy of a group to keep.

The other two SHA-256s of the project live with their data: ``FetchedImage.bytes_sha256``
(the downloaded bytes, the evidence store's content address) and ``ImageRef.sha256()``
(the bytes a chat image is sent as, part of chat cache keys).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


def pixels_sha256(image: Any) -> str:
    """SHA-256 of a PIL image's mode, size and pixels (format-independent)."""
    h = hashlib.sha256()
    h.update(f"{image.mode}:{image.size}".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def dhash64(image: Any) -> int:
    """64-bit difference hash: grey 9x8 thumbnail, one bit per left-right comparison. (A box
    reduction before the resize would save ~1 ms per picture but made a 40 % thumbnail miss
    its original: the factor differs between sizes.)"""
    small = image.convert("L").resize((9, 8), resample=1)  # 1 = LANCZOS
    px = small.tobytes()
    bits = 0
    for row in range(8):
        for col in range(8):
            bits = (bits << 1) | (px[row * 9 + col] > px[row * 9 + col + 1])
    return bits


def hamming(a: int, b: int) -> int:
    return bin(a ^ b).count("1")


# --------------------------------------------------------------------------- guarded copies

# Measured on PIL-drawn scenes, flat logos and text pages (benchmarks/bench_dedup.py): resized
# (to 40-50 %), JPEG q50 and watermarked copies disagree in <= 0.09 % of 48x48 cells; distinct
# pictures whose dHash is within 10 bits in >= 2.1 % (a 64 grid split half-size copies of
# pictures with hard outlines: 1.2 %). The limit sits between, with a 5x margin each way.
GRID = 48  # grey thumbnail side for the structure guard
COLOUR_GRID = 16  # RGB thumbnail side for the colour guard
DISAGREE_LEVEL = 32  # a thumbnail cell "disagrees" when it differs by more than this (of 255)
MAX_DISAGREEING = 0.005
MAX_ASPECT_LOG = 0.03  # |log aspect ratio|: a resize keeps it; crops and letterboxes are CLIP's job


@dataclass(frozen=True)
class Fingerprint:
    """What the perceptual copy check compares: the 64-bit dHash and what it cannot see.

    The 9x8 dHash thumbnail of a flat picture (a logo on white, a page of text) has almost no
    set bits, so two different logos were 5 bits apart and two text pages 6 (issue 22). A
    48x48 grey thumbnail (shape and layout), a 16x16 colour thumbnail (a recoloured logo has
    the same grey shape) and the aspect ratio guard it."""

    dhash: int
    grey: bytes  # GRID x GRID, "L"
    colour: bytes  # COLOUR_GRID x COLOUR_GRID, "RGB"
    width: int
    height: int


def fingerprint(image: Any, dhash: int | None = None) -> Fingerprint:
    """``dhash``: the image's :func:`dhash64` when already computed (the fetcher does)."""
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    # one cheap integer-factor box reduction first: the thumbnails are then resized from ~4x
    # their size instead of from the full picture (the agent fingerprints every fetched image)
    factor = max(1, min(rgb.width, rgb.height) // (4 * GRID))
    small = rgb.reduce(factor) if factor > 1 else rgb
    return Fingerprint(dhash=dhash64(rgb) if dhash is None else dhash,
                       grey=small.convert("L").resize((GRID, GRID), resample=4).tobytes(),  # 4 = BOX
                       colour=small.resize((COLOUR_GRID, COLOUR_GRID), resample=4).tobytes(),
                       width=rgb.width, height=rgb.height)


def _disagreeing(a: bytes, b: bytes) -> float:
    import numpy as np

    x = np.frombuffer(a, dtype=np.uint8).astype(np.int16)
    y = np.frombuffer(b, dtype=np.uint8).astype(np.int16)
    return float((np.abs(x - y) > DISAGREE_LEVEL).mean())


def same_picture(a: Fingerprint, b: Fingerprint, max_bits: int) -> tuple[bool, str]:
    """Whether ``a`` and ``b`` are one picture resized / recompressed / lightly watermarked:
    dHash within ``max_bits`` **and** the guards agree. Returns (verdict, why)."""
    import math

    bits = hamming(a.dhash, b.dhash)
    if bits > max_bits:
        return False, f"dHash {bits} bits"
    aspect = abs(math.log((a.width / a.height) / (b.width / b.height)))
    if aspect > MAX_ASPECT_LOG:
        return False, f"dHash {bits} bits but aspect ratios differ ({aspect:.2f})"
    grey = _disagreeing(a.grey, b.grey)
    if grey > MAX_DISAGREEING:
        return False, f"dHash {bits} bits but {grey:.1%} of the shape differs"
    colour = _disagreeing(a.colour, b.colour)
    if colour > MAX_DISAGREEING:
        return False, f"dHash {bits} bits but {colour:.1%} of the colours differ"
    return True, f"dHash {bits} bits, shape and colours agree"


# --------------------------------------------------------------------------- best copy

SAME_RESOLUTION = 0.9  # copies with >= 90 % of the best copy's pixels count as equally resolved
EDGE_STEP = 16  # a gradient this much stronger than the other copy's is an added edge


def _gradient(image: Any, size: tuple[int, int]) -> Any:
    import numpy as np

    # per colour channel: a grey watermark on a red field of the same luminance is invisible in grey
    g = np.asarray(image.convert("RGB").resize(size, resample=4), dtype=np.float32)
    return (np.abs(np.diff(g, axis=1))[:-1, :, :] + np.abs(np.diff(g, axis=0))[:, :-1, :]).max(axis=2)


def added_edges(image: Any, other: Any) -> tuple[float, float]:
    """What ``image`` adds to ``other`` (same picture, compared at the smaller one's size up to
    384 px wide): the share of pixels with a markedly stronger edge (a watermark, a caption),
    then the mean faint excess (compression ringing and blocks). The cleaner copy adds less."""
    w = max(8, min(image.width, other.width, 384))
    size = (w, max(8, round(w * image.height / image.width)))
    excess = _gradient(image, size) - _gradient(other, size)
    return float((excess > EDGE_STEP).mean()), float(excess.clip(0, EDGE_STEP).mean())


BORDER_LEVEL = 16  # a border row/column differs from the corner colour by at most this


def without_bars(image: Any) -> Any:
    """``image`` inside its black letterbox / pillarbox bars (the bars add pixels but no
    resolution). Only near-black borders count as bars: a logo's white margin is part of it."""
    box = image.convert("L").point(lambda v: 255 if v > BORDER_LEVEL else 0).getbbox()
    return image.crop(box) if box and box != (0, 0, image.width, image.height) else image


SOFTER = 0.2  # a copy is "the softer one" when smoothing the other explains this share of their difference
SOFT_WIDTH = 1024  # compared at the smaller copy's size, at most this wide (keeps compression blocks visible)


def _pixels(image: Any, size: tuple[int, int]) -> Any:
    import numpy as np

    return np.asarray(image.convert("RGB").resize(size, resample=4) if image.size != size else image.convert("RGB"),
                      dtype=np.float32)


def softness(image: Any, other: Any) -> float:
    """How far ``image`` is a smoothed ``other`` (same picture): the share of their mean pixel
    difference that a slight blur of ``other`` removes, minus the share a blur of ``image``
    removes. A JPEG q50 or re-encoded copy has lost detail the original has, so blurring the
    original moves it towards the copy and not the reverse (~+0.2 to +0.7 measured); a
    watermark is no blur of anything (|value| <= 0.18 on PIL scenes, logos and text pages). The
    faint-edge count of :func:`added_edges` could not see this: a q50 copy of a detailed scene
    lacks more strong edges than its blocks add (issue 22: 14/17 originals kept)."""
    import numpy as np
    from PIL import ImageFilter

    w = min(image.width, other.width, SOFT_WIDTH)
    size = (w, max(8, round(w * min(image.height, other.height) / min(image.width, other.width))))
    a, b = _pixels(image, size), _pixels(other, size)
    dist = float(np.abs(a - b).mean())
    if dist < 1e-3:
        return 0.0
    a_soft = _pixels(image.filter(ImageFilter.GaussianBlur(1)), size)  # blurred at its own size
    b_soft = _pixels(other.filter(ImageFilter.GaussianBlur(1)), size)
    towards_image = dist - float(np.abs(a - b_soft).mean())  # blurring other approaches image
    towards_other = dist - float(np.abs(b - a_soft).mean())
    return (towards_image - towards_other) / dist


def best_copy(images: list[Any]) -> int:
    """Index of the copy to keep among copies of one picture: the best resolved (most pixels
    inside any letterbox bars; within 10 % counts as equal), then not markedly softer than
    another (:func:`softness` > ``SOFTER``: a recompressed copy), then the cleanest (fewest
    edges the others lack: :func:`added_edges`; then fewer bar pixels), then the earliest.
    Arrival order alone kept a 40 % thumbnail, a watermarked or a JPEG q50 copy over the clean
    original (issue 22)."""
    if len(images) < 2:
        return 0
    framed = [without_bars(im) for im in images]
    bars = [im.width * im.height - f.width * f.height for im, f in zip(images, framed, strict=True)]
    images = framed
    pixels = [im.width * im.height for im in images]
    tier = [i for i, p in enumerate(pixels) if p >= SAME_RESOLUTION * max(pixels)]
    if len(tier) == 1:
        return tier[0]
    defect = {}
    for i in tier:
        added = [added_edges(images[i], images[j]) for j in tier if j != i]
        defect[i] = (round(sum(a for a, _ in added) / len(added), 4), round(sum(f for _, f in added) / len(added), 3))
    soft = {i: any(softness(images[i], images[j]) > SOFTER for j in tier if j != i) for i in tier}
    return min(tier, key=lambda i: (soft[i], *defect[i], bars[i], i))  # equal pictures: the one without bars
