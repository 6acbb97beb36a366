"""README's "What is where" names every top-level module and folder of the package and every
tracked folder at the repository's top, so the map cannot silently fall behind the tree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "orig_local"


def _map_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## What is where", 1)[1]
    return section.split("```", 2)[1]


def _named(block: str) -> set[str]:
    """Names at the start of an entry: `  name/`, `  name.py`, `  configs/offline.yaml`, `tests/`."""
    names = set()
    for line in block.splitlines():
        for m in re.finditer(r"(?:^|\s{2,})([\w.-]+(?:/[\w.-]*)?)", line):
            names.add(m.group(1).split("/")[0] if "/" in m.group(1) else m.group(1))
    return names


def test_every_package_module_and_folder_is_on_the_map():
    named = _named(_map_block())
    entries = {p.name for p in PKG.iterdir()
               if (p.suffix == ".py" and p.stem not in ("__init__", "__main__"))
               or (p.is_dir() and not p.name.startswith("__"))}
    missing = sorted(e for e in entries if e not in named)
    assert not missing, f"README 'What is where' does not name: {missing}"


def test_every_tracked_top_level_folder_is_on_the_map():
    try:
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked folders are unknown")
    folders = {f.split("/", 1)[0] for f in files.splitlines() if "/" in f and not f.startswith(".")}
    missing = sorted(f for f in folders if f not in _named(_map_block()))
    assert not missing, f"README 'What is where' does not name the top-level folders: {missing}"
