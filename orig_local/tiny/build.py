"""Run the tiny-model builders into one folder, skipping finished ones."""

from __future__ import annotations

import importlib
import logging
import shutil
from pathlib import Path

from orig_local._lazy import load_object
from orig_local.errors import UsageError
from orig_local.tiny import BUILDERS

log = logging.getLogger(__name__)

MARKER = ".complete"


def _stamp(name: str) -> str:
    """What a complete folder's marker holds: ``ok``, or ``ok <version>`` when the builder's
    module sets ``TINY_VERSION`` — bumping it makes existing caches rebuild that model."""
    module_name = BUILDERS[name].partition(":")[0]
    version = getattr(importlib.import_module(module_name), "TINY_VERSION", None)
    return "ok" if version is None else f"ok {version}"


def _is_complete(out: Path, stamp: str) -> bool:
    marker = out / MARKER
    return marker.exists() and marker.read_text().strip() == stamp


def build_one(name: str, root: Path, force: bool = False) -> Path:
    """Build tiny model ``name`` into ``root/name`` unless already complete (and current).

    A lock file serialises builders of the same model (parallel test runs, several users of
    one cache): the second waits and then finds the model complete."""
    import fcntl

    if name not in BUILDERS:
        raise UsageError(f"unknown tiny model {name!r}; known: {list(BUILDERS)}")
    out = Path(root) / name
    stamp = _stamp(name)
    if _is_complete(out, stamp) and not force:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(f".{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(out, stamp) and not force:
            return out
        if out.exists():
            shutil.rmtree(out)  # half-built (a crash) or stale (an older builder): start clean
        tmp = out.with_name(out.name + ".partial")
        if tmp.exists():
            shutil.rmtree(tmp)
        log.info("building tiny model %s", name)
        load_object(BUILDERS[name])(tmp)
        (tmp / MARKER).write_text(stamp + "\n")
        tmp.rename(out)  # atomic: a folder is either complete or absent
    return out


def build_all(root: Path, only: list[str] | None = None, force: bool = False) -> dict[str, Path]:
    names = only or list(BUILDERS)
    unknown = [n for n in names if n not in BUILDERS]
    if unknown:
        raise UsageError(f"unknown tiny models {unknown}; known: {list(BUILDERS)}")
    return {name: build_one(name, root, force) for name in names}
