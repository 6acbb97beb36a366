"""Join shard outputs: ``<phase>.shard-I-of-N.jsonl`` files (and/or whole run folders from
several machines) into one ``<phase>.jsonl`` per phase, without duplicates.

Rows are keyed by id; the first complete row wins (rows of a finished id are identical across
shards anyway, since each id ran in exactly one shard), except that a row that finished better
(ok over degraded over failed: an item retried on another machine) replaces a worse one. The merged file is written atomically;
the shard files it absorbed move to ``shards/`` so a later read cannot count them twice.
Rows stream through (only ids are held); image and trace files are hard-linked when the
folders share a file system, copied otherwise.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

from orig_local.evaluation.jsonl_store import JsonlStore, iter_rows, status_rank, write_rows_atomic
from orig_local.evaluation.phases import PHASE_NAMES

log = logging.getLogger(__name__)

_FILE = re.compile(rf"^(?P<base>({'|'.join(PHASE_NAMES)})(-[\w.-]+?)?)(\.shard-\d+-of-\d+)?\.jsonl$")
_ASSET_DIRS = ("images", "refs", "evidence", "traces")


def merge_runs(runs: list[str | Path], out: str | Path | None = None) -> dict[str, int]:
    """Merge every phase file found in ``runs`` into ``out`` (default: the first run).
    Returns rows per merged file."""
    from orig_local.evaluation.rundir import check_run_dir, hold_run

    dirs = [check_run_dir(r) for r in runs]  # missing or empty: a DataError, nothing created
    target = Path(out) if out else dirs[0]
    with hold_run(target):  # no `orig eval` may be writing the merged folder meanwhile
        return _merge(dirs, target)


def _best_positions(paths: list[Path]) -> dict[str, tuple[int, int, int]]:
    """id -> (rank, file index, row index) of the row to keep: the first, unless a later one
    finished better (an item retried on another machine): an ok row never loses to a failed
    copy of the same id. Holds three numbers per id, not rows."""
    best: dict[str, tuple[int, int, int]] = {}
    for f, path in enumerate(paths):
        for r, row in enumerate(iter_rows(path)):
            old = best.get(row["id"])
            if old is None or status_rank(row) < old[0]:
                best[row["id"]] = (status_rank(row), f, r)
    return best


def _chosen_rows(paths: list[Path], chosen: dict[str, tuple[int, int, int]]):
    """The rows :func:`_best_positions` chose, streamed in file order."""
    for f, path in enumerate(paths):
        for r, row in enumerate(iter_rows(path)):
            if chosen[row["id"]][1:] == (f, r):
                yield row


def _merge(runs: list[Path], out: Path) -> dict[str, int]:
    groups: dict[str, list[Path]] = {}
    for run in runs:
        for path in sorted(run.glob("*.jsonl")):
            m = _FILE.match(path.name)
            if m and not path.name.endswith(".corrupt.jsonl"):
                groups.setdefault(m.group("base"), []).append(path)
    counts: dict[str, int] = {}
    for base, paths in sorted(groups.items()):
        # the target's own main file first, so rows already merged keep their place
        target = out / f"{base}.jsonl"
        paths = sorted(set(paths), key=lambda p: (p != target, str(p)))
        for path in paths:
            if path.parent.resolve() == out.resolve():
                JsonlStore(path)  # moves corrupt lines aside (<name>.corrupt.jsonl) instead of dropping them
        chosen = _best_positions(paths)  # ids only: rows stream from the inputs to the merged file
        write_rows_atomic(target, _chosen_rows(paths, chosen))
        counts[target.name] = len(chosen)
        for path in paths:
            if path != target and path.parent == out:
                (out / "shards").mkdir(exist_ok=True)
                shutil.move(str(path), out / "shards" / path.name)
    for run in runs:
        if run.resolve() == out.resolve():
            continue
        for sub in _ASSET_DIRS:
            for src in (run / sub).rglob("*") if (run / sub).is_dir() else []:
                dst = out / src.relative_to(run)
                if src.is_file() and not dst.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    _link_or_copy(src, dst)
        for name in ("run.json", "config.yaml"):
            if (run / name).is_file() and not (out / name).exists():
                shutil.copy2(run / name, out / name)
    log.info("merged into %s: %s", out, counts)
    return counts


def _link_or_copy(src: Path, dst: Path) -> None:
    """A hard link (no bytes copied; the merged folder keeps the file if the shard folder is
    deleted), or a copy across file systems."""
    import os

    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
