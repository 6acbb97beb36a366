"""The layout of a run folder, and reading a phase's rows across shard files.

::

    runs/X/
      run.json                 what was run (benchmark, data, condition, models, label)
      config.yaml              the resolved config of the last invocation
      agent.jsonl              one row per prompt: final prompt, references, stage totals
      generate.jsonl           one row per prompt: image file, seed, seconds
      judge.jsonl              one row per prompt: every question's verdict (judge-<name>.jsonl
                               for other judges)
      retrieval.jsonl          one row per prompt: every gold fact's Align verdict (Eq. 12)
      <phase>.shard-I-of-N.jsonl   rows written by shard I (``orig merge`` folds them in)
      images/<id>.png  refs/<id>/<j>.png  evidence/<id>.json (+ images)  traces/<id>.json
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from orig_local.evaluation.store import read_rows

PHASES = ("agent", "generate", "judge", "retrieval")
_SHARD = re.compile(r"^(?P<base>.+)\.shard-(?P<i>\d+)-of-(?P<n>\d+)\.jsonl$")


def phase_file(run_dir: Path, phase: str, judge_name: str | None = None,
               shard: tuple[int, int] | None = None) -> Path:
    base = phase
    if phase in ("judge", "retrieval") and judge_name:
        base = f"{phase}-{judge_name}"
    if shard and shard[1] > 1:
        return Path(run_dir) / f"{base}.shard-{shard[0]}-of-{shard[1]}.jsonl"
    return Path(run_dir) / f"{base}.jsonl"


def shard_files(run_dir: Path, base: str) -> list[Path]:
    return sorted(p for p in Path(run_dir).glob(f"{base}.shard-*-of-*.jsonl")
                  if (m := _SHARD.match(p.name)) and m.group("base") == base)


def read_phase(run_dir: Path, phase: str, judge_name: str | None = None) -> dict[str, dict]:
    """id -> row over the main file and every shard file (first occurrence wins)."""
    main = phase_file(run_dir, phase, judge_name)
    rows: dict[str, dict] = {}
    for path in [main] + shard_files(run_dir, main.name[: -len(".jsonl")]):
        for row in read_rows(path):
            rows.setdefault(row["id"], row)
    return rows


def judge_names(run_dir: Path) -> list[str | None]:
    """Judges with results in this run: None (judge.jsonl) and each judge-<name>."""
    names: list[str | None] = []
    for p in sorted(Path(run_dir).glob("judge*.jsonl")):
        base = _SHARD.match(p.name).group("base") if _SHARD.match(p.name) else p.stem
        name = None if base == "judge" else base.removeprefix("judge-")
        if name not in names:
            names.append(name)
    return names


def read_meta(run_dir: Path) -> dict:
    path = Path(run_dir) / "run.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def run_label(run_dir: Path) -> str:
    meta = read_meta(run_dir)
    return meta.get("label") or Path(run_dir).resolve().name


def backbone_size(preset: str | None) -> float | None:
    """72 from 'qwen2.5-vl-72b' (the backbone-scale plot's x axis); None if no size in it."""
    if not preset:
        return None
    m = re.search(r"(\d+(?:\.\d+)?)\s*[bB]\b", preset.replace("_", "-"))
    return float(m.group(1)) if m else None
