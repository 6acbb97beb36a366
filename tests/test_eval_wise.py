"""The WISE loader on folders shaped like both releases of PKU-YuanGroup/WISE."""

import json
import shutil
from collections import Counter

import pytest
from _wise_release import make_repo, rows

from orig_local.errors import DataError
from orig_local.evaluation.loaders import benchmark_options, benchmark_source, load_benchmark
from orig_local.evaluation.rundir import read_phase


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("wise") / "WISE")


LEGACY_COUNTS = {"cultural": 400, "time": 167, "space": 133, "biology": 100, "physics": 100, "chemistry": 100}
VERIFIED_COUNTS = {"cultural": 400, "time": 120, "space": 120, "biology": 120, "physics": 120, "chemistry": 120}


@pytest.mark.parametrize("where", ["WISE_legacy", "WISE_legacy/data"])
def test_legacy_folder_loads_the_1000_base_prompts_once(repo, where):
    items = load_benchmark("wise", repo / where)
    assert len(items) == 1000 and len({i.id for i in items}) == 1000
    assert Counter(i.category for i in items) == LEGACY_COUNTS
    assert not any(i.issues for i in items)  # Category agrees with the authors' id ranges
    by_id = {i.id: i for i in items}
    assert by_id["wise_1"].prompt.startswith("legacy prompt 1:")  # base files, not the rewrites
    assert by_id["wise_1"].subcategory and by_id["wise_1"].reference_text.startswith("The model should")
    src = benchmark_source("wise", repo / where)
    assert src["release"] == "legacy" and src["variant"] == "base"
    assert sorted(src["files"]) == ["cultural_common_sense.json", "natural_science.json",
                                    "spatio-temporal_reasoning.json"]


@pytest.mark.parametrize("where", ["", "data_verified"])
def test_verified_folder_or_repo_root_reads_merge_json_never_twice(repo, where):
    items = load_benchmark("wise", repo / where if where else repo)
    assert len(items) == 1000 and len({i.id for i in items}) == 1000
    assert Counter(i.category for i in items) == VERIFIED_COUNTS
    assert not any(i.issues for i in items)
    assert {i.id: i for i in items}["wise_1"].prompt.startswith("verified prompt 1:")
    src = benchmark_source("wise", repo / where if where else repo)
    assert src["release"] == "verified" and "merge.json" not in src["files"] and len(src["files"]) == 3
    # file hashes are of the bytes read
    import hashlib

    f = repo / "data_verified" / "natural_science_verified.json"
    assert src["files"]["natural_science_verified.json"] == hashlib.sha256(f.read_bytes()).hexdigest()


def test_merge_json_alone_is_read_when_the_three_files_are_absent(repo, tmp_path):
    folder = tmp_path / "data_verified"
    folder.mkdir()
    shutil.copy(repo / "data_verified" / "merge.json", folder)
    items = load_benchmark("wise", folder)
    assert len(items) == 1000
    assert benchmark_source("wise", folder) ["files"].keys() == {"merge.json"}


def test_rewrite_variant_only_on_request(repo):
    items = load_benchmark("wise", repo / "WISE_legacy", variant="rewrite")
    assert len(items) == 1000 and all(i.prompt.startswith("rewritten prompt") for i in items)
    assert {i.id for i in items} == {f"wise_{n}" for n in range(1, 1001)}  # the same prompt_ids
    assert benchmark_source("wise", repo / "WISE_legacy", variant="rewrite")["variant"] == "rewrite"
    with pytest.raises(DataError, match="no rewrite files"):
        load_benchmark("wise", repo / "data_verified", variant="rewrite")
    with pytest.raises(DataError, match="variant"):
        load_benchmark("wise", repo / "WISE_legacy" / "data" / "natural_science_rewrite.json")


def test_single_file(repo):
    items = load_benchmark("wise", repo / "WISE_legacy" / "data" / "natural_science.json")
    assert len(items) == 300 and {i.category for i in items} == {"biology", "physics", "chemistry"}


def test_duplicate_prompt_ids_are_an_error(repo, tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(repo / "WISE_legacy" / "data", folder)
    data = json.loads((folder / "natural_science.json").read_text())
    data.append(dict(data[0]))  # the same prompt_id twice
    (folder / "natural_science.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match="appears twice"):
        load_benchmark("wise", folder)
    # also across files: a rewrite copied in under a base name collides with the base ids
    other = tmp_path / "both"
    other.mkdir()
    for stem in ("cultural_common_sense", "spatio-temporal_reasoning"):
        shutil.copy(repo / "WISE_legacy" / "data" / f"{stem}.json", other)
    shutil.copy(repo / "WISE_legacy" / "data" / "cultural_common_sense.json", other / "natural_science.json")
    with pytest.raises(DataError, match="appears twice"):
        load_benchmark("wise", other)


def test_a_partial_release_folder_is_an_error_not_fewer_prompts(repo, tmp_path):
    folder = tmp_path / "data"
    shutil.copytree(repo / "WISE_legacy" / "data", folder)
    (folder / "natural_science.json").unlink()
    with pytest.raises(DataError, match="missing: natural_science.json"):
        load_benchmark("wise", folder)
    with pytest.raises(DataError, match="not found"):
        load_benchmark("wise", tmp_path / "nowhere")


@pytest.mark.parametrize("classes,expected", [
    (["Cultural knowledge"], {"cultural": 400}),
    (["cultural common sense"], {"cultural": 400}),
    (["SPATIO-TEMPORAL_REASONING"], {"time": 167, "space": 133}),
    (["natural_science"], {"biology": 100, "physics": 100, "chemistry": 100}),
    (["Physical Knowledge", "TIME"], {"physics": 100, "time": 167}),
    (["physics", "space"], {"physics": 100, "space": 133}),
])
def test_classes_accept_categories_and_domains_in_any_case(repo, classes, expected):
    items = load_benchmark("wise", repo / "WISE_legacy", classes=classes)
    assert Counter(i.category for i in items) == expected


def test_unknown_class_is_an_error_an_unknown_category_string_is_kept_raw(repo, tmp_path):
    with pytest.raises(DataError, match="no class 'sciense'"):
        load_benchmark("wise", repo / "WISE_legacy", classes=["sciense"])
    bad = rows("legacy")[:3]
    bad[1]["Category"] = "Astrology"  # the calculators never read it: the id range decides
    (tmp_path / "x.json").write_text(json.dumps(bad))
    item = {i.id: i for i in load_benchmark("wise", tmp_path / "x.json")}["wise_2"]
    assert item.category == "cultural" and item.raw_category == "Astrology" and "Astrology" in item.issues[0]


def test_what_the_judge_is_asked(repo):
    item = load_benchmark("wise", repo / "data_verified")[0]
    assert [(q.id, q.rubric) for q in item.questions] == [("wiscore", "wise_wiscore"), ("verified", "wise_verified")]
    assert all(q.text == item.prompt for q in item.questions)  # WISE's judges see the prompt
    only = load_benchmark("wise", repo / "data_verified", protocols=["statement"])[0]
    assert [(q.id, q.rubric) for q in only.questions] == [("statement", None)]
    with pytest.raises(DataError, match="protocols"):
        load_benchmark("wise", repo / "data_verified", protocols=["vibes"])


def test_options_come_from_the_eval_config_and_variant_is_wise_only():
    from orig_local.config import Config
    from orig_local.errors import UsageError

    cfg = Config()
    cfg.eval.benchmark = "wise"
    cfg.eval.variant = "rewrite"
    assert benchmark_options(cfg.eval) == {"variant": "rewrite", "protocols": ["wiscore", "verified"]}
    cfg.eval.benchmark = "figeval"
    with pytest.raises(UsageError, match="WISE only"):
        benchmark_options(cfg.eval)
    with pytest.raises(UsageError, match="no option variant"):
        load_benchmark("jsonl", "x.jsonl", variant="rewrite")


@pytest.mark.parametrize("where", ["WISE_legacy", "data_verified"])
def test_cli_eval_loads_exactly_1000_items(repo, tmp_path, where):
    from orig_local.cli import main

    out = tmp_path / "run"
    rc = main(["-q", "eval", "--benchmark", "wise", "--data", str(repo / where), "--condition", "direct",
               "--out", str(out), "--phase", "agent"])
    assert rc == 0
    agent = read_phase(out, "agent")
    assert len(agent) == 1000 and all(r["error"] is None for r in agent.values())


def test_cli_variant_option_reaches_the_loader(repo, tmp_path):
    from orig_local.cli import main

    out = tmp_path / "run"
    rc = main(["-q", "eval", "--benchmark", "wise", "--data", str(repo / "WISE_legacy"), "--variant", "rewrite",
               "--condition", "direct", "--out", str(out), "--phase", "agent", "--classes", "chemistry"])
    assert rc == 0
    agent = read_phase(out, "agent")
    assert len(agent) == 100 and all(r["final_prompt"].startswith("rewritten") for r in agent.values())


def test_category_against_the_authors_id_ranges(tmp_path):
    data = rows("verified")
    data[800]["Category"] = "Biology"  # prompt_id 801 is physics by Verified's id ranges (761-880)
    del data[0]["Category"]  # no Category: the id range decides
    (tmp_path / "natural_science_verified.json").write_text(json.dumps(data))
    items = {i.id: i for i in load_benchmark("wise", tmp_path / "natural_science_verified.json")}
    # the authors' calculators count 801 in physics; the data's string is kept and the mismatch noted
    assert items["wise_801"].category == "physics" and items["wise_801"].raw_category == "Biology"
    assert "count prompt_id 801 as physics" in items["wise_801"].issues[0]
    assert items["wise_1"].category == "cultural" and not items["wise_1"].issues
    assert sum(bool(i.issues) for i in items.values()) == 1
