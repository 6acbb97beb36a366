"""I-HallA (Lim et al., 2025): text-to-image prompts with multiple-choice question sets.

Input: JSON or JSONL rows ``{"id", "prompt", "category"?, "questions": [{"question",
"choices": [...], "answer": "A" | 0 | "<choice text>"}]}`` (field names ``caption`` /
``text_prompt`` for the prompt and ``qa`` for the questions are accepted too).

Scoring rule: the judge picks one option letter per question (constrained to the letters); a
question is correct when the letter equals the answer; S_i = share of correct questions
(I-HallA's accuracy score), classes = ``category`` (science / history in I-HallA v1).
"""

from __future__ import annotations

import json
import string
from pathlib import Path

from orig_local.evaluation.items import BenchmarkFormatError, BenchmarkItem, Question


def _answer_letter(answer, choices: list[str], where: str) -> str:
    letters = string.ascii_uppercase[: len(choices)]
    if isinstance(answer, int) and 0 <= answer < len(choices):
        return letters[answer]
    text = str(answer).strip()
    if len(text) == 1 and text.upper() in letters:
        return text.upper()
    if text.rstrip(").").upper() in letters and len(text.rstrip(").")) == 1:
        return text.rstrip(").").upper()
    for letter, choice in zip(letters, choices):
        if choice.strip().lower() == text.lower():
            return letter
    raise BenchmarkFormatError(f"{where}: answer {answer!r} is not one of the choices")


def load(path: str | Path, classes: list[str] | None = None, include_others: bool = True) -> list[BenchmarkItem]:
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFormatError(f"I-HallA file not found: {path}")
    text = path.read_text(encoding="utf-8")
    rows = [json.loads(ln) for ln in text.splitlines() if ln.strip()] if path.suffix == ".jsonl" else json.loads(text)
    wanted = {c.lower() for c in classes} if classes else None
    items = []
    for n, row in enumerate(rows):
        pid = str(row.get("id", n))
        prompt = row.get("prompt") or row.get("caption") or row.get("text_prompt")
        if not prompt:
            raise BenchmarkFormatError(f"{path}: item {pid} has no prompt")
        category = str(row.get("category", "ihalla"))
        if wanted is not None and category.lower() not in wanted:
            continue
        questions = []
        for k, q in enumerate(row.get("questions") or row.get("qa") or [], 1):
            choices = [str(c) for c in q["choices"]]
            questions.append(Question(
                id=f"q{k}", text=str(q["question"]), choices=choices,
                answer=_answer_letter(q["answer"], choices, f"{path}: {pid}/q{k}"),
            ))
        items.append(BenchmarkItem(id=f"ihalla_{pid}", prompt=prompt, category=category, questions=questions))
    return items
