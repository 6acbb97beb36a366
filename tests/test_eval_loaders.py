"""Benchmark loaders: the shared FIG-Eval sample, the authors' layout quirks, our JSONL, WISE, I-HallA."""

import json
from collections import Counter

import pytest
from PIL import Image

from orig_local.evaluation.items import summarize
from orig_local.evaluation.loaders import load_benchmark


def test_shared_sports_sample(shared_data):
    items = load_benchmark("figeval", shared_data / "figeval")
    assert len(items) == 52
    assert {i.category for i in items} == {"sports"}
    questions = [q for i in items for q in i.questions]
    assert len(questions) == 391
    assert Counter(q.concept for q in questions) == {"PF": 197, "CC": 148, "TC": 46}
    assert Counter(q.modality for q in questions) == {"text": 262, "image": 129}
    # prompt_en is empty in the grouped file: joined on id with prompts.jsonl, spaces collapsed
    first = items[0]
    assert first.id == "sports_0" and first.prompt.startswith("Generate a group photo")
    assert "  " not in " ".join(i.prompt for i in items)
    # gold facts from the txt_reference lines (no sports_reference.jsonl in the sample)
    assert first.facts[0].text == "In the 2010 World Cup: The champion team is Spain."
    # the reference images are not in shared/: reported, not fatal
    missing = [q for q in questions if q.modality == "image" and not q.reference_image_found]
    assert len(missing) == 129 and any("not found" in m for m in first.issues)


def test_shared_sample_class_filter_accepts_sport_alias(shared_data):
    assert len(load_benchmark("figeval", shared_data / "figeval", classes=["sport"])) == 52
    assert load_benchmark("figeval", shared_data / "figeval", classes=["animal"]) == []


def _authors_repo(root):
    """A miniature of github.com/TyangJN/ORIG's layout with its quirks."""
    (root / "data" / "FIG-Eval").mkdir(parents=True)
    prompts = [
        {"id": "sports_0", "category": "sport", "prompt_zh": "z", "prompt_en": "Two  captains"},
        {"id": "people_0", "category": "people", "prompt_zh": "z", "prompt_en": "Dan Brown in 1993"},
        {"id": "people_1", "category": "people", "prompt_zh": "z", "prompt_en": "Yu Hua reading"},
        {"id": "others_0", "category": "others", "prompt_zh": "z", "prompt_en": "A style mix"},
    ]
    (root / "data" / "FIG-Eval" / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    txt = root / "eval" / "reference" / "txt"
    q = lambda c, m, k, img=None: {"content": f"True or False: fact {c}{m}", "img_path": img, "modal": m, "class_id": k}
    sports = {"sports_0": {"prompt_en": "", "prompt_zh": "", "txt_reference": "Fact one.\nFact two.\n",
                           "questions": {"question_1": q(1, "T", 2), "question_3": q(2, "I", 1, "/reference/img/sports_0_0.png")}}}
    people = {
        "people_0": {"prompt_en": "Dan Brown in 1993", "prompt_zh": "", "txt_reference": "Dark hair.\n",
                     "questions": {"question_10": q(1, "T", 3), "question_2": q(2, "I", 1, "/reference/img/people_0_0.png")}},
        "people_1": {"prompt_en": "", "prompt_zh": "", "txt_reference": "",
                     "questions": {"question_1": q(1, "I", 2, "/reference/img/people_1_0.png")}},
        "others_0": {"prompt_en": "", "prompt_zh": "", "txt_reference": "", "questions": {"question_1": q(1, "T", 1)}},
    }
    for cat, data in (("sports", sports), ("people", people)):
        (txt / cat).mkdir(parents=True)
        (txt / cat / f"{cat}_grouped.json").write_text(json.dumps(data))
    (txt / "backup").mkdir()
    (txt / "backup" / "people_grouped.json").write_text("{}")  # stale copies must be ignored
    ref_rows = [{"Prompt_id": "people_0", "Reference_id": 1, "Text/Image": "T", "Content": "Brown has dark hair.", "Source": "u"},
                {"Prompt_id": "people_0", "Reference_id": 2, "Text/Image": "I", "Content": "Dan Brown", "Source": "v"}]
    (txt / "people" / "people_reference.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ref_rows))
    img = root / "eval" / "reference" / "img"
    img.mkdir(parents=True)
    Image.new("RGB", (4, 4)).save(img / "sports_0_0.png")
    Image.new("RGB", (4, 4)).save(img / "People_0_0.png")  # case differs from img_path
    # people_1_0.png is missing
    return root


def test_authors_layout_quirks(tmp_path):
    root = _authors_repo(tmp_path / "ORIG")
    items = {i.id: i for i in load_benchmark("figeval", root)}
    assert set(items) == {"sports_0", "people_0", "people_1"}  # "others" left out by default
    s = items["sports_0"]
    assert s.category == "sports" and s.prompt == "Two captains"
    assert [q.id for q in s.questions] == ["question_1", "question_3"]  # gap kept
    assert s.questions[1].reference_image_found and s.questions[1].reference_image.endswith("sports_0_0.png")
    p0 = items["people_0"]
    assert [q.id for q in p0.questions] == ["question_2", "question_10"]  # numeric order
    assert p0.questions[0].reference_image.endswith("People_0_0.png")
    assert [f.text for f in p0.facts] == ["Brown has dark hair.", "Dan Brown"]  # reference.jsonl wins
    assert [f.modality for f in p0.facts] == ["text", "image"]
    assert len(p0.reference_images) == 1
    p1 = items["people_1"]
    assert not p1.questions[0].reference_image_found and "not found" in p1.issues[0]
    assert [f.text for f in s.facts] == ["Fact one.", "Fact two."]  # from txt_reference
    # the eval/ folder alone also works, and "others" can be asked for
    assert len(load_benchmark("figeval", root, include_others=True)) == 4
    assert [i.id for i in load_benchmark("figeval", root, classes=["others"])] == ["others_0"]


def test_malformed_question_is_reported_and_skipped(tmp_path):
    qs = {"question_1": {"content": "c", "modal": "T", "class_id": 7},
          "question_2": {"content": "d", "modal": "T", "class_id": "3"}}
    (tmp_path / "x_grouped.json").write_text(json.dumps({"x_0": {"prompt_en": "p", "txt_reference": "", "questions": qs}}))
    (item,) = load_benchmark("figeval", tmp_path, classes=["x"])
    assert [q.id for q in item.questions] == ["question_2"] and item.questions[0].concept == "TC"
    assert "question_1: skipped" in item.issues[0]


def test_grouped_only_id_with_its_own_prompt_is_kept(tmp_path):
    root = _authors_repo(tmp_path / "ORIG")
    path = root / "eval" / "reference" / "txt" / "people" / "people_grouped.json"
    data = json.loads(path.read_text())
    data["people_9"] = {"prompt_en": "Someone", "txt_reference": "", "questions": {
        "question_1": {"content": "True or False: x", "img_path": None, "modal": "T", "class_id": 1}}}
    data["people_8"] = {"prompt_en": "", "txt_reference": "", "questions": {}}
    data["people_37"] = {"prompt_en": "", "txt_reference": "", "questions": {
        "question_1": {"content": "True or False: y", "img_path": None, "modal": "T", "class_id": 2}}}
    path.write_text(json.dumps(data))
    # like event_37: absent from prompts.jsonl, prompt only in the category's prompt list
    (path.parent / "people_prompt.jsonl").write_text(json.dumps(
        {"id": "people_37", "Prompt": "The  laureate", "指令": "z", "category": "people"}) + "\n")
    items = {i.id: i for i in load_benchmark("figeval", root, classes=["people"])}
    assert set(items) == {"people_0", "people_1", "people_9", "people_37"}
    assert "not in prompts.jsonl" in items["people_9"].issues[0]
    assert items["people_37"].prompt == "The laureate" and "people_prompt.jsonl" in items["people_37"].issues[0]


def test_own_jsonl_format_and_roundtrip(tmp_path):
    (tmp_path / "img").mkdir()
    Image.new("RGB", (4, 4)).save(tmp_path / "img" / "a.png")
    rows = [{"id": "a", "prompt": "p", "class": "animal", "reference_text": "L1\nL2",
             "questions": [{"id": "q1", "text": "t", "concept": "PF"},
                           {"id": "q2", "text": "u", "concept": "TC", "modality": "image", "reference_image": "img/a.png"},
                           {"id": "q3", "text": "v", "concept": "CC", "modality": "image", "reference_image": "img/none.png"}]}]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (item,) = load_benchmark("jsonl", tmp_path / "b.jsonl")
    assert item.category == "animal" and [f.text for f in item.facts] == ["L1", "L2"]
    assert item.questions[1].reference_image_found and not item.questions[2].reference_image_found
    assert summarize([item])["concepts"] == {"PF": 1, "TC": 1, "CC": 1}
    from orig_local.evaluation.loaders.jsonl import dump

    dump([item], tmp_path / "copy.jsonl")
    (again,) = load_benchmark("jsonl", tmp_path / "copy.jsonl")
    assert again.questions == item.questions


def test_packaged_mini_benchmark_loads():
    from orig_local.evaluation.data import mini_path

    items = load_benchmark("jsonl", mini_path())
    assert len(items) == 3
    s = summarize(items)
    assert set(s["concepts"]) == {"PF", "CC", "TC"} and s["modalities"]["image"] >= 3
    assert all(q.reference_image_found for i in items for q in i.questions)


def test_wise_and_ihalla(tmp_path):
    wise = [{"prompt_id": 1, "Prompt": "The flower of China", "Explanation": "A peony.",
             "Category": "Cultural knowledge", "Subcategory": "Plants"}]
    (tmp_path / "wise.json").write_text(json.dumps(wise))
    (w,) = load_benchmark("wise", tmp_path / "wise.json")
    assert w.id == "wise_1" and w.category == "cultural" and w.reference_text == "A peony."
    assert [q.id for q in w.questions] == ["wiscore", "verified"]  # WISE's two judges (tests/test_eval_wise*.py)
    ih = [{"id": 3, "prompt": "Newton under a tree", "category": "science",
           "questions": [{"question": "What falls?", "choices": ["apple", "pear"], "answer": "apple"},
                         {"question": "Who?", "choices": ["Newton", "Kepler"], "answer": 1}]}]
    (tmp_path / "ih.json").write_text(json.dumps(ih))
    (h,) = load_benchmark("ihalla", tmp_path / "ih.json")
    assert [q.answer for q in h.questions] == ["A", "B"] and h.questions[0].choices == ["apple", "pear", "None of the above"]


def test_unknown_benchmark_name():
    from orig_local._lazy import UnknownBackendError

    with pytest.raises(UnknownBackendError, match="figeval"):
        load_benchmark("nope", ".")


def test_evaluation_imports_stay_light():
    import subprocess
    import sys

    code = ("import sys, orig_local.evaluation as e\n"
            "from orig_local.evaluation import load_benchmark, summarize\n"
            "import orig_local.evaluation.loaders.figeval, orig_local.evaluation.judge, orig_local.evaluation.orchestrate\n"
            "import orig_local.cli.eval_cmd, orig_local.cli.report_cmd\n"
            "heavy = [m for m in ('torch', 'transformers', 'diffusers', 'matplotlib', 'scipy', 'open_clip') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_every_public_name_resolves():
    import orig_local.evaluation as ev

    for name in ev.__all__:
        assert getattr(ev, name) is not None, name
