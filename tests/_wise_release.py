"""Build WISE release folders shaped like PKU-YuanGroup/WISE (field names, file names,
Category strings, prompt_id ranges) with generated text, for the WISE tests."""

from __future__ import annotations

import json
from pathlib import Path

STEMS = ("cultural_common_sense", "spatio-temporal_reasoning", "natural_science")

# (Category string as in the data, subcategories, id range) per release.
LEGACY = [
    ("Cultural knowledge", ["Festival", "Sports", "Religion", "Craftsmanship", "Construction", "Art"], 1, 400),
    ("time", ["Longitudinal time", "Horizontal time"], 401, 567),
    ("Space", ["Geographical Location", "Relative Position", "Different View"], 568, 700),
    ("Biology", ["Biological state", "Animal Behavior"], 701, 800),
    ("Physical Knowledge", ["Mechanics", "Thermodynamics", "Optics"], 801, 900),
    ("Chemistry", ["Chemical Reaction", "Chemical Properties"], 901, 1000),
]
VERIFIED = [
    ("Cultural knowledge", ["Festival", "Sports", "Religion", "Craftsmanship"], 1, 400),
    ("time", ["Longitudinal time", "Horizontal time"], 401, 520),
    ("Space", ["Geographical Location", "Relative Position"], 521, 640),
    ("Biology", ["Biological state", "Animal Behavior"], 641, 760),
    ("Physical Knowledge", ["Mechanics", "Optics"], 761, 880),
    ("Chemistry", ["Chemical Reaction"], 881, 1000),
]
FILE_OF = {"Cultural knowledge": 0, "time": 1, "Space": 1, "Biology": 2, "Physical Knowledge": 2, "Chemistry": 2}


def rows(release: str, rewrite: bool = False) -> list[dict]:
    out = []
    for category, subs, lo, hi in (LEGACY if release == "legacy" else VERIFIED):
        for pid in range(lo, hi + 1):
            tag = "rewritten" if rewrite else release
            out.append({
                "prompt_id": pid,
                "Prompt": f"{tag} prompt {pid}: the {category.lower()} thing number {pid}",
                "Explanation": f"The model should generate the {category.lower()} subject of prompt {pid}.",
                "Category": category,
                "Subcategory": subs[pid % len(subs)],
            })
    return out


def _write(path: Path, data: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=4, ensure_ascii=False), encoding="utf-8")


def _split(data: list[dict]) -> list[list[dict]]:
    parts: list[list[dict]] = [[], [], []]
    for r in data:
        parts[FILE_OF[r["Category"]]].append(r)
    return parts


def make_repo(root: Path) -> Path:
    """The repository today: data_verified/ (three *_verified.json + merge.json) and
    WISE_legacy/data/ (three files, each beside its _rewrite.json)."""
    verified = rows("verified")
    for stem, part in zip(STEMS, _split(verified), strict=True):
        _write(root / "data_verified" / f"{stem}_verified.json", part)
    _write(root / "data_verified" / "merge.json", verified)
    for stem, base, rew in zip(STEMS, _split(rows("legacy")), _split(rows("legacy", rewrite=True)), strict=True):
        _write(root / "WISE_legacy" / "data" / f"{stem}.json", base)
        _write(root / "WISE_legacy" / "data" / f"{stem}_rewrite.json", rew)
    return root
