"""WISE (Niu et al., 2025): world-knowledge prompts with an explanation of the intended image.

Two releases of PKU-YuanGroup/WISE are recognised (``--data`` may name the repository root,
the release folder, or one file):

* **legacy** - ``WISE_legacy/data/`` (``data/`` before the Verified update):
  ``cultural_common_sense.json``, ``spatio-temporal_reasoning.json``, ``natural_science.json``,
  each beside ``<name>_rewrite.json`` (the same ``prompt_id``\\ s, simplified prompts).
* **verified** - ``data_verified/`` ("WISE_Verified", the repository's default): the same three
  files (``<name>_verified.json`` in the release) plus ``merge.json``, which holds all 1,000
  rows again and is read only when the three files are absent.

Each file is a JSON list of ``{"prompt_id", "Prompt", "Explanation", "Category",
"Subcategory"}``. The three base files are read by default; ``variant="rewrite"`` reads the
rewrites instead (legacy only). A ``prompt_id`` seen twice is an error, never a silent drop.

Classes: the six WISE categories (``Category``: ``Cultural knowledge``, ``time``, ``Space``,
``Biology``, ``Physical Knowledge``, ``Chemistry``) become ``cultural``, ``time``, ``space``,
``biology``, ``physics``, ``chemistry``; ``classes=`` accepts those, the raw ``Category``
strings, or the three domains (cultural common sense / spatio-temporal reasoning / natural
science), case-insensitively.

What is judged per prompt (``protocols``): ``wiscore`` (WISE's legacy rubric: consistency,
realism, aesthetic quality on 0-2), ``verified`` (WISE_Verified's binary score) and
``statement`` (this project's earlier simplification: one true/false statement built from
the explanation). Scores: :mod:`orig_local.evaluation.wise_score`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from orig_local.evaluation.items import BenchmarkFormatError, BenchmarkItem, Question

Release = Literal["legacy", "verified"]
Variant = Literal["base", "rewrite"]
PROTOCOLS = ("wiscore", "verified", "statement")
DEFAULT_PROTOCOLS = ("wiscore", "verified")

STEMS = ("cultural_common_sense", "spatio-temporal_reasoning", "natural_science")
MERGE = "merge.json"

# Category string in the data (normalised) -> our class name.
CATEGORY_OF = {
    "cultural knowledge": "cultural", "cultural": "cultural", "culture": "cultural",
    "time": "time", "space": "space", "biology": "biology",
    "physical knowledge": "physics", "physics": "physics", "chemistry": "chemistry",
}
CATEGORIES = ("cultural", "time", "space", "biology", "physics", "chemistry")
DOMAIN_OF = {"cultural": "cultural common sense", "time": "spatio-temporal reasoning",
             "space": "spatio-temporal reasoning", "biology": "natural science",
             "physics": "natural science", "chemistry": "natural science"}
DOMAIN_ALIASES = {
    "cultural common sense": "cultural common sense",
    "spatio temporal reasoning": "spatio-temporal reasoning", "spatio temporal": "spatio-temporal reasoning",
    "spatiotemporal": "spatio-temporal reasoning", "spatiotemporal reasoning": "spatio-temporal reasoning",
    "natural science": "natural science", "science": "natural science",
}


@dataclass
class WiseSource:
    """Which WISE data a load read: the release, the variant and the sha256 of every file
    (path relative to ``root``). Stored by the run folder to bind a run to its data."""

    root: str
    release: Release
    variant: Variant
    files: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"loader": "wise", "root": self.root, "release": self.release,
                "variant": self.variant, "files": dict(self.files)}


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[_\-]+", " ", str(text)).lower().split())


def class_filter(classes: Sequence[str] | None) -> set[str] | None:
    """Our class names selected by ``classes`` (categories or domains, any case). Unknown
    names are an error: a filter that selects nothing would look like an empty benchmark."""
    if not classes:
        return None
    wanted: set[str] = set()
    for name in classes:
        key = _norm(name)
        if key in CATEGORY_OF:
            wanted.add(CATEGORY_OF[key])
        elif key in DOMAIN_ALIASES:
            domain = DOMAIN_ALIASES[key]
            wanted |= {c for c, d in DOMAIN_OF.items() if d == domain}
        else:
            raise BenchmarkFormatError(
                f"WISE has no class {name!r}; categories: {', '.join(CATEGORIES)} (or the data's "
                "'Cultural knowledge', 'Physical Knowledge'...); domains: cultural common sense, "
                "spatio-temporal reasoning, natural science")
    return wanted


def _category_by_id(pid: int, release: Release, subcategory: str | None) -> str | None:
    """The authors' scripts assign categories by prompt_id range; used only for rows without a
    ``Category``. Legacy: 1-400 cultural, 401-700 time/space by subcategory, 701-800 biology,
    801-900 physics, 901-1000 chemistry. Verified: 1-400, then blocks of 120."""
    if not 1 <= pid <= 1000:
        return None
    if pid <= 400:
        return "cultural"
    if release == "verified":
        return CATEGORIES[1 + (pid - 401) // 120]
    if pid <= 700:
        return "time" if _norm(subcategory or "") in ("longitudinal time", "horizontal time") else "space"
    return CATEGORIES[3 + (pid - 701) // 100]


# --------------------------------------------------------------------------- finding the files


def _stem_file(folder: Path, stem: str, suffix: str) -> Path | None:
    """``<stem><suffix>.json`` or the Verified release's ``<stem>_verified<suffix>.json``."""
    found = [p for p in (folder / f"{stem}{suffix}.json", folder / f"{stem}_verified{suffix}.json") if p.is_file()]
    if len(found) > 1:
        raise BenchmarkFormatError(f"{folder}: both {found[0].name} and {found[1].name}; keep one")
    return found[0] if found else None


def _release_folder(path: Path) -> Path:
    """The folder holding the JSON files, from the repo root / release folder / data folder."""
    if any(path.glob("*.json")):
        return path
    # The repository root: WISE_Verified is the authors' default; WISE_legacy/ holds data/.
    for sub in ("data_verified", "WISE_legacy/data", "data"):
        if (path / sub).is_dir() and any((path / sub).glob("*.json")):
            return path / sub
    return path


def resolve(path: str | Path, variant: Variant = "base") -> tuple[WiseSource, list[Path]]:
    """The release, variant and files ``load`` reads for ``path`` (nothing is parsed)."""
    path = Path(path)
    if not path.exists():
        raise BenchmarkFormatError(f"WISE data not found: {path}")
    if variant not in ("base", "rewrite"):
        raise BenchmarkFormatError(f"WISE variant must be 'base' or 'rewrite', not {variant!r}")
    if path.is_file():
        name = path.name
        release: Release = "verified" if ("_verified" in name or name == MERGE or path.parent.name == "data_verified") else "legacy"
        is_rewrite = path.stem.endswith("_rewrite")
        if is_rewrite != (variant == "rewrite"):
            raise BenchmarkFormatError(f"{path} is a {'rewrite' if is_rewrite else 'base'} file but the "
                                       f"variant is {variant!r}; pass --variant {'rewrite' if is_rewrite else 'base'}")
        return WiseSource(str(path.parent), release, variant), [path]
    folder = _release_folder(path)
    suffix = "_rewrite" if variant == "rewrite" else ""
    files = {stem: _stem_file(folder, stem, suffix) for stem in STEMS}
    verified = (folder.name == "data_verified" or (folder / MERGE).is_file()
                or any(f is not None and "_verified" in f.name for f in files.values()))
    release = "verified" if verified else "legacy"
    present = [f for f in files.values() if f is not None]
    if not present and variant == "base" and (folder / MERGE).is_file():
        present = [folder / MERGE]  # the merged copy alone; never read beside the three files
    if not present:
        hint = ("the Verified release has no rewrite files; point --data at WISE_legacy"
                if variant == "rewrite" and release == "verified" else
                f"expected {', '.join(s + suffix + '.json' for s in STEMS)}")
        raise BenchmarkFormatError(f"no WISE {variant} files in {folder} ({hint})")
    missing = [s + suffix + ".json" for s, f in files.items() if f is None]
    if missing and present[0].name != MERGE:
        raise BenchmarkFormatError(f"{folder}: WISE file(s) missing: {', '.join(missing)} (a partial release "
                                   "would drop prompts; point --data at one file to load it alone)")
    return WiseSource(str(folder), release, variant), present


def _read_json(f: Path) -> list[dict]:
    try:
        text = f.read_text(encoding="utf-8")
        data = [json.loads(ln) for ln in text.splitlines() if ln.strip()] if f.suffix == ".jsonl" else json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BenchmarkFormatError(f"{f}: not a WISE JSON file ({type(exc).__name__}: {exc})") from exc
    data = data if isinstance(data, list) else [data]
    if not all(isinstance(r, dict) for r in data):
        raise BenchmarkFormatError(f"{f}: expected a JSON list of objects")
    return data


def read(path: str | Path, variant: Variant = "base") -> tuple[WiseSource, list[tuple[Path, dict]]]:
    """Resolve and parse: the source (with file hashes) and every row with its file."""
    source, files = resolve(path, variant)
    rows: list[tuple[Path, dict]] = []
    root = Path(source.root)
    for f in files:
        blob = f.read_bytes()
        rel = f.name if f.parent == root else str(f.relative_to(root)) if f.is_relative_to(root) else str(f)
        source.files[rel] = hashlib.sha256(blob).hexdigest()
        rows += [(f, r) for r in _read_json(f)]
    return source, rows


def source(path: str | Path, variant: Variant = "base", **_ignored) -> dict:
    """Release, variant and per-file sha256 of what ``load(path, variant=...)`` reads."""
    return read(path, variant)[0].to_dict()


# --------------------------------------------------------------------------- items


def _questions(prompt: str, explanation: str, protocols: Sequence[str]) -> list[Question]:
    out = []
    for p in protocols:
        if p == "statement":
            # This project's earlier rule, kept as a named option: one true/false statement.
            out.append(Question(id="statement", text=f"The picture shows the following: {explanation}"))
        else:  # WISE's own judges see prompt + explanation + image (wise_judge.py)
            out.append(Question(id=p, text=prompt, rubric=f"wise_{p}"))
    return out


def load(path: str | Path, classes: list[str] | None = None, include_others: bool = True,
         variant: Variant = "base", protocols: Sequence[str] = DEFAULT_PROTOCOLS) -> list[BenchmarkItem]:
    bad = [p for p in protocols if p not in PROTOCOLS]
    if bad or not protocols:
        raise BenchmarkFormatError(f"WISE judge protocols must be among {', '.join(PROTOCOLS)}, not {list(protocols)}")
    wanted = class_filter(classes)
    src, rows = read(path, variant)
    items, seen = [], {}
    for f, row in rows:
        try:
            pid_raw, prompt, expl = row["prompt_id"], row["Prompt"], row["Explanation"]
        except KeyError as exc:
            raise BenchmarkFormatError(f"{f}: WISE row without {exc}: {str(row)[:120]}") from exc
        pid = str(pid_raw).strip()
        if pid in seen:
            raise BenchmarkFormatError(f"WISE prompt_id {pid} appears twice ({seen[pid].name} and {f.name}); "
                                       "each id must be loaded once")
        seen[pid] = f
        raw_cat = row.get("Category")
        if raw_cat is not None:
            category = CATEGORY_OF.get(_norm(raw_cat))
            if category is None:
                raise BenchmarkFormatError(f"{f}: prompt_id {pid} has an unknown Category {raw_cat!r}")
        else:
            category = _category_by_id(int(pid), src.release, row.get("Subcategory")) if pid.isdigit() else None
            if category is None:
                raise BenchmarkFormatError(f"{f}: prompt_id {pid} has no Category and no official id range")
        if wanted is not None and category not in wanted:
            continue
        issues = []
        by_id = _category_by_id(int(pid), src.release, row.get("Subcategory")) if pid.isdigit() else None
        if by_id is not None and by_id != category:  # the authors' calculators go by id range
            issues.append(f"Category {raw_cat!r} but WISE's {src.release} scripts count prompt_id {pid} as {by_id}")
        items.append(BenchmarkItem(
            id=f"wise_{pid}", prompt=str(prompt), category=category, subcategory=row.get("Subcategory"),
            questions=_questions(str(prompt), str(expl).strip(), protocols), reference_text=str(expl),
            issues=issues,
        ))
    return items
