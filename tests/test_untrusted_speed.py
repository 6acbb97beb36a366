"""sanitize's fast path (printable ASCII skips the per-character look-up) keeps its meaning."""

from __future__ import annotations

import random
import sys
import unicodedata

from orig_local.agent.untrusted import _TAG_LIKE, sanitize


def reference(text: str) -> str:
    """The per-character definition sanitize must keep."""
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "\n\t":
            out.append(ch)
        elif cat in ("Cc", "Cf", "Co", "Cs"):
            continue
        elif cat in ("Zl", "Zp"):
            out.append("\n")
        else:
            out.append(ch)
    return _TAG_LIKE.sub("data", "".join(out))  # tags neutralised in every spelling (the gate's rule)


def test_sanitize_equals_the_per_character_definition():
    rng = random.Random(7)
    specials = ["\u202e", "\u200b", "\ufeff", "\u2028", "\u2029", "\x00", "\x1b", "\x7f", "\x85", "\ue000",
                "\ud800", "é", "漢", "🙂", "\r", "\n", "\t", "<data id='x'>", "</DATA>", "< data"]
    for _ in range(300):
        parts = [rng.choice(specials) if rng.random() < 0.3 else chr(rng.randrange(0x20, 0x7f)) for _ in range(60)]
        parts += [chr(rng.randrange(0, min(sys.maxunicode, 0x30000))) for _ in range(10)]
        rng.shuffle(parts)
        text = "".join(parts)
        assert sanitize(text) == reference(text)
