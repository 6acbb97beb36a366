"""Reports in bounded memory and galleries that scale: a report's memory does not grow with the
number of runs, a compacted run gives the same tables as a full one, galleries are paged with
lazy images, media are linked or referenced when asked, and missing images are said."""

from __future__ import annotations

import csv
import logging
import re
import shutil
import sys
import tracemalloc
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _scale_runs import write_run  # noqa: E402

from orig_local.evaluation.report import build_report  # noqa: E402


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_report_memory_does_not_grow_with_the_number_of_runs(tmp_path):
    one = write_run(tmp_path / "runs" / "r0", 400, images=False, prompt_chars=4000)
    runs = [one] + [shutil.copytree(one, tmp_path / "runs" / f"r{k}") for k in range(1, 8)]
    two = _peak(lambda: build_report(runs[:2], tmp_path / "rep2", n_boot=50, gallery=False))
    eight = _peak(lambda: build_report(runs, tmp_path / "rep8", n_boot=50, gallery=False))
    # rows of every run held at once would make 8 runs ~4x the peak of 2
    assert eight < 1.6 * two, (two, eight)


def _csv_rows(path: Path) -> dict[str, list[str]]:
    with path.open() as fh:
        return {r[0]: r[1:] for r in csv.reader(fh)}


def test_compacted_runs_give_the_tables_of_full_ones(tmp_path):
    a = write_run(tmp_path / "runs" / "a", 120, seed=1, images=False)
    b = write_run(tmp_path / "runs" / "b", 120, seed=2, images=False)
    build_report([a, b], tmp_path / "both", n_boot=200, gallery=False)
    for run in (a, b):
        build_report([run], tmp_path / run.name, n_boot=200, gallery=False)  # one run: never compacted
        for table in ("accuracy.csv", "retrieval.csv", "cost.csv", "status.csv"):
            alone, both = _csv_rows(tmp_path / run.name / table), _csv_rows(tmp_path / "both" / table)
            if table == "cost.csv":
                assert [r for r in both.values() if r] and all(v in both.values() for v in alone.values())
            else:
                assert both[run.name] == alone[run.name], table


def test_gallery_pages_lazy_images_and_media_modes(tmp_path):
    run = write_run(tmp_path / "runs" / "r", 7)
    written = build_report([run], tmp_path / "copy", n_boot=0, page_size=3)
    pages = sorted((tmp_path / "copy" / "gallery").glob("*.html"))
    assert [p.name for p in pages] == ["r-p2.html", "r-p3.html", "r.html"]
    assert written["gallery:r"] == tmp_path / "copy" / "gallery" / "r.html"
    first = (tmp_path / "copy" / "gallery" / "r.html").read_text()
    assert first.count('class="item"') == 3 and 'href="r-p3.html"' in first
    imgs = re.findall(r"<img [^>]*>", first)
    assert imgs and all('loading="lazy"' in t for t in imgs)
    copied = list((tmp_path / "copy" / "media" / "r").rglob("*.png"))
    assert len(copied) == 7 and not any(p.is_symlink() for p in copied)

    build_report([run], tmp_path / "link", n_boot=0, media_mode="link")
    linked = list((tmp_path / "link" / "media" / "r").rglob("*.png"))
    assert len(linked) == 7 and all(p.is_symlink() and p.resolve().is_file() for p in linked)

    build_report([run], tmp_path / "ref", n_boot=0, media_mode="reference")
    assert not (tmp_path / "ref" / "media").exists()
    page = tmp_path / "ref" / "gallery" / "r.html"
    srcs = re.findall(r'src="([^"]+)"', page.read_text())
    assert len(srcs) == 7 and all((page.parent / s).resolve().is_file() for s in srcs)


def test_missing_images_are_warned_and_marked(tmp_path, caplog):
    run = write_run(tmp_path / "runs" / "r", 5)
    (run / "images" / "item_000003.png").unlink()
    with caplog.at_level(logging.WARNING):
        build_report([run], tmp_path / "rep", n_boot=0)
    assert "1 image file(s)" in caplog.text and "item_000003" in caplog.text
    assert "do not exist: images/item_000003.png" in (tmp_path / "rep" / "gallery" / "r.html").read_text()


def test_a_shorter_report_removes_stale_pages(tmp_path):
    run = write_run(tmp_path / "runs" / "r", 5)
    build_report([run], tmp_path / "rep", n_boot=0, page_size=2)
    build_report([run], tmp_path / "rep", n_boot=0, page_size=10)
    assert [p.name for p in (tmp_path / "rep" / "gallery").glob("*.html")] == ["r.html"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full to stand in for a full disk")
def test_report_on_a_full_disk_is_one_line(tmp_path, capsys):
    from orig_local.cli import main

    run = write_run(tmp_path / "runs" / "r", 5, images=False)
    out = tmp_path / "rep"
    out.mkdir()
    (out / "accuracy.md").symlink_to("/dev/full")
    assert main(["report", str(run), "--out", str(out), "--bootstrap", "0", "--no-gallery"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left" in err[0] and "accuracy.md" in err[0], err


def test_cli_media_and_page_options(tmp_path, capsys):
    from orig_local.cli import main

    run = write_run(tmp_path / "runs" / "r", 5)
    out = tmp_path / "rep"
    assert main(["report", str(run), "--out", str(out), "--bootstrap", "0", "--media", "link",
                 "--gallery-page", "2"]) == 0
    assert sorted(p.name for p in (out / "gallery").glob("*.html")) == ["r-p2.html", "r-p3.html", "r.html"]
    assert all(p.is_symlink() for p in (out / "media" / "r").rglob("*.png"))
    with pytest.raises(SystemExit) as exc:  # argparse: one line, exit 2
        main(["report", str(run), "--out", str(out), "--gallery-page", "0"])
    assert exc.value.code == 2 and "need at least 1" in capsys.readouterr().err


def test_merge_streams_rows_and_links_images(tmp_path):
    from orig_local.evaluation.jsonl_store import read_rows
    from orig_local.evaluation.merge import merge_runs

    a = write_run(tmp_path / "s0", 4)
    b = write_run(tmp_path / "s1", 4, start=2)  # items 2 and 3 in both: kept once
    counts = merge_runs([a, b], tmp_path / "merged")
    assert counts["judge.jsonl"] == 6
    ids = [r["id"] for r in read_rows(tmp_path / "merged" / "judge.jsonl")]
    assert sorted(ids) == [f"item_{i:06d}" for i in range(6)] and len(set(ids)) == 6
    merged = tmp_path / "merged" / "images" / "item_000005.png"
    assert merged.stat().st_ino == (b / "images" / "item_000005.png").stat().st_ino  # a link, not a copy


def test_galleries_of_a_study_hold_one_reloaded_run_at_a_time(tmp_path, monkeypatch):
    """Each compacted run is reloaded for its gallery; the previous run's rows must be gone
    before the next one loads (a loop variable kept them: two runs' rows at the peak, +760 MB
    over one run at 50k items). Counted with weak references, not timed or sized."""
    import gc
    import weakref

    from orig_local.evaluation.report_runs import _RunLoader

    runs = [write_run(tmp_path / "runs" / f"r{k}", 30, seed=k, images=False) for k in range(3)]
    reloaded: list[weakref.ref] = []
    alive_before_reload: list[int] = []
    real_reload = _RunLoader.reload

    def reload(self, run):
        gc.collect()
        alive_before_reload.append(sum(ref() is not None for ref in reloaded))
        full = real_reload(self, run)
        reloaded.append(weakref.ref(full))
        return full

    monkeypatch.setattr(_RunLoader, "reload", reload)
    paths = build_report(runs, tmp_path / "rep", n_boot=20)
    assert alive_before_reload == [0, 0, 0], alive_before_reload
    assert all(paths[f"gallery:r{k}"].is_file() for k in range(3))
