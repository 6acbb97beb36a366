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


def _packaged_presets() -> Path:
    """The model catalogue: ``models/`` at the top of a source checkout (where a user reads and
    edits it), mapped into the wheel as ``orig_local/models/`` (setup.py's package_dir), so an
    installed package finds it beside itself and a checkout finds it at its root."""
    inside = Path(__file__).resolve().parent / "models"
    return inside if inside.is_dir() else REPO_ROOT / "models"


PRESETS_DIR = _packaged_presets()


def user_models_dir() -> Path | None:
    """``$ORIG_MODELS_DIR``: a folder of presets of your own. Each file overrides the packaged
    preset of the same name (or adds one); every other packaged preset stays available."""
    value = os.environ.get("ORIG_MODELS_DIR")
    return Path(value) if value else None

