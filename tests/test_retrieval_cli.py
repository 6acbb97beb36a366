"""`orig search`, `orig corpus build`, `orig snapshot` (in-process, offline config)."""

from __future__ import annotations

import json

import pytest

from orig_local.cli import main

pytest.importorskip("bm25s")


def test_search_text_offline_json(tmp_path, capsys):
    rc = main(["-q", "search", "Quillon glassback beetle legs", "--offline", "-k", "3", "--json",
               "-s", f"cache_dir={tmp_path}"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["backend"] == "local" and out["kind"] == "text"
    assert out["hits"][0]["url"] == "corpus://doc/quillon-02" and len(out["hits"]) == 3


def test_search_record_then_snapshot_pack_verify_replay(tmp_path, capsys):
    snap, archive = tmp_path / "snap", tmp_path / "snap.tar.gz"
    common = ["--offline", "-s", f"cache_dir={tmp_path}", "-s", "retrieval.local.images=false"]
    assert main(["-q", "search", "Korvath tram", "--images", "--record", str(snap), *common]) == 0
    table = capsys.readouterr().out
    assert "corpus://img/img-k7-" in table.splitlines()[0]
    assert main(["snapshot", "pack", str(snap), str(archive)]) == 0
    assert main(["snapshot", "verify", str(archive)]) == 0
    assert main(["snapshot", "unpack", str(archive), str(tmp_path / "restored")]) == 0
    capsys.readouterr()
    assert main(["-q", "search", "Korvath tram", "--images", "--json", "--replay", str(tmp_path / "restored"), *common]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["backend"] == "snapshot" and replayed["hits"][0]["image_url"].startswith("corpus://img/img-k7-")
    assert main(["-q", "search", "never recorded", "--replay", str(snap), *common]) == 1


def test_corpus_build_text_only(tmp_path, capsys):
    import shutil

    from orig_local.retrieval.corpus import DEMO_CORPUS

    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO_CORPUS, corpus, ignore=shutil.ignore_patterns(".index"))
    assert main(["-q", "corpus", "build", str(corpus), "--no-images", "--offline"]) == 0
    assert "31 documents, 16 images" in capsys.readouterr().out
    assert list((corpus / ".index").glob("*/meta.json"))
