"""WISE's own judges: the inputs its authors' judges see (prompt + explanation + image) and
their score scales, with a typed structured reply.

* ``wise_wiscore`` - legacy WISE (GPT-4o judge): consistency, realism and aesthetic quality,
  each 0/1/2 (:class:`WiScoreReply`); WiScore = (0.7 c + 0.2 r + 0.1 a) / 2.
* ``wise_verified`` - WISE_Verified (Qwen3.5-35B-A3B judge): one binary score (:class:`VerifiedReply`).

Each reply states its reasons before its scores (the schema's field order), so a constrained
decoder writes the reasoning first. Instructions are our own templates
(``templates/wise_*.jinja``, overridable through ``prompts_dir``). A reply that fails the
schema after the chat layer's bounded retries is an error on the verdict, never a default score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from orig_local.evaluation.items import Question
from orig_local.evaluation.verdict import Verdict, record_finish
from orig_local.llm.base import ChatError, ImageRef, StructuredOutputError, system, user

if TYPE_CHECKING:
    from orig_local.llm.base import BaseChatModel


class RubricJudge(Protocol):
    """What a rubric reads of the judge (:class:`orig_local.evaluation.judge.Judge` is one): its
    chat model, its templates and its reply bound. A protocol, so this module does not import
    the judge that calls it."""

    chat: BaseChatModel
    max_tokens: int | None

    def render(self, name: str, **values: Any) -> str: ...


class WiScoreReply(BaseModel):
    """Legacy WISE rubric: three reasons, then three 0-2 grades."""

    model_config = ConfigDict(extra="forbid")
    consistency_reason: str = Field(description="why the consistency grade")
    realism_reason: str = Field(description="why the realism grade")
    aesthetic_reason: str = Field(description="why the aesthetic quality grade")
    consistency: Literal[0, 1, 2]
    realism: Literal[0, 1, 2]
    aesthetic_quality: Literal[0, 1, 2]


class VerifiedReply(BaseModel):
    """WISE_Verified: a reason, then a binary score."""

    model_config = ConfigDict(extra="forbid")
    reason: str = Field(description="why the score")
    score: Literal[0, 1]


def wiscore(consistency: float, realism: float, aesthetic_quality: float) -> float:
    """WISE's per-image WiScore in [0, 1] (WISE_legacy README and wise_*.py: /2 normalises)."""
    return (0.7 * consistency + 0.2 * realism + 0.1 * aesthetic_quality) / 2


# rubric name -> (reply schema, template stem)
RUBRICS: dict[str, tuple[type[BaseModel], str]] = {
    "wise_wiscore": (WiScoreReply, "wise_wiscore"),
    "wise_verified": (VerifiedReply, "wise_verified"),
}


async def judge_rubric(judge: RubricJudge, question: Question, image: Any, explanation: str) -> Verdict:
    """Score ``image`` for ``question`` (its text is the WISE prompt) with the rubric it names.

    Returns a :class:`~orig_local.evaluation.verdict.Verdict`: ``answer`` holds the grades
    (``{"consistency", "realism", "aesthetic_quality", "wiscore"}`` or ``{"score"}``),
    ``correct`` is the binary outcome for ``wise_verified`` and None for ``wise_wiscore``
    (a graded score has no right/wrong), ``error`` is set when the judge failed."""
    verdict = Verdict(qid=question.id, answer=None, expected=1 if question.rubric == "wise_verified" else None)
    if question.rubric not in RUBRICS:
        verdict.error = f"unknown rubric {question.rubric!r}; known: {', '.join(RUBRICS)}"
        return verdict
    schema, stem = RUBRICS[question.rubric]
    sys_text = judge.render(f"{stem}_system.jinja")
    text = judge.render(f"{stem}.jinja", prompt=question.text.strip(), explanation=explanation.strip())
    messages = [system(sys_text), user("Image to grade:", ImageRef(image, label="generated"), text)]
    try:
        reply = await judge.chat.chat(messages, schema=schema, temperature=0.0, max_tokens=judge.max_tokens)
    except StructuredOutputError as exc:
        verdict.raw = list(exc.raw_texts)
        verdict.error = f"{type(exc).__name__}: {str(exc)[:300]}"
        record_finish(verdict, exc)
        return verdict
    except ChatError as exc:
        verdict.error = f"{type(exc).__name__}: {str(exc)[:300]}"
        return verdict
    verdict.raw = list(reply.invalid_replies) + [reply.text]
    record_finish(verdict, reply)
    verdict.cached = reply.cached
    verdict.prompt_tokens, verdict.completion_tokens = reply.usage.prompt_tokens, reply.usage.completion_tokens
    parsed = reply.parsed
    if isinstance(parsed, WiScoreReply):
        verdict.answer = {"consistency": parsed.consistency, "realism": parsed.realism,
                          "aesthetic_quality": parsed.aesthetic_quality,
                          "wiscore": wiscore(parsed.consistency, parsed.realism, parsed.aesthetic_quality)}
    elif isinstance(parsed, VerifiedReply):
        verdict.answer = {"score": parsed.score}
        verdict.correct = parsed.score == 1
    else:  # the chat layer returned no structured reply: a judge failure, never a grade
        verdict.error = f"the judge's reply did not parse as {schema.__name__}: {reply.text[:200]!r}"
    return verdict
