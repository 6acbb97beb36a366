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
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from orig_local.evaluation.items import BenchmarkFormatError, BenchmarkItem, Question
from orig_local.evaluation.loaders import Loaded

log = logging.getLogger(__name__)

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
    # prompt_ids outside 1-1000 (or not numbers): skipped, as the authors' calculators skip them
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"loader": "wise", "root": self.root, "release": self.release,
                "variant": self.variant, "files": dict(self.files), "skipped_ids": list(self.skipped)}


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


# Legacy subcategories of ids 401-700 (the calculators split time from space by these).
LEGACY_TIME_SPACE = {"longitudinal time", "horizontal time", "geographical location", "relative position",
                     "different view"}


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


def _read_json(f: Path, blob: bytes | None = None) -> list[dict]:
    try:
        text = (f.read_bytes() if blob is None else blob).decode("utf-8")
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
        rows += [(f, r) for r in _read_json(f, blob)]  # the bytes hashed are the bytes parsed
    return source, rows


def source(path: str | Path, variant: Variant = "base", **_ignored) -> dict:
    """Release, variant, per-file sha256 and skipped ids of what ``load(path, variant=...)`` reads."""
    src, rows = read(path, variant)
    src.skipped = [str(row.get("prompt_id")) for _f, row in rows
                   if (pid := normalize_id(row.get("prompt_id"))) is None or not 1 <= int(pid) <= 1000]
    return src.to_dict()


def normalize_id(raw) -> str | None:
    """``"001"``, ``1`` and ``" 1 "`` are prompt 1 (``"1"``); None for what is not a whole number.
    The authors' calculators compare ids as integers."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return str(raw)
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    text = str(raw).strip()
    return str(int(text)) if text.isdigit() else None


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


def _item(row: dict, pid: str, prompt: str, expl: str, release: Release,
          protocols: Sequence[str]) -> BenchmarkItem:
    """One item. The class comes from the prompt_id range, as in the authors' calculators (the
    Category string is kept as ``raw_category``: the legacy rewrites call row 748 'Ecology');
    a Category that disagrees with the range is noted, not fatal."""
    raw_cat, sub = row.get("Category"), row.get("Subcategory")
    named = CATEGORY_OF.get(_norm(raw_cat)) if raw_cat is not None else None
    category = _category_by_id(int(pid), release, sub) or "cultural"  # 1 <= pid <= 1000: never None
    if release == "legacy" and 400 < int(pid) <= 700 and _norm(sub or "") not in LEGACY_TIME_SPACE:
        category = named if named in ("time", "space") else category  # no known subcategory: the Category says
    issues = []
    named = named if raw_cat is not None else category
    if named != category:
        issues.append(f"Category {raw_cat!r} but WISE's {release} scripts count prompt_id {pid} as {category}")
    return BenchmarkItem(
        id=f"wise_{pid}", prompt=prompt, category=category, subcategory=row.get("Subcategory"),
        raw_category=None if raw_cat is None else str(raw_cat),
        questions=_questions(prompt, expl.strip(), protocols), reference_text=expl, issues=issues)


def select(items: Sequence[BenchmarkItem], classes: Sequence[str] | None = None,
           include_others: bool = True) -> list[BenchmarkItem]:
    """The items of ``classes`` (categories or domains, any case: :func:`class_filter`, which
    rejects an unknown name); ``include_others`` has no meaning for WISE."""
    from orig_local.evaluation.loaders import keep_classes

    return keep_classes(items, class_filter(classes))


def load(path: str | Path, classes: list[str] | None = None, include_others: bool = True,
         variant: Variant = "base", protocols: Sequence[str] = DEFAULT_PROTOCOLS) -> list[BenchmarkItem]:
    wanted = class_filter(classes)  # an unknown class name fails before the files are read
    return [it for it in load_all(path, variant, protocols).items if wanted is None or it.category in wanted]


def load_all(path: str | Path, variant: Variant = "base", protocols: Sequence[str] = DEFAULT_PROTOCOLS) -> Loaded:
    """Every WISE item (judged with ``protocols``) from one read of the files, the source
    (:class:`WiseSource`: release, variant, sha256 per file, skipped ids) and, when
    ``protocols`` are not all of them, the items with every protocol's questions: a run is bound
    to its data however it is judged (another protocol is another judge name on the same data)."""
    bad = [p for p in protocols if p not in PROTOCOLS]
    if bad or not protocols:
        raise BenchmarkFormatError(f"WISE judge protocols must be among {', '.join(PROTOCOLS)}, not {list(protocols)}")
    src, rows = read(path, variant)
    every_protocol = list(protocols) != list(PROTOCOLS)
    items: list[BenchmarkItem] = []
    bound: list[BenchmarkItem] = []
    seen: dict[str, Path] = {}
    for f, row in rows:
        try:
            pid_raw, prompt, expl = row["prompt_id"], row["Prompt"], row["Explanation"]
        except KeyError as exc:
            raise BenchmarkFormatError(f"{f}: WISE row without {exc}: {str(row)[:120]}") from exc
        pid = normalize_id(pid_raw)
        if pid is None or not 1 <= int(pid) <= 1000:
            src.skipped.append(str(pid_raw))  # the calculators only count ids 1-1000
            continue
        if pid in seen:
            raise BenchmarkFormatError(f"WISE prompt_id {pid} appears twice ({seen[pid].name} and {f.name}, "
                                       f"as {pid_raw!r} here); each id must be loaded once")
        seen[pid] = f
        items.append(_item(row, pid, str(prompt), str(expl), src.release, protocols))
        if every_protocol:
            bound.append(_item(row, pid, str(prompt), str(expl), src.release, PROTOCOLS))
    if src.skipped:
        log.warning("WISE %s: %d row(s) with a prompt_id outside 1-1000 skipped, as the authors' calculators "
                    "skip them: %s", src.root, len(src.skipped), ", ".join(src.skipped[:10]))
    return Loaded(items, source=src.to_dict(), bound=bound if every_protocol else None)
