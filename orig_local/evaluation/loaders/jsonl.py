"""Our own benchmark format: one JSON object per line (documented in docs/evaluation.md).

.. code-block:: json

    {"id": "cat_0", "prompt": "A photo of ...", "class": "animal",
     "questions": [{"id": "q1", "text": "The cat is black.", "concept": "PF",
                    "modality": "text"},
                   {"id": "q2", "text": "The cat looks like the one in the reference.",
                    "concept": "PF", "modality": "image", "reference_image": "img/cat_0_0.png"}],
     "reference_text": "...", "reference_images": ["img/cat_0_0.png"],
     "facts": [{"text": "The cat is black."}]}

Relative paths are resolved against the file's folder. ``class`` (or ``category``) is
required; ``answer`` defaults to true; ``facts`` default to the ``reference_text`` lines.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from orig_local.evaluation.items import BenchmarkFormatError, BenchmarkItem
from orig_local.evaluation.loaders import Loaded


def _resolve(base: Path, value: str | None) -> tuple[str | None, bool]:
    if not value:
        return None, True
    p = Path(value)
    p = p if p.is_absolute() else base / p
    return str(p), p.is_file()


def select(items: Sequence[BenchmarkItem], classes: Sequence[str] | None = None,
           include_others: bool = True) -> list[BenchmarkItem]:
    """The items of ``classes`` (``sport`` = ``sports``, as everywhere); ``include_others`` has
    no meaning here (every class is listed in the file)."""
    from orig_local.evaluation.loaders import keep_classes
    from orig_local.evaluation.selection import normalize

    return keep_classes(items, {normalize(c) for c in classes} if classes else None, normalize)


def load(path: str | Path, classes: list[str] | None = None, include_others: bool = True) -> list[BenchmarkItem]:
    return select(load_all(path).items, classes, include_others)


def load_all(path: str | Path) -> Loaded:
    """Every item of the file (one read)."""
    path = Path(path)
    if path.is_dir():
        path = path / "benchmark.jsonl"
    if not path.is_file():
        raise BenchmarkFormatError(f"benchmark file not found: {path}")
    base = path.parent
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BenchmarkFormatError(f"{path}:{n}: not JSON: {exc}") from exc
        items.append(_item(row, base, f"{path}:{n}"))
    ids = [i.id for i in items]
    if len(ids) != len(set(ids)):
        raise BenchmarkFormatError(f"{path}: duplicate ids")
    return Loaded(items)


def _item(row: dict, base: Path, where: str) -> BenchmarkItem:
    if "class" in row:
        row["category"] = row.pop("class")
    issues = list(row.pop("issues", []))
    for q in row.get("questions", []):
        ref, found = _resolve(base, q.get("reference_image"))
        if ref:
            q["reference_image"], q["reference_image_found"] = ref, found
            if not found:
                issues.append(f"{q.get('id')}: reference image {q['reference_image']} not found")
    row["reference_images"] = [_resolve(base, p)[0] for p in row.get("reference_images", [])]
    for f in row.get("facts", []):
        f.setdefault("id", str(row["facts"].index(f) + 1))
        if f.get("image"):
            f["image"] = _resolve(base, f["image"])[0]
    if not row.get("facts") and row.get("reference_text"):
        lines = [ln.strip() for ln in row["reference_text"].splitlines() if ln.strip()]
        row["facts"] = [{"id": str(i), "text": ln} for i, ln in enumerate(lines, 1)]
    try:
        return BenchmarkItem(**row, issues=issues)
    except (ValidationError, TypeError) as exc:
        raise BenchmarkFormatError(f"{where}: {exc}") from exc


def dump(items: list[BenchmarkItem], path: str | Path) -> Path:
    """Write items in this format (paths kept as they are)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for item in items:
            row = item.model_dump(exclude_defaults=True)
            row["class"] = row.pop("category")
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
