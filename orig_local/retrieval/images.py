"""Safe image fetching: download (bounded, guarded) -> type checks -> verify -> decode under a
pixel cap -> EXIF transpose, RGB, downscale -> content hash + dHash -> duplicate drop.

Memory is bounded twice. Per decode: the header's size is read before any pixel is decoded;
JPEGs are decoded at a reduced scale (``draft``) and the cap applies to the pixels actually
decoded (``fetch.max_pixels``), so a near-cap image costs at most ~``max_pixels`` x 4 bytes x a
few copies. Across decodes: an :class:`ImageDecoder` admits a decode only while the estimated
memory of all decodes in flight stays within ``fetch.decode_memory_mb``; the others wait
(within the fetch deadline). Pillow's own global ``MAX_IMAGE_PIXELS`` is left alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import time

from orig_local.imagehash import Fingerprint, dhash64, fingerprint, same_picture
from orig_local.retrieval.base import FetchedImage, FetchFailure
from orig_local.retrieval.config import FetchConfig
from orig_local.retrieval.httpfetch import HttpSession

log = logging.getLogger(__name__)

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


def decode_plan(data: bytes, config: FetchConfig) -> tuple[int, int, int] | str:
    """``(width, height, estimated bytes)`` that decoding ``data`` will produce and cost, from the
    header alone; or a reason to refuse it (a bomb). Cheap: no pixel is decoded."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as probe:
            w, h = probe.size
            if probe.format == "JPEG":
                if w * h > config.max_pixels * _JPEG_MAX_REDUCTION:
                    return f"declares {w}x{h} pixels, too many even at 1/8 scale"
                probe.draft("RGB", (config.max_side, config.max_side))
                w, h = probe.size
            if w * h > config.max_pixels:
                return f"declares {w}x{h} pixels > cap {config.max_pixels}"
            return w, h, w * h * _MODE_BYTES.get(probe.mode, 4) * _COPIES
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


class ImageDecoder:
    """Runs :func:`decode_image` in threads under a shared memory budget: a decode starts only
    while the estimated bytes of all decodes in flight stay within ``decode_memory_mb`` (one
    decode is always admitted when nothing else runs). Waiting is bounded by ``timeout_s``."""

    def __init__(self, config: FetchConfig):
        self.config = config
        self.budget = config.decode_memory_mb * 1_000_000
        self.in_use = 0
        self._cond: tuple[object, asyncio.Condition] | None = None

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._cond is None or self._cond[0] is not loop:
            self._cond = (loop, asyncio.Condition())
        return self._cond[1]

    async def decode(self, data: bytes, url: str, page_url: str | None = None,
                     content_type: str = "", deadline: float | None = None) -> FetchedImage | FetchFailure:
        """``deadline`` (``time.monotonic()``) bounds the wait for budget; default: ``timeout_s``
        from now. The decode itself is bounded by the pixel cap (under a second at the cap)."""
        plan = decode_plan(data, self.config)
        if isinstance(plan, str):
            return FetchFailure(url=url, kind="bomb", detail=plan)
        need = min(plan[2], self.budget)
        cond = self._condition()
        if deadline is None:
            deadline = time.monotonic() + self.config.timeout_s
        async with cond:
            while self.in_use and self.in_use + need > self.budget:
                left = deadline - time.monotonic()
                if left <= 0:
                    return FetchFailure(url=url, kind="timeout", detail="waited too long for decode memory")
                try:
                    await asyncio.wait_for(cond.wait(), left)
                except asyncio.TimeoutError:
                    return FetchFailure(url=url, kind="timeout", detail="waited too long for decode memory")
            self.in_use += need
        try:
            return await asyncio.to_thread(decode_image, data, url, self.config, page_url, content_type)
        finally:
            async with cond:
                self.in_use -= need
                cond.notify_all()


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


class Deduplicator:
    """Drops exact (sha256) and near (guarded dHash within ``max_distance`` bits:
    :func:`~orig_local.imagehash.same_picture`) duplicates of images seen since the last
    :meth:`reset`. Semantic near-duplicates are the CLIP dedup's job."""

    def __init__(self, max_distance: int = 6):
        self.max_distance = max_distance
        self.reset()

    def reset(self) -> None:
        self._sha: dict[str, str] = {}
        self._seen: list[tuple[Fingerprint, str]] = []

    def check(self, image: FetchedImage) -> FetchFailure | None:
        if image.bytes_sha256 in self._sha:
            return FetchFailure(url=image.url, kind="duplicate", detail=f"same bytes as {self._sha[image.bytes_sha256]}")
        if image.dhash is not None and image.image is not None:
            fp = fingerprint(image.image, image.dhash)
            for other, other_url in self._seen:
                same, why = same_picture(fp, other, self.max_distance)
                if same:
                    return FetchFailure(url=image.url, kind="duplicate", detail=f"near-duplicate of {other_url} ({why})")
        return None

    def add(self, image: FetchedImage) -> None:
        self._sha[image.bytes_sha256] = image.url
        if image.dhash is not None and image.image is not None:
            self._seen.append((fingerprint(image.image, image.dhash), image.url))


class WebImageFetcher:
    """Downloads and decodes images from the web (see the module doc). ``fetch_bytes`` is the
    network half (recorded into snapshots); ``decode`` the deterministic half."""

    def __init__(self, config: FetchConfig | None = None, session: HttpSession | None = None):
        self.config = config or FetchConfig()
        self.session = session or HttpSession(self.config)
        self.decoder = ImageDecoder(self.config)

    async def decode(self, data: bytes, url: str, page_url: str | None = None,
                     content_type: str = "") -> FetchedImage | FetchFailure:
        return await self.decoder.decode(data, url, page_url, content_type)

    async def fetch_bytes(self, url: str) -> tuple[bytes, str] | FetchFailure:
        cfg = self.config
        raw = await self.session.get(url, max_bytes=cfg.max_bytes, max_redirects=cfg.max_redirects,
                                     timeout_s=cfg.timeout_s, accept=ACCEPT)
        if isinstance(raw, FetchFailure):
            return raw
        if raw.status >= 400:
            return FetchFailure(url=url, kind="http_error", detail=f"HTTP {raw.status}")
        ctype = raw.content_type
        if not ctype.startswith("image/") and ctype not in NEUTRAL_TYPES:
            return FetchFailure(url=url, kind="not_image", detail=f"Content-Type {ctype}")
        if not raw.body:
            return FetchFailure(url=url, kind="empty", detail="no bytes")
        return raw.body, ctype

    async def fetch(self, url: str, page_url: str | None = None) -> FetchedImage | FetchFailure:
        deadline = time.monotonic() + self.config.timeout_s  # download and waiting for decode memory
        got = await self.fetch_bytes(url)
        if isinstance(got, FetchFailure):
            return got
        data, ctype = got
        return await self.decoder.decode(data, url, page_url, ctype, deadline=max(deadline, time.monotonic()))
