"""Disk full and other write errors in the evidence store end as one line naming the file
(an OrigError the CLI prints without a traceback), and leave no half-written record."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orig_local.errors import OrigError
from orig_local.retrieval.base import FetchFailure, Page
from orig_local.retrieval.evidence import EvidenceStore, EvidenceWriteError, pack

needs_dev_full = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")


def page(text: str = "The lighthouse is teal and orange.") -> Page:
    return Page(url="https://example.invalid/a", final_url="https://example.invalid/a", title="A",
                text=text, fetched_at="2026-01-01T00:00:00+00:00", status=200)


@needs_dev_full
def test_disk_full_on_a_record_file_names_the_file(tmp_path):
    store = EvidenceStore(tmp_path / "snap")
    store.root.mkdir()
    os.symlink("/dev/full", store.root / "pages.jsonl")  # every write: ENOSPC, like a full disk
    with pytest.raises(EvidenceWriteError) as info:
        store.record_page("https://example.invalid/b", FetchFailure(url="https://example.invalid/b", kind="timeout"))
    err = info.value
    assert isinstance(err, OrigError) and isinstance(err, OSError)
    line = err.one_line()
    assert "\n" not in line and "pages.jsonl" in line and "No space left on device" in line


def test_blob_write_failure_names_the_blob_and_leaves_no_temp_file(tmp_path):
    store = EvidenceStore(tmp_path / "snap")
    store.root.mkdir()
    (store.root / "blobs").write_text("not a folder")  # mkdir of blobs/<aa>/ fails
    with pytest.raises(EvidenceWriteError) as info:
        store.record_page("https://example.invalid/a", page())
    assert "blobs" in str(info.value) and "\n" not in info.value.one_line()
    assert not (store.root / "pages.jsonl").exists()  # no record pointing at a missing blob
    assert not list(store.root.rglob("*.tmp"))


def test_failed_append_leaves_earlier_records_readable(tmp_path, monkeypatch):
    store = EvidenceStore(tmp_path / "snap")
    store.record_page("https://example.invalid/a", page())
    real_open = open

    class FullFile:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def tell(self):
            return self.f.tell()

        def truncate(self, size):
            return self.f.truncate(size)

        def write(self, data):
            self.f.write(data[: len(data) // 2])  # half a line reaches the disk, then it is full
            self.f.flush()
            raise OSError(28, "No space left on device")

        def flush(self):
            pass

    def fake_open(path, mode="r", *a, **kw):
        f = real_open(path, mode, *a, **kw)
        return FullFile(f) if str(path).endswith("pages.jsonl") and "a" in mode else f

    monkeypatch.setattr("builtins.open", fake_open)
    with pytest.raises(EvidenceWriteError, match="pages.jsonl"):
        store.record_page("https://example.invalid/b", page("Second page."))
    monkeypatch.undo()
    fresh = EvidenceStore(store.root)
    assert isinstance(fresh.page("https://example.invalid/a"), Page)
    assert fresh.page("https://example.invalid/b").kind == "not_recorded"


@needs_dev_full
def test_pack_to_a_full_disk_is_one_line(tmp_path):
    store = EvidenceStore(tmp_path / "snap")
    store.record_page("https://example.invalid/a", page())
    os.symlink("/dev/full", tmp_path / "snap.tar.gz")
    with pytest.raises(EvidenceWriteError, match="snap.tar.gz"):
        pack(store.root, tmp_path / "snap.tar.gz")
