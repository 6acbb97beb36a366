"""`orig eval --phase all` parses its benchmark once: the final report takes the read its phases
ran on (a 50k-item benchmark is not parsed a second time for the report), and writes the same
report `orig report RUN` makes afterwards in a process of its own (which reads the data)."""

from __future__ import annotations

import functools
import re
import shutil
from pathlib import Path

from _eval_fakes import FakeAgent, FakeGenerator, make_mini_benchmark, scripted_judge
from test_eval_loaders_once import _opens

from orig_local.cli import main
from orig_local.evaluation import orchestrate

# what differs between two reports of the same run made at different times (results.json's
# generated_at)
_WHEN = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _stand_ins(monkeypatch) -> None:
    """`orig eval` builds its components from the config; here the eval tests' scripted ones."""
    real = orchestrate.run_phases
    monkeypatch.setattr(orchestrate, "run_phases", functools.partial(
        real, agent=FakeAgent(), generator=FakeGenerator(), judge=scripted_judge(), preflight=False))


def test_eval_phase_all_reads_the_benchmark_once_and_reports_as_orig_report(tmp_path, monkeypatch, capsys):
    data = make_mini_benchmark(tmp_path / "bench", n=6)
    run = tmp_path / "run"
    _stand_ins(monkeypatch)
    counts = _opens(monkeypatch, data.parent)
    rc = main(["eval", "--phase", "all", "--benchmark", "jsonl", "--data", str(data), "--out", str(run),
               "-s", "progress=false", "-s", "cache_dir=", "-s", "generator.preset=null"])
    opened = dict(counts)
    monkeypatch.undo()
    assert rc == 0, capsys.readouterr().err
    assert opened.get("bench.jsonl") == 1, f"the benchmark file was opened {opened.get('bench.jsonl')} times"
    assert (run / "report" / "report.md").is_file()
    first = _files(run / "report")
    shutil.rmtree(run / "report")

    counts = _opens(monkeypatch, data.parent)
    assert main(["report", str(run)]) == 0
    assert dict(counts).get("bench.jsonl") == 1  # orig report reads the data itself
    monkeypatch.undo()
    again = _files(run / "report")
    assert sorted(first) == sorted(again)
    for name, body in first.items():  # byte for byte, figures too; only results.json's generated_at differs
        if body != again[name]:
            assert _WHEN.sub("<when>", body.decode()) == _WHEN.sub("<when>", again[name].decode()), name
    assert "benchmark not checked" not in first["report.md"].decode()  # the verdicts were checked against it


def test_eval_report_still_notices_data_changed_since_the_run(tmp_path, monkeypatch, capsys):
    """The read is taken only for the run's own data and options; a later `orig report` of a
    run whose data changed says so, as before."""
    data = make_mini_benchmark(tmp_path / "bench", n=3)
    run = tmp_path / "run"
    _stand_ins(monkeypatch)
    assert main(["eval", "--phase", "all", "--benchmark", "jsonl", "--data", str(data), "--out", str(run),
                 "-s", "progress=false", "-s", "cache_dir=", "-s", "generator.preset=null"]) == 0
    monkeypatch.undo()
    data.write_text(data.read_text(encoding="utf-8").replace("A picture of thing 0", "A picture of thing zero"),
                    encoding="utf-8")
    assert main(["report", str(run)]) == 0
    assert "is not the data this run was made with" in (run / "report" / "report.md").read_text(encoding="utf-8")


def test_a_read_serves_only_its_own_data_and_options(tmp_path, monkeypatch):
    """I-HallA records per-file hashes: with the read, the report's check uses the hashes of the
    read it was given (no file opened) and comes out as a fresh load's; another data folder or
    other loader options are read from their files."""
    from test_eval_loaders_once import _ev, _ihalla

    from orig_local.cli.eval_cmd import _read_items
    from orig_local.evaluation.run_rows import ReadBenchmark, load_benchmark_items

    data = _ihalla(tmp_path / "ihalla")
    items, identity, read = _read_items(_ev("ihalla", data))
    meta = {"benchmark": "ihalla", "data": str(data), "benchmark_identity": identity}
    fresh = load_benchmark_items(meta, data, "ihalla")
    counts = _opens(monkeypatch, data)
    served = load_benchmark_items(meta, data, "ihalla", read=read)
    monkeypatch.undo()
    assert dict(counts) == {}
    assert served == fresh and fresh[1] is None and len(served[0]) == len(items)
    other = ReadBenchmark.of("ihalla", tmp_path, {}, read.loaded)
    assert not other.serves("ihalla", data, {}) and not read.serves("ihalla", data, {"none_option": False})
    counts = _opens(monkeypatch, data)
    assert load_benchmark_items(meta, data, "ihalla", read=other) == fresh
    monkeypatch.undo()
    assert counts  # read from the files
