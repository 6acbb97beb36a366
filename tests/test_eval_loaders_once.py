"""`orig eval` reads its benchmark once, however many classes it selects: every data file is
opened exactly once by ``_load_items`` (items, each class's check and the run's binding are
selections from that one read), and what it selects and binds is what the loaders gave before."""

from __future__ import annotations

import builtins
import io
import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from _wise_release import make_repo

from orig_local.cli.eval_cmd import _load_items
from orig_local.errors import DataError, UsageError
from orig_local.evaluation.data import mini_path
from orig_local.evaluation.identity import benchmark_identity
from orig_local.evaluation.loaders import (
    benchmark_source,
    load_benchmark,
    read_benchmark,
    select_benchmark,
)
from orig_local.evaluation.loaders.wise import PROTOCOLS


def _ev(benchmark, data, classes=None, include_others=False, **extra):
    return SimpleNamespace(benchmark=benchmark, data=str(data), classes=classes, include_others=include_others,
                           variant=extra.get("variant", "base"), wise_judge=extra.get("wise_judge"))


def _opens(monkeypatch, root: Path) -> Counter:
    """Counts every open of a file under ``root`` (pathlib, open() and zipfile all go through
    io.open): the loaders' reads, whatever function does them."""
    counts: Counter = Counter()
    real = io.open
    root = root.resolve()

    def counting(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file).resolve().is_relative_to(root):
            counts[Path(file).resolve().relative_to(root).as_posix()] += 1
        return real(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting)
    monkeypatch.setattr(builtins, "open", counting)
    return counts


def _flat_figeval(root: Path) -> Path:
    """Four classes: two paper classes, 'sport' spelled as prompts.jsonl spells it, the
    'others' prompts, and a listed class without a question file."""
    rows = [("animal_0", "animal"), ("sports_0", "sport"), ("animal_1", "animal"), ("others_0", "others"),
            ("people_0", "people")]
    root.mkdir(parents=True)
    (root / "prompts.jsonl").write_text("".join(json.dumps({"id": i, "category": c, "prompt_en": f"prompt {i}"}) + "\n"
                                                for i, c in rows), encoding="utf-8")
    for cat in ("animal", "sports", "others"):
        entries = {i: {"prompt_en": "", "txt_reference": f"a fact of {i}",
                       "questions": {"question_1": {"content": f"True or False: {i}", "img_path": None,
                                                    "modal": "T", "class_id": 1}}}
                   for i, _ in rows if i.startswith(cat)}
        (root / f"{cat}_grouped.json").write_text(json.dumps(entries), encoding="utf-8")
    return root


def _ihalla(root: Path) -> Path:
    pytest.importorskip("openpyxl")
    from test_eval_ihalla import make_release

    return make_release(root)


def _old_identity(ev) -> dict:
    """The binding as `orig eval` computed it before (a load with every class, the loader's
    source read apart, WISE loaded again with every protocol): the single read must match it,
    or every run folder started earlier would refuse to resume."""
    from orig_local.evaluation.loaders import benchmark_options

    options = benchmark_options(ev)
    every = load_benchmark(ev.benchmark, ev.data, include_others=True, **options)
    bound = (load_benchmark(ev.benchmark, ev.data, include_others=True, **{**options, "protocols": list(PROTOCOLS)})
             if "protocols" in options else every)
    return benchmark_identity(ev.benchmark, str(Path(ev.data).resolve()), every,
                              source=benchmark_source(ev.benchmark, ev.data, **options), bound_items=bound)


@pytest.mark.parametrize("benchmark", ["figeval", "jsonl", "wise", "ihalla"])
def test_eval_reads_each_data_file_once_with_several_classes(benchmark, tmp_path, monkeypatch):
    if benchmark == "figeval":
        data, root, classes, n = _flat_figeval(tmp_path / "fe"), tmp_path / "fe", ["sport", "animal", "others"], 4
        files = {"prompts.jsonl", "animal_grouped.json", "sports_grouped.json", "others_grouped.json"}
        extra = {}
    elif benchmark == "jsonl":
        data = root = mini_path()
        data, root, classes, n, extra = data, Path(data).parent, ["animal", "sport"], 2, {}
        files = {"mini.jsonl"}
    elif benchmark == "wise":  # one protocol judged: the binding still covers every protocol's questions
        data = root = make_repo(tmp_path / "wise")
        classes, n, extra = ["time", "biology", "physics"], 360, {"wise_judge": ["verified"]}
        files = {f"data_verified/{s}_verified.json" for s in
                 ("cultural_common_sense", "spatio-temporal_reasoning", "natural_science")}
    else:
        data = root = _ihalla(tmp_path / "ihalla")
        classes, n, extra = ["history", "Science"], 6, {}
        files = {"GPT4o_QA_history_mod_cois.xlsx", "GPT4o_QA_science_mod_cois.xlsx", "captions.xlsx"}
    ev = _ev(benchmark, data, classes, **extra)
    expected = _old_identity(ev)
    counts = _opens(monkeypatch, Path(root))
    items, identity = _load_items(ev)
    monkeypatch.undo()
    assert dict(counts) == {f: 1 for f in files}, "each benchmark file read exactly once"
    assert len(items) == n
    assert identity == expected


def test_shared_figeval_read_once_and_bound_as_before(shared_data, monkeypatch):
    data = shared_data / "figeval"
    counts = _opens(monkeypatch, data)
    items, identity = _load_items(_ev("figeval", data, ["sport", "sports"], include_others=True))
    monkeypatch.undo()
    assert dict(counts) == {"prompts.jsonl": 1, "sports_grouped.json": 1}
    assert [i.id for i in items] == [f"sports_{k}" for k in range(52)]
    # the binding recorded by runs started before the single read (sha256 of ids, prompts, questions)
    assert identity["items"] == 52
    assert identity["sha256"] == "1031af64c976587157ea8da59735645f4e644665c4110bdb9349adcc95e7848e"


def test_shared_figeval_selection(shared_data):
    every = read_benchmark("figeval", shared_data / "figeval").items
    assert len(every) == 52  # only sports has its question file in the sample; 'others' has none
    for classes in (None, ["sport"], ["sports"], ["SPORT"]):
        assert select_benchmark("figeval", every, classes) == load_benchmark("figeval", shared_data / "figeval",
                                                                             classes=classes)
        assert len(select_benchmark("figeval", every, classes)) == 52
    assert select_benchmark("figeval", every, ["animal"]) == []


def test_figeval_selection_of_classes_and_others(tmp_path):
    every = read_benchmark("figeval", _flat_figeval(tmp_path / "fe")).items
    ids = lambda classes, others=False: [i.id for i in select_benchmark("figeval", every, classes, others)]  # noqa: E731
    assert ids(None) == ["animal_0", "sports_0", "animal_1"]  # file order; 'others' left out
    assert ids(None, True) == ["animal_0", "sports_0", "animal_1", "others_0"]
    assert ids(["others"]) == ["others_0"]  # a listed class is taken without --include-others
    assert ids(["Animal", "sport"]) == ["animal_0", "sports_0", "animal_1"]
    assert ids(["people"]) == []  # listed in prompts.jsonl, no question file


def test_wise_and_ihalla_selection(tmp_path):
    wise = read_benchmark("wise", make_repo(tmp_path / "wise")).items
    science = select_benchmark("wise", wise, ["natural science"])
    assert Counter(i.category for i in science) == {"biology": 120, "physics": 120, "chemistry": 120}
    assert [i.id for i in select_benchmark("wise", wise, ["Cultural knowledge"])] == [f"wise_{k}" for k in range(1, 401)]
    halla = read_benchmark("ihalla", _ihalla(tmp_path / "ihalla")).items
    assert [i.id for i in select_benchmark("ihalla", halla, ["SCIENCE"])] == [f"ihalla_science_{k}" for k in (1, 2, 3)]


@pytest.mark.parametrize("benchmark", ["figeval", "jsonl", "ihalla"])
def test_a_class_that_selects_nothing_is_named(benchmark, tmp_path):
    data = {"figeval": lambda: _flat_figeval(tmp_path / "fe"), "jsonl": mini_path,
            "ihalla": lambda: _ihalla(tmp_path / "ihalla")}[benchmark]()
    real = {"figeval": "sport", "jsonl": "animal", "ihalla": "history"}[benchmark]
    with pytest.raises(UsageError, match=r"^unknown class\(es\) nope, people$|^unknown class\(es\) nope$") as err:
        _load_items(_ev(benchmark, data, [real, "nope"] + (["people"] if benchmark == "figeval" else [])))
    assert err.value.hint.startswith("valid classes: ")
    assert real.rstrip("t") in err.value.hint  # 'sport' is listed as the loader names it, 'sports'


def test_wise_unknown_class_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="WISE has no class 'nope'"):
        _load_items(_ev("wise", make_repo(tmp_path / "wise"), ["time", "nope"]))
