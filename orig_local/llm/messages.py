"""Chat messages: text and images in order (:class:`Message`, :class:`ImageRef`), and the wire
form of each picture, encoded once however many requests carry it. Part of the chat-model
protocol (:mod:`orig_local.llm.base`, which re-exports every name here)."""

from __future__ import annotations

import base64
import hashlib
import io
import mmap
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Formats sent as they came (no decode, no re-encode): the ones the OpenAI chat API documents
# for image_url data URIs. vLLM and transformers serve decode with PIL and take all three.
# Anything else (BMP, TIFF, a PIL image in memory) is encoded once as PNG.
WIRE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


def _sent_as_is(im) -> str | None:
    """The mime type a picture goes on the wire as it came (one frame of a WIRE_FORMATS
    format), else None (encoded as PNG)."""
    mime = WIRE_FORMATS.get(im.format or "")
    return mime if mime is not None and getattr(im, "n_frames", 1) == 1 else None


def _encoded(data: bytes) -> tuple[bytes, str, int]:
    """(base64, sha256, length) of bytes sent."""
    return base64.b64encode(data), hashlib.sha256(data).hexdigest(), len(data)


class _Encoded:
    """The wire form of one picture, shared by every :class:`ImageRef` over it: computed once
    (under a lock, so two threads never encode the same picture twice)."""

    __slots__ = ("data_uri", "lock", "mime", "nbytes", "sha256", "size")

    def __init__(self):
        self.lock = threading.Lock()
        # the base64 of the bytes sent (ASCII): bytes, or an anonymous memory map (llm/wire.py)
        self.data_uri: bytes | mmap.mmap | None = None
        self.sha256: str | None = None
        self.mime: str | None = None
        self.nbytes = 0
        self.size: tuple[int, int] | None = None


class ImageRef:
    """An image inside a chat message: a PIL image, a file path or encoded bytes.

    Nothing is decoded up front. :meth:`prepare` turns the picture into what goes on the wire
    once: a PNG/JPEG/WebP file or byte string is sent as it came (only its header is read), any
    other source is encoded as PNG. Wrapping an ImageRef in another shares that work, so a
    picture sent in eight requests is read and encoded once. :meth:`sha256` (cache keys) hashes
    the bytes sent.
    """

    label: str | None
    _enc: _Encoded

    def __init__(self, source: Any, label: str | None = None):
        if isinstance(source, ImageRef):
            self.source: Any = source.source
            self.label = label or source.label
            self._enc = source._enc
            return
        if isinstance(source, str):
            source = Path(source)
        self.source = source
        self.label = label
        self._enc = _Encoded()

    def to_pil(self):
        from PIL import Image

        if isinstance(self.source, Path):
            with Image.open(self.source) as im:
                return im.convert("RGB")
        if isinstance(self.source, (bytes, bytearray)):
            with Image.open(io.BytesIO(self.source)) as im:
                return im.convert("RGB")
        return self.source.convert("RGB")

    @property
    def prepared(self) -> bool:
        return self._enc.data_uri is not None

    def prepare(self) -> ImageRef:
        """Compute the wire form (blocking: file read, maybe a PNG encode, hash, base64). Call
        it in a worker thread from async code; :meth:`BaseChatModel.chat` does."""
        enc = self._enc
        if enc.data_uri is not None:
            return self
        with enc.lock:
            if enc.data_uri is None:
                b64, enc.sha256, enc.nbytes, enc.mime, enc.size = self._wire_bytes()
                enc.data_uri = b64  # last: a reader outside the lock sees it only when all is set
        return self

    def _wire_bytes(self) -> tuple[bytes | mmap.mmap, str, int, str, tuple[int, int]]:
        """What goes on the wire: (its base64, sha256 and length of the bytes sent, mime, size).
        A PNG/JPEG/WebP file is sent as it came, read in pieces straight into its base64
        (llm/wire.py: its bytes are never held beside it); bytes in such a format likewise;
        anything else is encoded once as PNG. Only the base64 is kept."""
        from PIL import Image

        if isinstance(self.source, Path):
            with Image.open(self.source) as im:  # reads the header only
                mime, size = _sent_as_is(im), im.size
            if mime is not None:
                from orig_local.llm.wire import file_base64

                return (*file_base64(self.source), mime, size)
        elif isinstance(self.source, (bytes, bytearray)):
            raw = bytes(self.source)
            with Image.open(io.BytesIO(raw)) as im:  # reads the header only
                mime, size = _sent_as_is(im), im.size
            if mime is not None:
                return (*_encoded(raw), mime, size)
        picture = self.to_pil()
        buf = io.BytesIO()
        picture.save(buf, format="PNG")
        return (*_encoded(buf.getvalue()), "image/png", picture.size)

    def data_uri_parts(self) -> tuple[bytes, bytes | mmap.mmap]:
        """``(b"data:<mime>;base64,", base64 bytes)``: the data URI in two pieces, the second
        one shared object (bytes-like), so a request body can stream it without copying."""
        enc = self.prepare()._enc
        return f"data:{enc.mime};base64,".encode("ascii"), enc.data_uri  # type: ignore[return-value]

    def data_uri(self) -> str:
        """``data:<mime>;base64,...`` of the bytes sent, as a string (a copy)."""
        prefix, b64 = self.data_uri_parts()
        return (prefix + b64).decode("ascii")

    def sha256(self) -> str:
        """SHA-256 of the bytes sent (the file's own bytes, or the PNG encoding)."""
        return self.prepare()._enc.sha256  # type: ignore[return-value]

    png_sha256 = sha256  # the earlier name, from when every image was re-encoded as PNG

    @property
    def mime(self) -> str:
        return self.prepare()._enc.mime  # type: ignore[return-value]

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) without decoding the pixels."""
        if self._enc.size is not None:
            return self._enc.size
        if hasattr(self.source, "size") and not callable(self.source.size):
            return tuple(self.source.size)  # type: ignore[return-value]
        from PIL import Image

        opened = Image.open(self.source if isinstance(self.source, Path) else io.BytesIO(self.source))
        with opened as im:
            return tuple(im.size)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"ImageRef({self.label or type(self.source).__name__})"


def prepare_images(messages: Sequence[Message]) -> None:
    """Compute the wire form of every image in ``messages`` (blocking; see ImageRef.prepare)."""
    for m in messages:
        for image in m.images:
            image.prepare()


Part = str | ImageRef


@dataclass
class Message:
    """One chat turn. ``parts`` mixes text and images in order."""

    role: str  # system | user | assistant
    parts: list[Part]

    def __post_init__(self):
        if self.role not in ("system", "user", "assistant"):
            raise ValueError(f"unknown role {self.role!r}")
        # An ImageRef is kept as is, so its encoded PNG (and hash) is computed once even when
        # the same picture goes into many requests.
        self.parts = [p if isinstance(p, (str, ImageRef)) else ImageRef(p) for p in self.parts]

    @property
    def images(self) -> list[ImageRef]:
        return [p for p in self.parts if isinstance(p, ImageRef)]

    @property
    def text(self) -> str:
        return "".join(p for p in self.parts if isinstance(p, str))

    def canonical(self) -> dict[str, Any]:
        """JSON-able form with images replaced by their content hash (cache keys, traces)."""
        return {
            "role": self.role,
            "parts": [p if isinstance(p, str) else {"image_sha256": p.sha256()} for p in self.parts],
        }


def system(text: str) -> Message:
    return Message("system", [text])


def user(*parts: Any) -> Message:
    return Message("user", list(parts))


def assistant(text: str) -> Message:
    return Message("assistant", [text])


