"""Content-addressed evidence store and snapshots.

Everything a run retrieves — search answers, page texts, image bytes — is written to one
folder, so the run can be replayed offline with identical evidence (``retrieval.replay``),
and backbones of different sizes can be compared on the same evidence::

    <dir>/
      manifest.json      {"format", "created", "files": {relpath: sha256}}   (on finalize/pack)
      searches.jsonl     {"kind", "query", "k", "backend", "hits", "failures", "at"}
      pages.jsonl        {"url", "ok", "blob", "title", "final_url", "status", "fetched_at"}
                         or {"url", "ok": false, "failure": {...}, "at"}
      images.jsonl       {"url", "ok", "blob", "content_type", "at"} or {"url", "ok": false, "failure"}
      blobs/<aa>/<sha256>  page text (UTF-8) and image bytes, named by their SHA-256

Images are stored as downloaded bytes (before decoding), so a replay decodes them the same way
and yields the same ``sha256`` and pixels. Later records for the same key win.
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orig_local.errors import OrigError
from orig_local.retrieval.base import FetchFailure, Page, SearchOutcome

FORMAT = "orig-evidence/1"
RECORD_FILES = ("searches.jsonl", "pages.jsonl", "images.jsonl")


class SnapshotError(OrigError, RuntimeError):
    """A snapshot that is missing, malformed or fails verification."""


class EvidenceWriteError(OrigError, OSError):
    """The evidence store could not write a file (disk full, read-only, permissions). Raised,
    not recorded: a run that records evidence must not go on with evidence missing."""


@contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn an OS error while writing ``path`` into one line naming the file."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, EvidenceWriteError):
            raise
        reason = exc.strerror or type(exc).__name__
        raise EvidenceWriteError(f"cannot write evidence file {path}: {reason}",
                                 hint="free disk space or choose another folder, then rerun") from exc


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class EvidenceStore:
    """Append-only writer and indexed reader of one snapshot folder."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._index: dict[str, dict[Any, dict]] | None = None

    # ------------------------------------------------------------------ writing
    def put_blob(self, data: bytes) -> str:
        digest = sha256_bytes(data)
        path = self.blob_path(digest)
        if not path.exists():
            tmp = path.with_name(f".{digest}.{os.getpid()}.tmp")
            with _writing(path):
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    tmp.write_bytes(data)
                    os.replace(tmp, path)
                finally:
                    tmp.unlink(missing_ok=True)  # no half-written blob left behind
        return digest

    def blob_path(self, digest: str) -> Path:
        return self.root / "blobs" / digest[:2] / digest

    def _append(self, name: str, row: dict) -> None:
        path = self.root / name
        line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
        with _writing(path):
            self.root.mkdir(parents=True, exist_ok=True)
            with open(path, "ab") as f:
                size = f.tell()
                try:
                    f.write(line)
                    f.flush()
                except OSError:
                    try:  # never leave half a record: replay would choke on it
                        f.truncate(size)
                    except OSError:
                        pass
                    raise
        self._index = None

    def record_search(self, outcome: SearchOutcome, k: int) -> None:
        self._append("searches.jsonl", {
            "kind": outcome.kind, "query": outcome.query, "k": k, "backend": outcome.backend,
            "hits": [h.model_dump(mode="json") for h in outcome.hits],
            "failures": [f.model_dump(mode="json") for f in outcome.failures], "at": _now(),
        })

    def record_page(self, url: str, result: Page | FetchFailure) -> None:
        if isinstance(result, FetchFailure):
            self._append("pages.jsonl", {"url": url, "ok": False, "failure": result.model_dump(mode="json"), "at": _now()})
            return
        blob = self.put_blob(result.text.encode("utf-8"))
        self._append("pages.jsonl", {"url": url, "ok": True, "blob": blob, "title": result.title,
                                     "final_url": result.final_url, "status": result.status,
                                     "fetched_at": result.fetched_at})

    def record_image(self, url: str, result: tuple[bytes, str] | FetchFailure) -> None:
        if isinstance(result, FetchFailure):
            self._append("images.jsonl", {"url": url, "ok": False, "failure": result.model_dump(mode="json"), "at": _now()})
            return
        data, content_type = result
        self._append("images.jsonl", {"url": url, "ok": True, "blob": self.put_blob(data),
                                      "content_type": content_type, "at": _now()})

    # ------------------------------------------------------------------ reading
    def _rows(self, name: str) -> list[dict]:
        path = self.root / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    @property
    def index(self) -> dict[str, dict[Any, dict]]:
        if self._index is None:
            self._index = {
                "searches": {(r["kind"], r["query"]): r for r in self._rows("searches.jsonl")},
                "pages": {r["url"]: r for r in self._rows("pages.jsonl")},
                "images": {r["url"]: r for r in self._rows("images.jsonl")},
            }
        return self._index

    def search(self, kind: str, query: str) -> dict | None:
        return self.index["searches"].get((kind, query))

    def page(self, url: str) -> Page | FetchFailure:
        row = self.index["pages"].get(url)
        if row is None:
            return FetchFailure(url=url, kind="not_recorded", detail=f"no page for this URL in {self.root}")
        if not row["ok"]:
            return FetchFailure(**row["failure"])
        return Page(url=url, final_url=row["final_url"], title=row["title"], status=row["status"],
                    fetched_at=row["fetched_at"], text=self.read_blob(row["blob"]).decode("utf-8"))

    def image_bytes(self, url: str) -> tuple[bytes, str] | FetchFailure:
        row = self.index["images"].get(url)
        if row is None:
            return FetchFailure(url=url, kind="not_recorded", detail=f"no image for this URL in {self.root}")
        if not row["ok"]:
            return FetchFailure(**row["failure"])
        return self.read_blob(row["blob"]), row.get("content_type", "")

    def read_blob(self, digest: str) -> bytes:
        data = self.blob_path(digest).read_bytes()
        if sha256_bytes(data) != digest:
            raise SnapshotError(f"blob {digest} is corrupt")
        return data

    # ------------------------------------------------------------------ snapshots
    def finalize(self) -> Path:
        """Write ``manifest.json`` listing every file with its SHA-256."""
        files = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and path.name != "manifest.json" and not path.name.endswith(".tmp"):
                files[path.relative_to(self.root).as_posix()] = sha256_bytes(path.read_bytes())
        manifest = self.root / "manifest.json"
        with _writing(manifest):
            manifest.write_text(json.dumps({"format": FORMAT, "created": _now(), "files": files}, indent=1))
        return manifest

    def verify(self) -> list[str]:
        """Problems found (empty list = sound): manifest hashes, blob names, record references."""
        problems = []
        manifest = self.root / "manifest.json"
        if manifest.exists():
            data = json.loads(manifest.read_text())
            if data.get("format") != FORMAT:
                problems.append(f"unknown format {data.get('format')!r}")
            for rel, digest in data.get("files", {}).items():
                p = self.root / rel
                if not p.is_file():
                    problems.append(f"missing file {rel}")
                elif sha256_bytes(p.read_bytes()) != digest:
                    problems.append(f"hash mismatch {rel}")
        for blob in (self.root / "blobs").rglob("*") if (self.root / "blobs").exists() else []:
            if blob.is_file() and sha256_bytes(blob.read_bytes()) != blob.name:
                problems.append(f"blob {blob.name} does not match its hash")
        for name in RECORD_FILES:
            for row in self._rows(name):
                if row.get("ok") and not self.blob_path(row["blob"]).is_file():
                    problems.append(f"{name}: {row['url']} refers to missing blob {row['blob']}")
        return problems


def pack(snapshot_dir: str | Path, archive: str | Path) -> Path:
    """Finalize the snapshot and write it as one ``.tar.gz`` archive."""
    store = EvidenceStore(snapshot_dir)
    if not store.root.is_dir():
        raise SnapshotError(f"no snapshot at {store.root}")
    store.finalize()
    archive = Path(archive)
    with _writing(archive):
        archive.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive, "w:gz") as tar:
            for path in sorted(store.root.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=path.relative_to(store.root).as_posix())
    return archive


def unpack(archive: str | Path, snapshot_dir: str | Path) -> EvidenceStore:
    """Extract an archive (regular files only, no paths outside the folder), then verify."""
    root = Path(snapshot_dir)
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:*") as tar:
        for member in tar.getmembers():
            target = (root / member.name).resolve()
            if not member.isfile() or not str(target).startswith(str(root.resolve()) + os.sep):
                raise SnapshotError(f"refusing archive member {member.name!r}")
            with _writing(target), tar.extractfile(member) as src:  # type: ignore[union-attr]  # a file member has one
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(src.read())
    store = EvidenceStore(root)
    problems = store.verify()
    if problems:
        raise SnapshotError("snapshot failed verification: " + "; ".join(problems[:5]))
    return store


def verify(path: str | Path) -> list[str]:
    """Verify a snapshot folder or archive (an archive is checked in a temporary folder)."""
    path = Path(path)
    if path.is_dir():
        return EvidenceStore(path).verify()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        try:
            unpack(path, tmp)
        except (SnapshotError, tarfile.TarError, OSError) as exc:
            return [str(exc)]
    return []
