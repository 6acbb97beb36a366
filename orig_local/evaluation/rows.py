"""Typed records of the phase rows that results and reports read (as simple-evals'
``SingleEvalResult``): a report reads ``row.final_prompt``, never ``row.get("final_prompt")``,
so a renamed or misspelt field is a type error (mypy), not a silently empty column.

Rows are what ``orig eval`` appended to ``<phase>.jsonl``; these models only *read* them:

* every field a report reads is declared, with the default an absent key had before (``""``
  for texts shown as text, ``None`` otherwise);
* unknown fields (rows of older or newer versions, phase-specific extras) are ignored, not
  refused, and not kept: a report holds only what it reads;
* a row whose declared field has the wrong type is a data error naming the file and the line
  (:func:`parse_row`), and the item is left out of that phase - nothing is guessed;
* ``verdicts`` and ``facts`` are kept as stored: :func:`~orig_local.evaluation.scoring.check_verdicts`
  checks them item by item, naming each problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictFloat, StrictInt, ValidationError


class PhaseRow(BaseModel):
    """The fields every phase's row has (the row contract of :mod:`~orig_local.evaluation.phases.loop`)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    status: str | None = None  # ok | degraded | failed (rows older than statuses: absent)
    error: str | None = None
    warning: str | None = None
    category: str | None = None
    # set by the reader, not stored: how many rows the file(s) hold for this id (> 1: a data error)
    _duplicate: int = PrivateAttr(default=0)

    @property
    def duplicate(self) -> int:
        return self._duplicate


class AgentRow(PhaseRow):
    prompt: str | None = ""
    final_prompt: str | None = ""
    stop_reason: str | None = None
    iterations: StrictInt | StrictFloat | None = None
    final_prompt_words: StrictInt | StrictFloat | None = None
    references: list[str] | None = None  # run-relative image paths passed to the generator
    # per stage: calls, prompt_tokens, seconds, searches_text, ... (numbers; others are skipped)
    stages: dict[str, dict[str, Any]] | None = None
    labels: list[str] | None = None  # stand-in labels the agent recorded
    notes: list[str] | None = None
    evidence: str | None = None
    trace: str | None = None


class GenerateRow(PhaseRow):
    image: str | None = None  # run-relative path of the generated image


class JudgeRow(PhaseRow):
    judge: str | None = None  # the judge model's name
    verdicts: Any = Field(default_factory=list)  # as stored: check_verdicts validates each one


class RetrievalRow(PhaseRow):
    accuracy: StrictFloat | StrictInt | None = None  # A_i of paper Eq. 12 (None: no fact judged)
    facts: Any = Field(default_factory=list)


ROW_MODELS: dict[str, type[PhaseRow]] = {
    "agent": AgentRow, "generate": GenerateRow, "judge": JudgeRow, "retrieval": RetrievalRow,
}


class RowFormatError(ValueError):
    """A row whose declared field is missing or has the wrong type; the message names the file
    and the line."""


def parse_row(model: type[PhaseRow], raw: dict[str, Any], path: Path, line: int) -> PhaseRow:
    """``raw`` as ``model``; a :class:`RowFormatError` naming ``path``, ``line`` and the fields
    when it does not fit."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'row'}: {e['msg']}" for e in exc.errors()[:3])
        raise RowFormatError(f"{path.name} line {line}: {problems}") from None
