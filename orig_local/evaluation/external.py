"""Judge images made elsewhere: ``orig eval --phase judge --images DIR [--images-name NAME]``.

Another system's outputs on FIG-Eval or WISE are imported as the run's ``generate.jsonl`` - one
row per selected item, the image copied to ``images/<id>.png`` - and judged by the same judge as
every other run. Their provenance is ``external: <name>`` (run.json ``generator`` and
``external_images``; generate rows' ``generator``), never the configured generator.

The import format is the folder: one image per benchmark item, named ``<item id>.<ext>``
(png, jpg, jpeg, webp). An item without an image gets a failed generate row that says so (it
is counted, not silently dropped); an image whose id is not a selected item is ignored and
counted. The same import can be rerun: finished ids are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orig_local.errors import UsageError
from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.jsonl_store import JsonlStore
from orig_local.evaluation.rundir import phase_file

log = logging.getLogger(__name__)

EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp")


def external_label(name: str) -> str:
    return f"external: {name}"


def _images_by_id(folder: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix.lower() in EXTENSIONS:
            found.setdefault(path.stem, path)
    return found


def import_images(items: Sequence[BenchmarkItem], run_dir: str | Path, images_dir: str | Path,
                  name: str) -> dict[str, Any]:
    """Write ``generate.jsonl`` rows (and ``images/<id>.png``) for ``items`` from ``images_dir``.
    Returns counts: imported, missing, kept (already imported), unused (images of no item)."""
    from PIL import Image

    folder = Path(images_dir)
    if not folder.is_dir():
        raise UsageError(f"--images {folder}: not a folder", hint="a folder with one <item id>.png per item")
    run_dir = Path(run_dir)
    store = JsonlStore(phase_file(run_dir, "generate"), retry=("failed",))
    label = external_label(name)
    for old in store.rows():
        if old.get("generator") != label:
            raise UsageError(f"{run_dir} already holds images from {old.get('generator')!r}, not {label!r}",
                             hint="import into a new --out folder")
    found = _images_by_id(folder)
    ids = {item.id for item in items}
    counts = {"imported": 0, "missing": 0, "kept": 0, "unused": len(set(found) - ids)}
    (run_dir / "images").mkdir(parents=True, exist_ok=True)
    done = set(store.done)
    for item in items:
        if item.id in done:
            counts["kept"] += 1
            continue
        row: dict[str, Any] = {"id": item.id, "category": item.category, "generator": label, "image": None,
                               "seed": None, "source": None}
        src = found.get(item.id)
        try:
            if src is None:
                raise FileNotFoundError(f"no image for this item in {folder} (expected {item.id}.png or .jpg)")
            with Image.open(src) as im:
                im.convert("RGB").save(run_dir / "images" / f"{item.id}.png")
            row.update(image=f"images/{item.id}.png", source=str(src), status="ok", error=None)
            counts["imported"] += 1
        except (OSError, ValueError) as exc:  # missing or undecodable: a failed row that says why
            row.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            counts["missing"] += 1
        store.append(row)
    if counts["unused"]:
        log.warning("%d image(s) in %s match no selected item id (ignored)", counts["unused"], folder)
    return counts
