"""The I-HallA loader on spreadsheets laid out like kaist-cvml/I-HallA-v1.0's data/ folder."""

import asyncio
import json

import pytest

openpyxl = pytest.importorskip("openpyxl")

from _eval_fakes import solid  # noqa: E402

from orig_local.errors import DataError  # noqa: E402
from orig_local.evaluation.judge import Judge  # noqa: E402
from orig_local.evaluation.loaders import benchmark_source, load_benchmark  # noqa: E402
from orig_local.evaluation.loaders.ihalla import answer_letter, parse_choices  # noqa: E402
from orig_local.evaluation.scoring import prompt_score  # noqa: E402
from orig_local.llm.config import ChatConfig  # noqa: E402
from orig_local.llm.scripted import ScriptedChatModel  # noqa: E402

ANSWER_FORMS = ["A", "B) Hydrogen atoms", "(C)", "d", "B"]  # first character = the letter, plus "(C)"
LETTERS = ["A", "B", "C", "D", "B"]


def _choices(domain: str, idx: int, k: int) -> str:
    return "\n".join(f"{c}) {domain} option {c.lower()} {idx}.{k}" for c in "ABCD")


def make_release(folder, n_prompts=3, domains=("history", "science"), start=1):
    """GPT4o_QA_<domain>_mod_cois.xlsx (Sheet1: data_index, cois, question, choices, answer;
    5 questions per prompt) and captions.xlsx (a sheet per domain: index, caption)."""
    folder.mkdir(parents=True, exist_ok=True)
    caps = openpyxl.Workbook()
    caps.remove(caps.active)
    for domain in domains:
        wb = openpyxl.Workbook()
        ws = wb.active
        ws.title = "Sheet1"
        ws.append(["data_index", "cois", "question", "choices", "answer"])
        cs = caps.create_sheet(domain)
        cs.append(["index", "caption"])
        for idx in range(start, start + n_prompts):
            cs.append([idx, f"A {domain} caption number {idx}"])
            for k in range(5):
                ws.append([idx, "Existence", f"{domain} question {idx}.{k}?", _choices(domain, idx, k), ANSWER_FORMS[k]])
        wb.save(folder / f"GPT4o_QA_{domain}_mod_cois.xlsx")
    caps.save(folder / "captions.xlsx")
    return folder


def test_release_folder_loads_both_domains_with_namespaced_ids(tmp_path):
    data = make_release(tmp_path / "data")
    items = load_benchmark("ihalla", data)
    assert len(items) == 6
    ids = {i.id for i in items}
    assert ids == {f"ihalla_{d}_{n}" for d in ("history", "science") for n in (1, 2, 3)}  # no collision
    h2 = {i.id: i for i in items}["ihalla_history_2"]
    assert h2.prompt == "A history caption number 2" and h2.category == "history"
    assert len(h2.questions) == 5 and h2.questions[0].text == "history question 2.0?"
    # the choices string is parsed into options, plus the official "None of the above" (E)
    assert h2.questions[1].choices == [f"history option {c} 2.1" for c in "abcd"] + ["None of the above"]
    assert [q.answer for q in h2.questions] == LETTERS
    assert not h2.issues
    # the repository root (data/ inside) and one spreadsheet work too
    assert len(load_benchmark("ihalla", tmp_path)) == 6
    one = load_benchmark("ihalla", data / "GPT4o_QA_science_mod_cois.xlsx")
    assert {i.category for i in one} == {"science"} and len(one) == 3
    assert [i.category for i in load_benchmark("ihalla", data, classes=["History"])] == ["history"] * 3


def test_source_lists_the_files_read_with_hashes(tmp_path):
    import hashlib

    data = make_release(tmp_path / "data")
    src = benchmark_source("ihalla", data)
    assert set(src["files"]) == {"GPT4o_QA_history_mod_cois.xlsx", "GPT4o_QA_science_mod_cois.xlsx", "captions.xlsx"}
    assert src["files"]["captions.xlsx"] == hashlib.sha256((data / "captions.xlsx").read_bytes()).hexdigest()


def test_missing_captions_or_caption_row_is_an_error(tmp_path):
    data = make_release(tmp_path / "data")
    wb = openpyxl.load_workbook(data / "captions.xlsx")
    wb["science"].delete_rows(3)  # the caption of science prompt 2
    wb.save(data / "captions.xlsx")
    with pytest.raises(DataError, match="prompt 2 has no caption"):
        load_benchmark("ihalla", data)
    (data / "captions.xlsx").unlink()
    with pytest.raises(DataError, match="captions.xlsx"):
        load_benchmark("ihalla", data)


def test_xlsx_bytes_never_raise_a_raw_unicode_error(tmp_path):
    data = make_release(tmp_path / "data")
    fake = tmp_path / "qa.json"
    fake.write_bytes((data / "captions.xlsx").read_bytes())  # a spreadsheet under a JSON name
    with pytest.raises(DataError, match="not UTF-8"):
        load_benchmark("ihalla", fake)
    broken = tmp_path / "b" / "GPT4o_QA_history_mod_cois.xlsx"
    broken.parent.mkdir()
    broken.write_bytes(b"\xff\xfe not a zip")
    with pytest.raises(DataError, match="not a readable .xlsx"):
        load_benchmark("ihalla", broken)


@pytest.mark.parametrize("text,expected", [
    ("A) Carbon atom\nB) Hydrogen atom\nC) Oxygen atom\nD) Nitrogen atom",
     ["Carbon atom", "Hydrogen atom", "Oxygen atom", "Nitrogen atom"]),
    ("A) Yes B) No C) The image does not show any name. D) Most states share the same name",
     ["Yes", "No", "The image does not show any name.", "Most states share the same name"]),
    ("(A) 1 (B) 2 (C) 3 (D) 4", ["1", "2", "3", "4"]),
    ("A. U.S. flag\nB. A map of the U.S.", ["U.S. flag", "A map of the U.S."]),
])
def test_choice_strings_parse_into_options(text, expected):
    assert parse_choices(text) == expected


@pytest.mark.parametrize("text", ["Carbon, Hydrogen, Oxygen", "B) only B\nC) and C", "A) lonely", ""])
def test_a_choice_string_is_never_split_into_characters(text):
    with pytest.raises(DataError, match="options"):
        parse_choices(text)


@pytest.mark.parametrize("answer,letter", [("B", "B"), ("b", "B"), ("B) Hydrogen atom", "B"), ("(B)", "B"),
                                           ("B.", "B"), (" (d) Nitrogen", "D"), (1, "B"), ("Oxygen atom", "C")])
def test_answer_forms(answer, letter):
    assert answer_letter(answer, ["Carbon atom", "Hydrogen atom", "Oxygen atom", "Nitrogen atom"], "t") == letter


def test_answer_outside_the_options_is_an_error():
    with pytest.raises(DataError, match="not one of the options"):
        answer_letter("F", ["a", "b", "c", "d"], "t")


def test_json_rows_still_work_and_accept_a_choice_string(tmp_path):
    rows = [{"id": 1, "prompt": "Newton under a tree", "category": "science",
             "questions": [{"question": "What falls?", "choices": "A) apple\nB) pear", "answer": "A) apple"}]},
            {"id": 1, "prompt": "Caesar", "category": "history",
             "questions": [{"question": "Who?", "choices": ["Brutus", "Cato"], "answer": 1}]}]
    (tmp_path / "ih.json").write_text(json.dumps(rows))
    items = load_benchmark("ihalla", tmp_path / "ih.json")
    assert [i.id for i in items] == ["ihalla_science_1", "ihalla_history_1"]
    assert items[0].questions[0].choices == ["apple", "pear", "None of the above"]
    assert [q.answer for i in items for q in i.questions] == ["A", "B"]


def test_judge_answers_one_of_five_letters_and_scores_like_the_official_code(tmp_path):
    """The judge may pick E (None of the above); only the answer's letter counts as correct."""
    item = load_benchmark("ihalla", make_release(tmp_path / "data", n_prompts=1, domains=("science",)))[0]
    replies = iter(["A", "E", "C", "A", "B"])  # right, wrong (E), right, wrong, right
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="s"),
                             replies=[lambda m, s: f'"{next(replies)}"'], cycle=True)
    judge = Judge(chat, name="s", answer_format="text", choice_rule="labelled")  # quoted letters: ours reads them
    verdicts = [asyncio.run(judge.judge_question(q, solid("red"))) for q in item.questions]
    assert [v.answer for v in verdicts] == ["A", "E", "C", "A", "B"]
    assert [v.correct for v in verdicts] == [True, False, True, False, True]
    assert prompt_score(item.id, item.category, [(None, v.correct) for v in verdicts]).s == pytest.approx(3 / 5)
    shown = chat.requests[1]["messages"][-1].text
    assert "E. None of the above" in shown and "science option a 1.1" in shown


@pytest.mark.parametrize("text,expected", [
    # options start at line starts: a letter inside an option's text is not a new option
    ("A) Vitamin B: thiamine\nB) Vitamin C: ascorbic acid\nC) D. melanogaster\nD) E. coli",
     ["Vitamin B: thiamine", "Vitamin C: ascorbic acid", "D. melanogaster", "E. coli"]),
    ("a) lower case\nb) markers\nc) too", ["lower case", "markers", "too"]),
    ("A) one\nB) two\n-", ["one", "two"]),  # a leftover "-" line
    ("A) an option written\nover two lines\nB) two", ["an option written over two lines", "two"]),
    ("A) Vitamin B: thiamine B) Vitamin C", ["Vitamin B: thiamine", "Vitamin C"]),  # one line: B) only
])
def test_options_start_at_line_starts(text, expected):
    assert parse_choices(text) == expected


def test_none_of_the_above_already_present_and_an_answer_e(tmp_path):
    from orig_local.evaluation.loaders.ihalla import with_none_option

    listed = with_none_option(parse_choices("A) x\nB) y\nC) z\nD) None of the above"))
    assert listed == ["x", "y", "z", "None of the above"]  # not offered twice
    assert answer_letter("E) None of the above", listed, "t") == "D"  # the option it names
    added = with_none_option(parse_choices("A) x\nB) y\nC) z\nD) w"))
    assert answer_letter("E) None of the above", added, "t") == "E"
    rows = [{"id": 1, "prompt": "p", "category": "science",
             "questions": [{"question": "q?", "choices": "A) x\nB) y\nC) z\nD) w", "answer": "E) None of the above"}]}]
    (tmp_path / "ih.json").write_text(json.dumps(rows))
    assert load_benchmark("ihalla", tmp_path / "ih.json")[0].questions[0].answer == "E"


def _judged(replies, rule=None):
    item = _one_item()
    it = iter(replies)
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="s"), replies=[lambda m, s: next(it)], cycle=True)
    kw = {"choice_rule": rule} if rule else {}
    judge = Judge(chat, name="s", answer_format="text", **kw)
    return [asyncio.run(judge.judge_question(item.questions[1], solid("red"))) for _ in replies]


def _one_item():
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp()) / "data"
    return load_benchmark("ihalla", make_release(folder, n_prompts=1, domains=("science",)))[0]


def test_the_official_first_character_rule_is_the_default_for_free_text_replies():
    # question q2's answer is B) ...: the official scorer reads only the first character
    replies = ["B", "B) Hydrogen", "(B)", "Answer: B", "None of the above", "b", "  B because"]
    got = _judged(replies)
    assert [v.correct for v in got] == [True, True, False, False, False, False, True]
    assert all(v.error is None for v in got)  # every reply is scored, none dropped from the denominator
    assert {v.rule for v in got} == {"first_character"}
    ours = _judged(replies, rule="labelled")
    assert [v.correct for v in ours[:3]] == [True, True, True] and ours[3].error and ours[4].error


def test_the_report_says_which_rule_scored_the_run(tmp_path):
    from types import SimpleNamespace

    from orig_local.evaluation.report import choice_rule_note
    from orig_local.evaluation.rows import JudgeRow

    row = JudgeRow(id="x", verdicts=[{"qid": "q1", "rule": "first_character"}])
    run = SimpleNamespace(label="r", judge_rows={"x": row})
    assert "official I-HallA rule" in choice_rule_note([run])
    plain = JudgeRow(id="x", verdicts=[{"qid": "q1"}])
    assert choice_rule_note([SimpleNamespace(label="f", judge_rows={"x": plain})]) == ""
