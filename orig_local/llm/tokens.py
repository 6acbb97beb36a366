"""Input-token counts of chat requests as Qwen2.5-VL sees them (paper Table 6 is in these units).

Text is counted with the real Qwen2 byte-level BPE when one is available, in this order:

1. the official ``tokenizer.json`` of a cached model (a folder given, or the Hugging Face
   cache's ``Qwen/Qwen2.5-VL-*`` snapshots: Qwen's own files, Apache-2.0), read with Hugging
   Face's ``tokenizers`` - only if its vocabulary is the real one (>= 151,643 ranks; the tiny
   test models carry a toy vocabulary and are not used for counting);
2. the Qwen BPE ranks Alibaba ships in its own DashScope SDK (``dashscope/resources/
   qwen.tiktoken``, Apache-2.0; the ``tokens`` extra installs it), read with OpenAI's
   ``tiktoken`` and Qwen's own pre-tokenisation pattern and NFC normalisation (what the SDK's
   ``QwenTokenizer`` does; the package is not imported). The same 151,643 ranks as Qwen2/2.5's
   ``tokenizer.json``. No third-party repackaging of Qwen's ranks is used (their provenance and
   licence cannot be checked);
3. otherwise an estimate (one token per ~4 characters of UTF-8, more for CJK), and the counter
   says so: ``exact`` is False and ``name`` starts with ``estimate``.

Images are counted with Qwen2.5-VL's rule (transformers ``Qwen2VLImageProcessor`` /
``smart_resize``): the picture is resized to multiples of 28 px with its pixel count inside
``[min_pixels, max_pixels]``, cut into 14-px patches, and every 2x2 patches merge into one
token, so tokens = (h/28)·(w/28); plus ``<|vision_start|>`` and ``<|vision_end|>``.

A request is laid out as the Qwen2.5-VL chat template does (default system turn when the first
message is not a system message; ``<|im_start|>role\\n ... <|im_end|>\\n`` per turn; the
generation prompt ``<|im_start|>assistant\\n``).
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

QWEN2_VOCAB = 151_643  # BPE ranks of Qwen2/2.5 (special tokens come after)
PATCH = 14
MERGE = 2
FACTOR = PATCH * MERGE  # 28 px per image token side
DEFAULT_MIN_PIXELS = 56 * 56  # transformers' Qwen2VLImageProcessor defaults
DEFAULT_MAX_PIXELS = 28 * 28 * 1280  # = 1,003,520, also the presets' vLLM mm_processor_kwargs
DEFAULT_SYSTEM = "You are a helpful assistant."
VISION_TOKENS = 2  # <|vision_start|> ... <|vision_end|>


# --------------------------------------------------------------------------- images


def smart_resize(height: int, width: int, factor: int = FACTOR, min_pixels: int = DEFAULT_MIN_PIXELS,
                 max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[int, int]:
    """(height, width) after Qwen2-VL's resize: multiples of ``factor``, pixels within bounds,
    aspect ratio kept as closely as possible (same arithmetic as transformers)."""
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio must be below 200, got {width}x{height}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def image_tokens(width: int, height: int, *, min_pixels: int = DEFAULT_MIN_PIXELS,
                 max_pixels: int = DEFAULT_MAX_PIXELS) -> int:
    """``<|image_pad|>`` tokens Qwen2.5-VL spends on one ``width`` x ``height`` image (without
    the two vision delimiters)."""
    h, w = smart_resize(height, width, min_pixels=min_pixels, max_pixels=max_pixels)
    return (h // FACTOR) * (w // FACTOR)


# --------------------------------------------------------------------------- text


class TextCounter(Protocol):
    name: str
    exact: bool  # real Qwen2 vocabulary (False: an estimate)

    def count(self, text: str) -> int: ...


class _HFCounter:
    exact = True

    def __init__(self, path: Path):
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(path))
        self.name = f"tokenizer.json ({path.parent.name})"

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids) if text else 0


class _VendorRanksCounter:
    """Qwen's BPE ranks from Alibaba's DashScope SDK, encoded with tiktoken (module doc, 2)."""

    exact = True
    # Qwen's pre-tokenisation (dashscope/tokenizers/qwen_tokenizer.py, Qwen2's tokenizer.json alike)
    PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
    CHUNK = 100_000  # tiktoken's recursive merge can overflow its stack on huge inputs

    def __init__(self, ranks_file: Path):
        import base64

        import tiktoken

        ranks = {base64.b64decode(token): int(rank) for token, rank in
                 (line.split() for line in ranks_file.read_bytes().splitlines() if line)}
        self.encoding = tiktoken.Encoding("qwen-dashscope", pat_str=self.PATTERN, mergeable_ranks=ranks,
                                          special_tokens={})
        self.name = f"Qwen BPE ranks ({ranks_file.parent.parent.name} SDK, tiktoken)"

    def count(self, text: str) -> int:
        import unicodedata

        text = unicodedata.normalize("NFC", text)
        return sum(len(self.encoding.encode_ordinary(text[i: i + self.CHUNK]))
                   for i in range(0, len(text), self.CHUNK))


def _vendor_ranks() -> Path | None:
    """``qwen.tiktoken`` inside an installed DashScope SDK (found without importing it)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("dashscope")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "resources" / "qwen.tiktoken"
        if path.is_file():
            return path
    return None


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


class EstimateCounter:
    """No tokenizer available: ~4 UTF-8 characters per token, one token per CJK character.
    Labelled as an estimate wherever it is used."""

    exact = False
    name = "estimate (~4 chars/token; no official Qwen tokenizer.json cached)"

    def count(self, text: str) -> int:
        if not text:
            return 0
        cjk = len(_CJK.findall(text))
        return cjk + math.ceil((len(text) - cjk) / 4)


def _vocab_size(path: Path) -> int:
    try:
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(path)).get_vocab_size(with_added_tokens=False)
    except Exception as exc:  # noqa: BLE001 - an unreadable file is just not a candidate
        log.debug("cannot read %s: %s", path, exc)
        return 0


def _hf_cache_candidates() -> Iterable[Path]:
    import os

    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", Path.home() / ".cache/huggingface")) / "hub")
    for snap in sorted(hub.glob("models--Qwen--Qwen2*-VL-*/snapshots/*")):
        yield snap / "tokenizer.json"


def load_counter(tokenizer_dir: str | Path | None = None) -> TextCounter:
    """The best available text counter (module doc); never raises for a missing tokenizer."""
    candidates = [Path(tokenizer_dir) / "tokenizer.json"] if tokenizer_dir else []
    candidates += list(_hf_cache_candidates())
    for path in candidates:
        if path.is_file():
            size = _vocab_size(path)
            if size >= QWEN2_VOCAB:
                return _HFCounter(path)
            log.debug("%s has %d ranks, not Qwen2's vocabulary: not used for counting", path, size)
    ranks = _vendor_ranks()
    if ranks is not None:
        try:
            counter = _VendorRanksCounter(ranks)
        except ImportError:
            log.debug("tiktoken is not installed: the SDK's Qwen ranks cannot be read")
        else:
            if counter.encoding.n_vocab >= QWEN2_VOCAB:
                return counter
            log.debug("%s has %d ranks, not Qwen2's vocabulary: not used", ranks, counter.encoding.n_vocab)
    return EstimateCounter()


class MemoCounter:
    """A :class:`TextCounter` that remembers each text's count (the same system turn, template
    text and chat scaffolding are counted in every request; a dry run's repeated prompts send
    the same requests). Bounded by the characters it holds, oldest forgotten first; safe to
    share between the event loop and counting threads."""

    def __init__(self, counter: TextCounter, max_chars: int = 4_000_000):
        import threading

        self.counter = counter
        self.name, self.exact = counter.name, counter.exact
        self.max_chars = max_chars
        self._counts: dict[str, int] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def known(self, text: str) -> int | None:
        """The remembered count of ``text``, or None (nothing is tokenized)."""
        return self._counts.get(text)

    def count(self, text: str) -> int:
        n = self._counts.get(text)
        if n is None:
            n = self.counter.count(text)
            with self._lock:
                if text not in self._counts:
                    self._counts[text] = n
                    self._chars += len(text)
                while self._chars > self.max_chars and len(self._counts) > 1:
                    self._chars -= len(oldest := next(iter(self._counts)))
                    del self._counts[oldest]
        return n


class _NotKnown(LookupError):
    pass


class _KnownOnly:
    """A memo's counts without tokenizing: an unknown text raises :class:`_NotKnown`."""

    def __init__(self, memo: MemoCounter):
        self.memo, self.name, self.exact = memo, memo.name, memo.exact

    def count(self, text: str) -> int:
        n = self.memo.known(text)
        if n is None:
            raise _NotKnown(text[:40])
        return n


@functools.lru_cache(maxsize=1)
def default_counter() -> TextCounter:
    """:func:`load_counter` with no folder, loaded once per process (the BPE ranks take a
    fraction of a second to read)."""
    return load_counter()


# --------------------------------------------------------------------------- requests


@dataclass
class RequestTokens:
    text: int = 0  # text incl. chat-template scaffolding
    image: int = 0  # image tokens incl. vision delimiters
    images: int = 0  # number of images

    @property
    def total(self) -> int:
        return self.text + self.image

    def __add__(self, other: RequestTokens) -> RequestTokens:
        return RequestTokens(self.text + other.text, self.image + other.image, self.images + other.images)


def _parts(message: Any) -> tuple[str, list[Any]]:
    """(role, parts) of a :class:`~orig_local.llm.base.Message` or its canonical dict."""
    if isinstance(message, dict):
        return message["role"], list(message.get("parts", []))
    return message.role, list(message.parts)


def count_request(messages: Iterable[Any], counter: TextCounter, *,
                  image_size: Callable[[Any], tuple[int, int]] | None = None,
                  min_pixels: int = DEFAULT_MIN_PIXELS, max_pixels: int = DEFAULT_MAX_PIXELS,
                  generation_prompt: bool = True) -> RequestTokens:
    """Input tokens of one chat request laid out by the Qwen2.5-VL chat template.

    ``messages``: :class:`~orig_local.llm.base.Message` objects, or their canonical dicts from a
    trace (images as ``{"image_sha256": ...}``). A part that is not a string is an image; its
    (width, height) comes from ``image_size(part)`` - by default the part's ``to_pil()`` /
    ``size`` (an :class:`~orig_local.llm.base.ImageRef` or a PIL image)."""
    messages = list(messages)
    size_of = image_size or _default_size
    out = RequestTokens()
    specials = 0
    # Text between special tokens, each tokenized on its own (special tokens split the text).
    segments: list[str] = []
    if messages and _parts(messages[0])[0] != "system":
        segments += [f"system\n{DEFAULT_SYSTEM}", "\n"]
        specials += 2
    for m in messages:
        role, parts = _parts(m)
        specials += 2  # <|im_start|> ... <|im_end|>
        current = f"{role}\n"
        for part in parts:
            if isinstance(part, str):
                current += part
            else:
                segments.append(current)
                current = ""
                w, h = size_of(part)
                out.image += image_tokens(w, h, min_pixels=min_pixels, max_pixels=max_pixels) + VISION_TOKENS
                out.images += 1
        segments += [current, "\n"]
    if generation_prompt:
        specials += 1
        segments.append("assistant\n")
    out.text = specials + sum(counter.count(seg) for seg in segments)
    return out


def known_request(messages: Iterable[Any], memo: MemoCounter, **kwargs: Any) -> RequestTokens | None:
    """:func:`count_request` when every text segment's count is already in ``memo`` (cheap
    enough for the event loop: nothing is tokenized), else None."""
    try:
        return count_request(messages, _KnownOnly(memo), **kwargs)
    except _NotKnown:
        return None


def _default_size(part: Any) -> tuple[int, int]:
    if hasattr(part, "size") and not callable(part.size):
        return tuple(part.size)  # PIL image
    source = getattr(part, "source", None)
    if source is not None and hasattr(source, "size") and not callable(source.size):
        return tuple(source.size)  # an ImageRef over a PIL image: no decode, no copy
    if hasattr(part, "to_pil"):
        return tuple(part.to_pil().size)
    raise ValueError(f"cannot size image part {part!r}: pass image_size=")
