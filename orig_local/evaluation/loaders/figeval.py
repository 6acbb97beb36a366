"""FIG-Eval, as its authors publish it (github.com/TyangJN/ORIG), or the flat sample layout.

Accepted layouts under ``path``:

* the authors' repository (or its ``eval/`` folder): ``data/FIG-Eval/prompts.jsonl``,
  ``eval/reference/txt/<cat>/<cat>_grouped.json`` (+ ``<cat>_reference.jsonl``,
  ``<cat>_prompt.jsonl``) and ``eval/reference/img/*.png``;
* flat: ``prompts.jsonl`` and ``<cat>_grouped.json`` (+ ``<cat>_reference.jsonl``, ``img/``)
  in one folder.

Quirks handled (each checked by a test): category ``sport`` vs ids ``sports_N`` and folder
``sports``; empty ``prompt_en`` in grouped files (joined on id with ``prompts.jsonl``); gaps in
question numbering (keys are kept as ids, order follows the number); reference images missing
or differing in case (``People_26_0.png``) - missing ones are reported on the item, not fatal;
the 20 ``others`` prompts are left out unless asked for; gold facts come from
``<cat>_reference.jsonl`` when present, else from the ``txt_reference`` lines.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path

from orig_local.evaluation.items import (
    FIGEVAL_CLASSES,
    BenchmarkFormatError,
    BenchmarkItem,
    GoldFact,
    Question,
)
from orig_local.evaluation.loaders import Loaded

log = logging.getLogger(__name__)

CONCEPT_BY_ID = {1: "PF", 2: "CC", 3: "TC"}
MODALITY_BY_CODE = {"T": "text", "I": "image"}
# prompts.jsonl names the sports class "sport"; its ids and folder say "sports".
CLASS_ALIASES = {"sport": "sports", "landmark": "landmarks", "events": "event", "products": "product",
                 "animals": "animal", "plants": "plant", "foods": "food", "cultures": "culture"}


def normalize_class(name: str) -> str:
    name = name.strip().lower()
    return CLASS_ALIASES.get(name, name)


def _question_number(key: str) -> tuple[int, str]:
    match = re.search(r"(\d+)$", key)
    return (int(match.group(1)) if match else 10**9, key)


def _find_prompts(root: Path) -> Path | None:
    for candidate in (root / "prompts.jsonl", root / "data" / "FIG-Eval" / "prompts.jsonl",
                      root.parent / "data" / "FIG-Eval" / "prompts.jsonl"):
        if candidate.is_file():
            return candidate
    return None


def _find_grouped(root: Path) -> list[Path]:
    found: list[Path] = []
    for base in (root, root / "eval" / "reference" / "txt", root / "reference" / "txt"):
        found += sorted(base.glob("*_grouped.json"))
        if base != root:
            # one folder per category; the authors' "backup" folder holds stale copies
            found += sorted(p for p in base.glob("*/*_grouped.json") if p.parent.name != "backup")
    return found


def _image_index(root: Path) -> dict[str, Path]:
    """Lower-cased file name -> file, over every folder reference images may live in."""
    index: dict[str, Path] = {}
    for base in (root / "eval" / "reference" / "img", root / "reference" / "img", root / "img", root):
        if base.is_dir():
            for p in base.glob("*.png"):
                index.setdefault(p.name.lower(), p)
            for p in base.glob("*.jpg"):
                index.setdefault(p.name.lower(), p)
    return index


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise BenchmarkFormatError(f"{path}:{n}: not JSON: {exc}") from exc
    return rows


def _facts_from_reference(rows: list[dict], images: dict[str, Path]) -> dict[str, list[GoldFact]]:
    facts: dict[str, list[GoldFact]] = {}
    for row in rows:
        pid = str(row.get("Prompt_id", "")).strip()
        if not pid:
            continue
        kind = "image" if str(row.get("Text/Image", "T")).strip().upper() == "I" else "text"
        facts.setdefault(pid.lower(), []).append(GoldFact(
            id=str(row.get("Reference_id", len(facts.get(pid.lower(), [])) + 1)),
            text=str(row.get("Content", "")).strip(),
            modality=kind,
            source=row.get("Source"),
        ))
    return facts


def _facts_from_text(text: str) -> list[GoldFact]:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return [GoldFact(id=str(i), text=ln) for i, ln in enumerate(lines, 1)]


def _questions(pid: str, entry: dict, images: dict[str, Path], where: Path,
               issues: list[str]) -> list[Question]:
    raw = entry.get("questions") or {}
    if not isinstance(raw, dict):
        raise BenchmarkFormatError(f"{where}: {pid}: 'questions' is not a mapping")
    out = []
    for key in sorted(raw, key=_question_number):
        q = raw[key]
        try:
            concept = CONCEPT_BY_ID[int(q["class_id"])]
            modality = MODALITY_BY_CODE[str(q["modal"]).strip().upper()]
        except (KeyError, ValueError, TypeError):
            # One malformed question must not make the other ~4,000 unusable: it is left out,
            # listed in item.issues and counted in the load warning.
            issues.append(f"{key}: skipped, bad class_id/modal ({q.get('class_id')!r}, {q.get('modal')!r}) in {where.name}")
            continue
        ref, found = None, True
        if q.get("img_path"):
            name = Path(str(q["img_path"])).name
            hit = images.get(name.lower())
            ref, found = (str(hit), True) if hit else (name, False)
            if not found:
                issues.append(f"{key}: reference image {name} not found")
        elif modality == "image":
            issues.append(f"{key}: image question without img_path")
            found = False
        out.append(Question(id=key, text=str(q.get("content", "")).strip(), concept=concept,
                            modality=modality, reference_image=ref, reference_image_found=found))
    return out


def select(items: Sequence[BenchmarkItem], classes: Sequence[str] | None = None,
           include_others: bool = False) -> list[BenchmarkItem]:
    """The items of ``classes`` (``sport`` and ``sports`` both work); without ``classes`` the
    10 paper classes, plus every other class (the 20 ``others`` prompts) with ``include_others``
    - a listed class is always taken, ``others`` too."""
    from orig_local.evaluation.loaders import keep_classes

    if classes:
        return keep_classes(items, {normalize_class(c) for c in classes})
    return keep_classes(items, None if include_others else set(FIGEVAL_CLASSES))


def load(path: str | Path, classes: list[str] | None = None, include_others: bool = False) -> list[BenchmarkItem]:
    """Read FIG-Eval from ``path`` (see module doc). ``classes`` restricts to some classes
    (``sport`` and ``sports`` both work); ``others`` is dropped unless listed or
    ``include_others``. Prompts whose category has no question file are skipped (logged)."""
    return select(load_all(path).items, classes, include_others)


def _root(given: Path) -> Path:
    root = given
    if root.is_file():
        if root.suffix not in (".jsonl", ".json"):
            raise BenchmarkFormatError(f"FIG-Eval --data {given} is a file",
                                       hint="pass the benchmark folder (the authors' repository or a flat folder)")
        root = root.parent
    if not root.is_dir():
        raise BenchmarkFormatError(f"FIG-Eval folder not found: {given}",
                                   hint="pass --data <the authors' repository or a flat folder with prompts.jsonl>")
    return root


Grouped = dict[str, tuple[dict, Path]]


def _read_grouped(grouped_files: list[Path], images: dict[str, Path]
                  ) -> tuple[Grouped, dict[str, list[GoldFact]], dict[str, tuple[str, str | None]]]:
    """Question entries by lower-cased prompt id (with their file), gold facts by id, and the
    per-category prompt lists' prompts by id."""
    grouped: Grouped = {}
    facts: dict[str, list[GoldFact]] = {}
    fallback_prompts: dict[str, tuple[str, str | None]] = {}
    for gf in grouped_files:
        try:
            data = json.loads(gf.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BenchmarkFormatError(f"{gf}: not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise BenchmarkFormatError(f"{gf}: expected a mapping prompt_id -> entry")
        for pid, entry in data.items():
            grouped.setdefault(pid.strip().lower(), (entry, gf))
        ref = gf.with_name(gf.name.replace("_grouped.json", "_reference.jsonl"))
        if ref.is_file():
            facts.update(_facts_from_reference(_read_jsonl(ref), images))
        # The per-category prompt list ({"id", "Prompt", "指令", "category"}) holds prompts that
        # prompts.jsonl lacks (event_37: the paper's 514th prompt).
        plist = gf.with_name(gf.name.replace("_grouped.json", "_prompt.jsonl"))
        if plist.is_file():
            for row in _read_jsonl(plist):
                text = row.get("Prompt") or row.get("prompt_en") or row.get("prompt")
                if row.get("id") and text:
                    fallback_prompts.setdefault(str(row["id"]).strip().lower(), (text, row.get("指令")))
    return grouped, facts, fallback_prompts


def _prompt_rows(root: Path, grouped: Grouped, fallback_prompts: dict[str, tuple[str, str | None]]) -> list[dict]:
    prompts_file = _find_prompts(root)
    if prompts_file is not None:
        prompt_rows = _read_jsonl(prompts_file)
    else:  # grouped files alone: their own prompt_en must then be filled
        prompt_rows = [{"id": pid, "category": pid.rsplit("_", 1)[0], "prompt_en": e.get("prompt_en", ""),
                        "prompt_zh": e.get("prompt_zh")} for pid, (e, _) in grouped.items()]

    # Ids that have questions but no line in prompts.jsonl (the paper counts 514 prompts, the
    # list has 513): kept when the grouped file or the category's <cat>_prompt.jsonl has their
    # English prompt.
    listed = {str(r["id"]).strip().lower() for r in prompt_rows}
    for pid, (entry, where) in grouped.items():
        if pid in listed:
            continue
        if str(entry.get("prompt_en") or "").strip():
            text, zh, src = entry["prompt_en"], entry.get("prompt_zh"), where.name
        elif pid in fallback_prompts:
            (text, zh), src = fallback_prompts[pid], where.name.replace("_grouped.json", "_prompt.jsonl")
        else:
            log.warning("FIG-Eval: %s has questions in %s but no prompt anywhere; skipped", pid, where.name)
            continue
        prompt_rows.append({"id": pid, "category": pid.rsplit("_", 1)[0], "prompt_en": text,
                            "prompt_zh": zh, "_note": f"not in prompts.jsonl; prompt from {src}"})
    return prompt_rows


def _item(row: dict, pid: str, category: str, hit: tuple[dict, Path], images: dict[str, Path],
          facts: dict[str, list[GoldFact]]) -> BenchmarkItem:
    entry, where = hit
    issues: list[str] = [row["_note"]] if row.get("_note") else []
    questions = _questions(pid, entry, images, where, issues)
    prompt = " ".join(str(row.get("prompt_en") or entry.get("prompt_en") or "").split())
    if not prompt:
        raise BenchmarkFormatError(f"{pid}: no English prompt in prompts.jsonl or {where.name}")
    ref_text = str(entry.get("txt_reference") or "")
    item_facts = facts.get(pid.lower()) or _facts_from_text(ref_text)
    ref_images = sorted(
        str(p) for name, p in images.items()
        if re.fullmatch(re.escape(pid.lower()) + r"_\d+\.(png|jpg)", name)
    )
    for q in questions:
        if q.reference_image_found and q.reference_image and q.reference_image not in ref_images:
            ref_images.append(q.reference_image)
    return BenchmarkItem(
        id=pid, prompt=prompt, category=category, questions=questions,
        reference_text=ref_text, reference_images=ref_images, facts=item_facts,
        prompt_zh=row.get("prompt_zh") or entry.get("prompt_zh") or None, issues=issues,
    )


def load_all(path: str | Path) -> Loaded:
    """Every FIG-Eval item under ``path``, every class (``others`` included), from one read of
    its files. Prompts whose category has no question file are skipped (logged)."""
    given = Path(path)
    root = _root(given)
    grouped_files = _find_grouped(root)
    if not grouped_files:
        raise BenchmarkFormatError(f"{given}: no <category>_grouped.json found (flat, or eval/reference/txt/<cat>/)",
                                   hint="is this the FIG-Eval folder? see docs/evaluation.md for the layouts")
    images = _image_index(root)
    grouped, facts, fallback_prompts = _read_grouped(grouped_files, images)
    items: list[BenchmarkItem] = []
    no_questions: dict[str, int] = {}
    for row in _prompt_rows(root, grouped, fallback_prompts):
        pid = str(row["id"]).strip()
        category = normalize_class(str(row.get("category") or pid.rsplit("_", 1)[0]))
        hit = grouped.get(pid.lower())
        if hit is None:
            no_questions[category] = no_questions.get(category, 0) + 1
            continue
        items.append(_item(row, pid, category, hit, images, facts))
    _log_skipped(root, grouped, no_questions, items)
    return Loaded(items)


def _log_skipped(root: Path, grouped: Grouped, no_questions: dict[str, int], items: list[BenchmarkItem]) -> None:
    # A category whose question file exists but lacks some of its prompts is a partial (or
    # stale) file: a warning, since the table would silently cover fewer prompts. A category
    # without any question file is a partial download: said at INFO.
    with_file = {normalize_class(pid.rsplit("_", 1)[0]) for pid in grouped}
    for category, n in sorted(no_questions.items()):
        if category in with_file:
            files = sorted({w.name for pid, (_, w) in grouped.items()
                            if normalize_class(pid.rsplit("_", 1)[0]) == category})
            log.warning("FIG-Eval: %d %s prompt(s) skipped: listed in prompts.jsonl but missing from the "
                        "question file %s (partial or stale question file)", n, category, ", ".join(files))
        else:
            log.info("FIG-Eval: %d %s prompt(s) skipped: no question file for class %s under %s",
                     n, category, category, root)
    missing = sum(1 for i in items for msg in i.issues if "not found" in msg)
    if missing:
        log.warning("FIG-Eval: %d reference image(s) missing (their questions will be recorded as errors)", missing)
    bad = sum(1 for i in items for msg in i.issues if "skipped, bad" in msg)
    if bad:
        log.warning("FIG-Eval: %d malformed question(s) skipped (see item.issues)", bad)
