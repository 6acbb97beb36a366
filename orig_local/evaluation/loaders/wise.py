"""WISE (Niu et al., 2025): world-knowledge prompts with an explanation of the intended image.

Input: a JSON list (or JSONL) of ``{"prompt_id", "Prompt", "Explanation", "Category",
"Subcategory"}`` (WISE's ``data/*.json`` files; a folder is read file by file).

Scoring rule used here (a simplification of WISE's GPT-4o WiScore, documented as such): each
prompt gets ONE true/false question - "the image depicts what the explanation describes" - so
S_i is 0 or 1 and a class score is the share of prompts judged correct. Classes are WISE's
``Category`` (cultural / spatio-temporal / natural science); no PF/CC/TC concepts.
"""

from __future__ import annotations

import json
from pathlib import Path

from orig_local.evaluation.items import BenchmarkFormatError, BenchmarkItem, Question


def _rows(path: Path) -> list[dict]:
    files = sorted(path.glob("*.json")) + sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    rows: list[dict] = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        if f.suffix == ".jsonl":
            rows += [json.loads(ln) for ln in text.splitlines() if ln.strip()]
        else:
            data = json.loads(text)
            rows += data if isinstance(data, list) else [data]
    return rows


def load(path: str | Path, classes: list[str] | None = None, include_others: bool = True) -> list[BenchmarkItem]:
    path = Path(path)
    if not path.exists():
        raise BenchmarkFormatError(f"WISE data not found: {path}")
    wanted = {c.lower() for c in classes} if classes else None
    items = []
    for row in _rows(path):
        try:
            pid, prompt, expl = str(row["prompt_id"]), row["Prompt"], row["Explanation"]
        except KeyError as exc:
            raise BenchmarkFormatError(f"{path}: WISE row without {exc}: {str(row)[:120]}") from exc
        category = str(row.get("Category", "wise")).strip()
        if wanted is not None and category.lower() not in wanted:
            continue
        question = Question(id="explanation", text=f"The picture shows the following: {expl.strip()}")
        items.append(BenchmarkItem(
            id=f"wise_{pid}", prompt=prompt, category=category,
            subcategory=row.get("Subcategory"), questions=[question], reference_text=expl,
        ))
    return items
