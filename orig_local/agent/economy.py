"""What a request costs the backbone: pictures at the size a stage needs, and the share of
each request a prefix cache can reuse.

* :func:`downscale` - a picture reduced to a pixel bound before it is sent, with the same
  arithmetic Qwen2.5-VL's processor uses (:func:`orig_local.llm.tokens.smart_resize`), so the
  server does not resize it again and the token count is known in advance.
* :class:`PrefixTracker` - vLLM's automatic prefix caching reuses the key/value blocks of a
  request's longest prefix already computed for an earlier request (16-token blocks). Every
  agent request starts with the system turn and its stage's fixed instructions, then the
  prompt, then the evidence (:meth:`~orig_local.agent.stages.base.StageContext.ask`); the
  tracker estimates, per request, how many of its tokens such a cache could serve: the longest
  text prefix shared with a recent request of the same step (this prompt's or another's in
  flight), or at least the system turn, in whole blocks. It is an estimate (a server under
  memory pressure evicts blocks; images are not counted) and is labelled so in the trace.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from orig_local.agent.budget import TokenCounter

BLOCK_TOKENS = 16  # vLLM's default KV-cache block size: only whole blocks are reused
RECENT_PER_STEP = 8  # requests remembered per step (a prefix cache holds many more)


def downscale(image: Any, max_pixels: int | None) -> Any:
    """``image`` (PIL, or anything :class:`~orig_local.llm.base.ImageRef` reads) reduced so it
    has at most ``max_pixels`` pixels, sides multiples of 28 as Qwen2.5-VL's processor would
    make them; returned unchanged when already within the bound or ``max_pixels`` is None."""
    if max_pixels is None:
        return image
    from PIL import Image

    from orig_local.llm.base import ImageRef
    from orig_local.llm.tokens import smart_resize

    pil = image if isinstance(image, Image.Image) else ImageRef(image).to_pil()
    width, height = pil.size
    if width * height <= max_pixels:
        return image
    h, w = smart_resize(height, width, max_pixels=max_pixels)
    return pil.convert("RGB").resize((w, h), Image.Resampling.BICUBIC, reducing_gap=2.0)


def layout(system_text: str, user_text: str) -> str:
    """A request's text up to its first image, as the chat template lays it out."""
    return f"<|im_start|>system\n{system_text}<|im_end|>\n<|im_start|>user\n{user_text}"


def _common(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b``. Prefix comparisons are C-speed but each
    copies its slices, so the first difference is bracketed by doubling from the start (it
    usually lies within the first kilobytes: the system turn and the stage's instructions),
    then found by bisection inside the bracket: O(first difference), not O(n log n)."""
    if len(a) < len(b):
        a, b = b, a  # b is the shorter: a.startswith(b[lo:hi], lo) copies only b's slice
    n = len(b)
    lo, step = 0, 256
    while True:  # invariant: a[:lo] == b[:lo]
        hi = min(lo + step, n)
        if not a.startswith(b[lo:hi], lo):
            break
        if hi == n:
            return n
        lo, step = hi, step * 2
    hi -= 1  # the first difference lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a.startswith(b[lo:mid], lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _longest_common(text: str, seen: deque[str]) -> int:
    """The longest common prefix of ``text`` with any of ``seen``. A text that does not share
    one character more than the best so far is passed over with one comparison (requests of
    a step mostly part at the prompt, at the same place)."""
    best = 0
    probe = ""
    for old in seen:
        if best:
            if len(old) <= best or len(text) <= best:
                continue
            if len(probe) != best + 1:
                probe = text[:best + 1]
            if not old.startswith(probe):
                continue
        best = max(best, _common(text, old))
    return best


class PrefixTracker:
    """Remembers recent request texts per step (shared by every prompt an agent runs) and
    estimates each new request's cacheable tokens (module doc)."""

    def __init__(self, recent: int = RECENT_PER_STEP):
        self.recent = recent
        self._by_step: dict[str, deque[str]] = {}
        self._systems: set[str] = set()

    def cacheable(self, step: str, system_text: str, user_text: str, counter: TokenCounter) -> int:
        text = layout(system_text, user_text)
        seen = self._by_step.setdefault(step, deque(maxlen=self.recent))
        shared = _longest_common(text, seen)
        if system_text in self._systems:
            shared = max(shared, len(layout(system_text, "")))
        seen.append(text)
        self._systems.add(system_text)
        if not shared:
            return 0
        return counter.count(text[:shared]) // BLOCK_TOKENS * BLOCK_TOKENS
