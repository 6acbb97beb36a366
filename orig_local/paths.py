"""Where orig_local keeps things on disk. Caches and built models live outside the package;
only read-only data ships inside it (model presets, prompts, the demo corpus)."""

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


# Shipped inside the package (package data), so a wheel install has every preset.
PRESETS_DIR = Path(__file__).resolve().parent / "model_presets"


def models_dir() -> Path:
    """Model presets (YAML): ``$ORIG_MODELS_DIR`` or the packaged ``orig_local/model_presets/``."""
    return Path(os.environ.get("ORIG_MODELS_DIR") or PRESETS_DIR)
