"""WISE as released, rewrites included (issue 21 point 1): classes by prompt_id range like the
authors' calculators (the raw Category kept), ids normalised, out-of-range ids skipped and
counted, Overall only when every item is scored, and the WISE_Verified judge's rules."""

from __future__ import annotations

import json
import logging
import math
import shutil

import pytest
from _wise_release import make_repo, rows

from orig_local.errors import DataError
from orig_local.evaluation.loaders import benchmark_source, load_benchmark
from orig_local.evaluation.wise_score import format_table, summarize
from orig_local.templates import environment


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("wise") / "WISE")


def test_the_legacy_rewrites_load_with_a_category_the_data_misnames(repo, tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(repo / "WISE_legacy" / "data", folder)
    f = folder / "natural_science_rewrite.json"
    data = json.loads(f.read_text())
    row = next(r for r in data if r["prompt_id"] == 748)
    row["Category"] = "Ecology"  # as in the authors' natural_science_rewrite.json
    f.write_text(json.dumps(data))
    items = {i.id: i for i in load_benchmark("wise", folder, variant="rewrite")}
    assert len(items) == 1000
    assert items["wise_748"].category == "biology" and items["wise_748"].raw_category == "Ecology"
    assert "Ecology" in items["wise_748"].issues[0]
    # and the CLI's --variant rewrite over the same folder selects it by class
    only = load_benchmark("wise", folder, variant="rewrite", classes=["biology"])
    assert len(only) == 100 and "wise_748" in {i.id for i in only}


@pytest.mark.parametrize("release", ["legacy", "verified"])
def test_every_release_counts_classes_by_id_range(release, tmp_path):
    data = rows(release)
    for r in data:
        r["Category"] = "Something else"  # whatever the string says
    (tmp_path / "all.json").write_text(json.dumps(data))
    got = load_benchmark("wise", tmp_path / "all.json")
    want = load_benchmark("wise", make_repo(tmp_path / "r") / ("WISE_legacy" if release == "legacy" else "data_verified"))
    if release == "verified":  # a lone file outside data_verified/ reads as legacy unless named so
        (tmp_path / "all_verified.json").write_text(json.dumps(data))
        got = load_benchmark("wise", tmp_path / "all_verified.json")
    assert {i.id: i.category for i in got} == {i.id: i.category for i in want}


def test_ids_are_normalised_so_001_and_1_are_one_prompt(tmp_path):
    data = rows("verified")[:3]
    data[0]["prompt_id"] = "001"
    (tmp_path / "a.json").write_text(json.dumps(data))
    assert [i.id for i in load_benchmark("wise", tmp_path / "a.json")] == ["wise_1", "wise_2", "wise_3"]
    data.append({**data[1], "prompt_id": 1})  # "001" and 1: the same prompt twice
    (tmp_path / "a.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match="prompt_id 1 appears twice"):
        load_benchmark("wise", tmp_path / "a.json")


def test_out_of_range_ids_are_skipped_and_counted_like_the_calculators(tmp_path, caplog):
    data = rows("verified")[:3] + [{**rows("verified")[0], "prompt_id": 1701},
                                   {**rows("verified")[0], "prompt_id": "0"},
                                   {**rows("verified")[0], "prompt_id": "x12"}]
    (tmp_path / "a.json").write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING):
        items = load_benchmark("wise", tmp_path / "a.json")
    assert [i.id for i in items] == ["wise_1", "wise_2", "wise_3"]
    assert "3 row(s) with a prompt_id outside 1-1000 skipped" in caplog.text
    assert benchmark_source("wise", tmp_path / "a.json")["skipped_ids"] == ["1701", "0", "x12"]


def _row(pid: int, category: str, score: int | None) -> dict:
    verdict = {"qid": "verified", "answer": None if score is None else {"score": score},
               "error": "no reply" if score is None else None}
    return {"id": f"wise_{pid}", "category": category, "error": None, "verdicts": [verdict]}


SIX = [(1, "cultural"), (401, "time"), (521, "space"), (641, "biology"), (761, "physics"), (881, "chemistry")]


def test_overall_only_when_every_item_is_scored():
    full = [_row(pid, cat, 1) for pid, cat in SIX]
    assert summarize(full, "verified", release="verified").overall == pytest.approx(1.0)
    one_failed = full[:-1] + [_row(882, "chemistry", None), _row(881, "chemistry", 1)]
    for errors in ("exclude", "false"):  # six categories have means, but one item is not scored
        s = summarize(one_failed, "verified", errors=errors, release="verified")
        assert not math.isnan(s.categories["chemistry"]) and math.isnan(s.overall)
    short = summarize(full, "verified", release="verified", expected=1000)  # 994 ids missing
    assert math.isnan(short.overall) and short.missing == 994
    table = format_table([("run", short)])
    assert "| — |" in table and "6/1000" in table and "994 benchmark item(s) have no judge row" in table


def test_verified_judge_rules_in_our_words():
    text = environment(__import__("pathlib").Path(__file__).parents[1] / "orig_local" / "evaluation" / "templates") \
        .get_template("wise_verified_system.jinja").render()
    rule_for_one = next(ln for ln in text.splitlines() if ln.startswith("- 1:"))
    assert "realistic" not in rule_for_one  # the authors' condition for a 1 has no realism clause
    assert "style is not what you grade" in text and "photograph" in text  # style alone is no reason for 0
    assert "seriously doubt" in text and "give 0" in text
