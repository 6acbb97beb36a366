"""Where orig_local keeps things on disk (never inside the package)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def orig_home() -> Path:
    """Root of caches and built artefacts: ``$ORIG_HOME`` or ``~/.cache/orig_local``."""
    return Path(os.environ.get("ORIG_HOME") or Path.home() / ".cache" / "orig_local")


def tiny_models_dir() -> Path:
    """Tiny random-weight models built by ``scripts/make_tiny_models.py``:
    ``$ORIG_TINY_DIR`` or ``<orig_home>/tiny-models``."""
    return Path(os.environ.get("ORIG_TINY_DIR") or orig_home() / "tiny-models")


def models_dir() -> Path:
    """Model presets (YAML): ``$ORIG_MODELS_DIR`` or the repository's ``models/`` folder."""
    return Path(os.environ.get("ORIG_MODELS_DIR") or REPO_ROOT / "models")
