"""One judged question: :class:`Verdict`, the record both judges write (the FIG-Eval true/false
judge in :mod:`orig_local.evaluation.judge` and the benchmarks' own rubrics in
:mod:`orig_local.evaluation.wise_judge`). Below both, so neither judge imports the other's module
for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Verdict:
    """One judged question (or gold fact). ``answer`` is what the judge said (bool, or a letter
    for multiple choice, or a rubric's grades by name), ``correct`` whether it matches the
    expected answer; both None on error."""

    qid: str
    answer: bool | str | dict[str, float] | None
    expected: bool | str | int | None = True  # int: WISE_Verified's binary score (1)
    correct: bool | None = None
    concept: str | None = None
    modality: str = "text"
    p_true: float | None = None
    raw: list[str] = field(default_factory=list)  # every raw reply (invalid attempts first)
    error: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rule: str | None = None  # multiple choice: how the reply was read (first_character / labelled / schema)
    # sha256 of the rendered request (messages with images as content hashes, schema, settings):
    # a verdict can be re-checked later (the templates' hashes are in run.json, judge_templates)
    request_sha256: str | None = None
    # why the judge's last reply ended: "stop", or "length" = cut at max_tokens (``truncated``)
    finish_reason: str | None = None
    truncated: bool = False

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


def record_finish(verdict: Verdict, reply: Any) -> None:
    """Put on the verdict why the judge's last reply ended, so a cut reply shows on its row and
    not only in an error text."""
    verdict.finish_reason = getattr(reply, "finish_reason", None)  # a reply, or StructuredOutputError
    verdict.truncated = verdict.finish_reason == "length"
