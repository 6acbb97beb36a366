"""Token budgets: how much evidence fits into one backbone request, and how long P̂ may be.

Budgets are counted in tokens, derived from the backbone's context window (its preset's
``serve.max_model_len``) minus the reply, the images and the rendered template. Counting uses the
model's own tokenizer when it is available offline (:func:`make_token_counter`); otherwise a
cheap estimate, labelled as such in the trace (``TokenCounter.label``), so a budget is never
mistaken for an exact count.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)

# English prose averages ~4 characters per token with BPE/sentencepiece vocabularies (Qwen2.5,
# T5); 3.5 errs on the safe side (a budget computed with it is rarely exceeded for real).
CHARS_PER_TOKEN_ESTIMATE = 3.5
DEFAULT_CONTEXT_TOKENS = 32768  # presets' vLLM max_model_len when none is known
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class TokenCounter(Protocol):
    label: str  # "tokenizer:<path>" or "estimate (...)": written into the trace

    def count(self, text: str) -> int: ...


class EstimatedTokens:
    """``ceil(len(text) / chars_per_token)``: no tokenizer needed, O(1)."""

    def __init__(self, chars_per_token: float = CHARS_PER_TOKEN_ESTIMATE):
        self.chars_per_token = chars_per_token
        self.label = f"estimate ({chars_per_token:g} characters per token; no tokenizer loaded)"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)


class TokenizerTokens:
    """Exact counts with a Hugging Face tokenizer (anything with ``encode``)."""

    def __init__(self, tokenizer: Any, name: str = "tokenizer"):
        self.tokenizer = tokenizer
        self.label = f"tokenizer:{name}"

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))


def make_token_counter(path: str | None, subfolder: str | None = None) -> TokenCounter:
    """The tokenizer at ``path`` if it loads offline (local folder or HF cache), else the
    estimate. Never downloads anything."""
    if path:
        try:
            from transformers import AutoTokenizer

            kwargs: dict[str, Any] = {"local_files_only": True}
            if subfolder:
                kwargs["subfolder"] = subfolder
            return TokenizerTokens(AutoTokenizer.from_pretrained(path, **kwargs), path)
        except Exception as exc:  # not cached, no transformers, odd folder: the estimate will do
            log.debug("no offline tokenizer at %s (%s): token counts are estimates", path, exc)
    return EstimatedTokens()


@dataclass
class Budget:
    """The backbone's request budget. ``available(fixed_text, images)`` is what is left for
    evidence once the template text (``fixed_text``), the images and the reply are reserved."""

    counter: TokenCounter
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    reply_tokens: int = 2048
    image_tokens: int = 1280

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def available(self, fixed_text: str = "", images: int = 0, reply_tokens: int | None = None) -> int:
        """``reply_tokens``: the reply limit this request is sent with (default ``self.reply_tokens``)."""
        reply = self.reply_tokens if reply_tokens is None else reply_tokens
        left = self.context_tokens - reply - images * self.image_tokens - self.count(fixed_text)
        return max(left, 0)

    def fitting(self, lines: Sequence[str], limit: int, at_least_one: bool = False) -> int:
        """How many of ``lines``, from the first, fit in ``limit`` tokens joined by newlines
        (``at_least_one``: the first is kept even when it alone is over)."""
        used = 0
        for n, line in enumerate(lines):
            cost = self.count(line) + 1
            if used + cost > limit and (n or not at_least_one):
                return n
            used += cost
        return len(lines)


def truncate_to_tokens(text: str, max_tokens: int, counter: TokenCounter) -> tuple[str, bool]:
    """``text`` cut to at most ``max_tokens``, at a sentence end when one lies in the second
    half of what fits, else at a word boundary. Returns (text, was_cut)."""
    if max_tokens <= 0:
        return "", bool(text)
    if counter.count(text) <= max_tokens:
        return text, False
    # Start from a character estimate, then shrink until the real count fits.
    chars = min(len(text), int(max_tokens * 6))
    cut = text[:chars]
    while cut and counter.count(cut) > max_tokens:
        chars = int(chars * 0.9)
        cut = text[:chars]
    ends = [m.start() for m in _SENTENCE_END.finditer(cut)]
    if ends and ends[-1] >= len(cut) // 2:
        cut = cut[: ends[-1]]
    elif " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(), True
