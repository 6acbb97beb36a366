"""Reference images for generators: normalise them and fit them to a model's limit.

Models differ in how many reference images they take (Qwen-Image-Edit-2509: up to 3;
Qwen-Image-Edit and FLUX.1-Kontext: 1; text-to-image models: 0). The agent orders references
most informative first; :func:`fit_references` keeps that order and says what it did, so the
trace records exactly which references reached the model.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Collage parts are scaled to a common height no larger than this (the pipelines resize again).
COLLAGE_MAX_HEIGHT = 1024


def to_pil(image: Any):
    """A PIL image, path, encoded bytes or anything with ``to_pil()`` (``ImageRef``) -> RGB PIL."""
    from PIL import Image

    if hasattr(image, "to_pil"):
        return image.to_pil().convert("RGB")
    if isinstance(image, (str, Path)):
        with Image.open(image) as im:
            return im.convert("RGB")
    if isinstance(image, (bytes, bytearray)):
        with Image.open(io.BytesIO(image)) as im:
            return im.convert("RGB")
    if isinstance(image, Image.Image):
        return image.convert("RGB")
    raise TypeError(f"unsupported reference image type {type(image).__name__}")


def collage(images: Sequence[Any]):
    """Side-by-side strip of ``images`` at a common height (white background)."""
    from PIL import Image

    height = min(COLLAGE_MAX_HEIGHT, max(im.height for im in images))
    parts = [im.resize((max(1, round(im.width * height / im.height)), height), Image.BICUBIC) for im in images]
    strip = Image.new("RGB", (sum(p.width for p in parts), height), "white")
    x = 0
    for part in parts:
        strip.paste(part, (x, 0))
        x += part.width
    return strip


def fit_references(images: Sequence[Any], limit: int, strategy: str = "first", model: str = "model"):
    """Return ``(images_for_the_pipeline, references_used, notes)``.

    ``references_used`` counts the *original* references that reach the pipeline (a collage of
    three counts three)."""
    images = [to_pil(im) for im in images]
    n = len(images)
    if n == 0:
        return [], 0, []
    if limit <= 0:
        return [], 0, [f"text-only generator {model}: {n} reference image(s) not used; "
                       "the text prompt alone conditions the image"]
    if n <= limit:
        return images, n, []
    if strategy == "first":
        return images[:limit], limit, [
            f"{model} takes at most {limit} reference image(s): kept the first {limit} of {n} "
            f"(agent order, most informative first), dropped {n - limit}"]
    if strategy == "collage":
        keep = images[: limit - 1]
        packed = collage(images[limit - 1 :])
        return keep + [packed], n, [
            f"{model} takes at most {limit} reference image(s): references {limit}-{n} of {n} "
            f"combined side by side into one collage"]
    raise ValueError(f"unknown reference strategy {strategy!r} (first, collage)")
