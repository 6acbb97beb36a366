"""Image bytes to a verified RGB picture: sniffing, the decode plan under the memory and pixel
caps, and :func:`decode_image` itself. Pure functions with no fetching, below both
:mod:`orig_local.retrieval.images` (which fetches and schedules decodes) and the parse worker
(which runs decodes in a process killed at the deadline); see ``images.py`` for the budget."""

from __future__ import annotations

import hashlib
import io

from orig_local.imagehash import dhash64
from orig_local.retrieval.base import FetchedImage, FetchFailure
from orig_local.retrieval.config import FetchConfig

ACCEPT = "image/png,image/jpeg,image/webp,image/gif,image/*;q=0.8"
# Leading bytes of the formats we accept. (WebP: RIFF....WEBP.)
MAGIC = {
    b"\x89PNG\r\n\x1a\n": "png",
    b"\xff\xd8\xff": "jpeg",
    b"GIF87a": "gif",
    b"GIF89a": "gif",
    b"BM": "bmp",
}
# Servers often send images as octet-stream or with no type; magic bytes then decide.
NEUTRAL_TYPES = ("", "application/octet-stream", "binary/octet-stream")


def sniff(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    for magic, name in MAGIC.items():
        if data.startswith(magic):
            return name
    return None


# Bytes per decoded pixel by mode, and copies alive at once (decoded, converted, transposed).
_MODE_BYTES = {"1": 1, "L": 1, "P": 1, "LA": 2, "RGB": 3, "YCbCr": 3, "RGBA": 4, "CMYK": 4, "I": 4, "F": 4}
_COPIES = 3
# A JPEG is decoded at up to 1/8 scale per side, so its declared size may exceed the cap this much.
_JPEG_MAX_REDUCTION = 64


def jpeg_scans(data: bytes) -> int:
    """Start-of-scan markers in a JPEG (0xFFDA; inside entropy-coded data a 0xFF byte is always
    followed by 0x00, so every match is a real marker)."""
    return data.count(b"\xff\xda")


def coefficient_bytes(probe) -> int:
    """What libjpeg holds for a progressive or multi-scan JPEG: one 16-bit coefficient per
    sample of every component at its sampling factor, for the full declared size."""
    w, h = probe.size
    layers = getattr(probe, "layer", None) or [(0, 1, 1, 0)] * 3
    hmax = max(layer[1] for layer in layers) or 1
    vmax = max(layer[2] for layer in layers) or 1
    total = 0
    for _, hs, vs, _ in layers:
        cw = -(-w * hs // hmax // 8) * 8  # whole 8x8 blocks
        ch = -(-h * vs // vmax // 8) * 8
        total += cw * ch * 2
    return total


def decode_plan(data: bytes, config: FetchConfig) -> tuple[int, int, int] | str:
    """``(width, height, estimated bytes)`` that decoding ``data`` will produce and cost, from the
    header alone; or a reason to refuse it (a bomb). Cheap: no pixel is decoded."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as probe:
            w, h = probe.size
            extra = 0
            if probe.format == "JPEG":
                if w * h > config.max_pixels * _JPEG_MAX_REDUCTION:
                    return f"declares {w}x{h} pixels, too many even at 1/8 scale"
                scans = jpeg_scans(data)
                if scans > config.max_jpeg_scans:
                    return f"{scans} JPEG scans > {config.max_jpeg_scans}"
                if scans > 1 or probe.info.get("progressive") or probe.info.get("progression"):
                    extra = coefficient_bytes(probe)
                probe.draft("RGB", (config.max_side, config.max_side))
                w, h = probe.size
            if w * h > config.max_pixels:
                return f"declares {w}x{h} pixels > cap {config.max_pixels}"
            cost = w * h * _MODE_BYTES.get(probe.mode, 4) * _COPIES + extra
            if cost > config.decode_memory_mb * 1_000_000:
                return (f"decoding needs ~{cost / 1e6:.0f} MB (full-size coefficient buffers of a "
                        f"progressive/multi-scan JPEG) > decode_memory_mb {config.decode_memory_mb}")
            return w, h, cost
    except Exception:  # noqa: BLE001 - unreadable headers are decode_image's to report, typed
        return 0, 0, 0


def decode_image(data: bytes, url: str, config: FetchConfig, page_url: str | None = None,
                 content_type: str = "") -> FetchedImage | FetchFailure:
    """Bytes -> verified RGB image. Pure and deterministic (replay relies on it)."""
    from PIL import Image, ImageOps

    kind = sniff(data)
    if kind is None:
        return FetchFailure(url=url, kind="not_image",
                            detail=f"bytes are not an image (claimed {content_type or 'no type'})")
    plan = decode_plan(data, config)
    if isinstance(plan, str):
        return FetchFailure(url=url, kind="bomb", detail=plan)
    try:
        with Image.open(io.BytesIO(data)) as probe:  # reads the header only
            probe.verify()  # structure/CRC check without decoding pixels
        with Image.open(io.BytesIO(data)) as im:
            im.draft("RGB", (config.max_side, config.max_side))  # JPEG: decode at reduced scale
            if im.size[0] * im.size[1] > config.max_pixels:
                return FetchFailure(url=url, kind="bomb", detail=f"{im.size[0]}x{im.size[1]} pixels > cap {config.max_pixels}")
            im.load()
            im = ImageOps.exif_transpose(im)
            im = _to_rgb(im)
    except Image.DecompressionBombError as exc:
        return FetchFailure(url=url, kind="bomb", detail=str(exc))
    except MemoryError:
        return FetchFailure(url=url, kind="bomb", detail="out of memory while decoding")
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombWarning) as exc:
        # truncated or corrupt data (SyntaxError is what verify() raises for bad PNG chunks)
        return FetchFailure(url=url, kind="decode_error", detail=f"{type(exc).__name__}: {exc}")
    if min(im.size) < config.min_side:
        return FetchFailure(url=url, kind="too_small", detail=f"{im.size[0]}x{im.size[1]}")
    if max(im.size) > config.max_side:
        im.thumbnail((config.max_side, config.max_side), Image.Resampling.LANCZOS)
    return FetchedImage(image=im, bytes_sha256=hashlib.sha256(data).hexdigest(), url=url, page_url=page_url,
                        width=im.size[0], height=im.size[1], dhash=dhash64(im))


def _to_rgb(im):
    from PIL import Image

    if im.mode == "RGB":
        return im
    if im.mode in ("RGBA", "LA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))  # transparent -> white, not black
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return im.convert("RGB")
