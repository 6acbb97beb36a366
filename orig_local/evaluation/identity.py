"""What binds a run folder to its benchmark data (``run.json`` → ``benchmark_identity``), and
how two identities are compared: by orig eval before it continues a run, and by orig report
before it checks verdicts against the data."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orig_local.evaluation.items import BenchmarkItem


def _portable(value: Any, root: Path | None) -> Any:
    """``value`` with absolute paths under the data root made relative (a moved copy of the
    same data keeps its identity); other absolute paths keep their file name only."""
    if isinstance(value, dict):
        return {k: _portable(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v, root) for v in value]
    if isinstance(value, str) and value.startswith("/") and ("/" in value[1:]):
        path = Path(value)
        if root is not None and path.is_relative_to(root):
            return path.relative_to(root).as_posix()
        return path.name
    return value


def fields_sha256(items: Sequence[BenchmarkItem], data: str | None = None) -> str:
    """sha256 of every field of every item (Explanation, Category, Subcategory, options, gold
    facts, reference images by path under the data, ...): whatever a phase reads is bound."""
    root = Path(data).resolve() if data else None
    if root is not None and root.is_file():
        root = root.parent
    canon = sorted((_portable(it.model_dump(mode="json"), root) for it in items), key=lambda c: c["id"])
    return hashlib.sha256(json.dumps(canon, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def benchmark_identity(loader: str, data: str | None, items: Sequence[BenchmarkItem],
                       variant: str | None = None, source: dict | None = None,
                       bound_items: Sequence[BenchmarkItem] | None = None) -> dict[str, Any]:
    """What binds a run folder to its data: the loader, the data path, the loader's own
    description of what it read (WISE: release, variant, sha256 per file), the sha256 of the
    canonical JSON of every loaded item's id, prompt and questions (``sha256``, what older runs
    recorded) and of every field of every item (``fields_sha256``; ``bound_items`` when the
    binding must not depend on a judging option, e.g. WISE loaded with every protocol)."""
    canon = [{"id": it.id, "prompt": it.prompt,
              "questions": [[q.id, q.text, q.answer] for q in it.questions]} for it in items]
    blob = json.dumps(sorted(canon, key=lambda c: c["id"]), sort_keys=True, ensure_ascii=False).encode()
    src = {k: v for k, v in (source or {}).items() if k not in ("loader", "root")}  # root: machine-specific
    return {"loader": loader, "data": data, "variant": variant or src.pop("variant", None), **src,
            "items": len(items), "sha256": hashlib.sha256(blob).hexdigest(),
            "fields_sha256": fields_sha256(bound_items if bound_items is not None else items, data)}


def identity_differs(was: dict, now: dict) -> str | None:
    """What differs between two data identities (None: the same data as far as both record)."""
    if was.get("loader") and now.get("loader") and was["loader"] != now["loader"]:
        return f"loader {was['loader']} -> {now['loader']}"
    files_was, files_now = was.get("files") or {}, now.get("files") or {}
    changed = sorted(f for f in files_was if f in files_now and files_was[f] != files_now[f])
    if changed:
        return f"file(s) changed since the run started: {', '.join(changed)}"
    for key in ("fields_sha256", "sha256"):  # the newer, wider hash when both recorded it
        if was.get(key) and now.get(key):
            if was[key] != now[key]:
                return (f"{was.get('items')} items, {key} {was[key][:12]} -> {now.get('items')} items, "
                        f"{now[key][:12]}")
            return None
    return None



def current_identity(meta: dict, benchmark: str, data: str | Path, items: Sequence[BenchmarkItem],
                     source: dict | None = None) -> dict[str, Any]:
    """The identity of the data as it is now, comparable with the one run.json recorded: the
    loader's per-file hashes where it lists files, else every field of ``items`` (WISE is bound
    with every judge protocol's questions, so only its file hashes are compared here).
    ``source``: the loader's description from the read that gave ``items`` (else read now)."""
    from orig_local.evaluation.loaders import benchmark_source

    now: dict[str, Any] = {"loader": benchmark}
    try:
        variant = (meta.get("benchmark_identity") or {}).get("variant")
        if source is None:
            source = benchmark_source(benchmark, data,
                                      **({"variant": variant} if benchmark == "wise" and variant else {}))
    except Exception:  # noqa: BLE001 - a loader that cannot describe itself: compare fields only
        source = None
    if source and source.get("files"):
        now["files"] = source["files"]
    if benchmark != "wise":
        now["fields_sha256"] = fields_sha256(items, str(data))
    return now
