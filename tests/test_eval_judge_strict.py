"""The judge accepts only the documented verdict forms (issue 11.6): no bracket stripping, no
last-duplicate-key-wins, no text after a closing code fence — in every answer format."""

import pytest
from _eval_fakes import scripted_judge
from PIL import Image

from orig_local.evaluation.items import Question
from orig_local.evaluation.judge import parse_verdict, strict_json

DOCUMENTED = [
    ("true", True), ("FALSE", False), (" True. ", True), ("false!", False), ('"true"', True),
    ("'false'", False), ("`true`", True), ("**false**", False), ('"true".', True),
    ("true", True), ('{"answer": false}', False), ('{ "answer" : true }', True),
    ("```json\ntrue\n```", True), ("```\n{\"answer\": false}\n```", False), ("```json\nfalse\n```\n", False),
]
REFUSED = [
    "[[[[true]]]]", "[true]", "[false]", "((true))", "<true>", "true..", '""true""',
    '{"answer": true, "answer": false}', '{"answer": false, "answer": false}',
    "```json\nfalse\n```\nActually, true.", "```json\ntrue\n```\n```json\nfalse\n```",
    "Sure! ```json\ntrue\n```", '{"answer": [true]}', "true\ntrue", "true false", "trueish",
]


@pytest.mark.parametrize("reply,expected", DOCUMENTED)
def test_documented_forms_parse(reply, expected):
    assert parse_verdict(reply) is expected


@pytest.mark.parametrize("reply", REFUSED)
def test_everything_else_is_refused(reply):
    assert parse_verdict(reply) is None


def test_strict_json_rejects_duplicate_keys():
    with pytest.raises(ValueError):
        strict_json('{"a": 1, "b": {"c": 1, "c": 2}}')
    assert strict_json('{"a": 1, "b": {"c": 1}}') == {"a": 1, "b": {"c": 1}}


@pytest.mark.parametrize("fmt,reply", [
    ("object", '{"answer": true, "answer": false}'),  # pydantic alone would keep the last key
    ("bool", "```json\nfalse\n```\nActually, true."),  # the chat layer alone would drop the tail
    ("object", '```json\n{"answer": false}\n```\nno wait, true'),
])
async def test_structured_formats_record_lenient_replies_as_errors(tmp_path, fmt, reply):
    red = tmp_path / "red.png"
    Image.new("RGB", (16, 16), (220, 20, 20)).save(red)
    judge = scripted_judge(answer_format=fmt, reply=lambda m, s: reply)
    v = await judge.judge_question(Question(id="q", text="True or False: x"), red)
    assert v.answer is None and v.correct is None, v
    assert v.error and "unparseable verdict" in v.error and v.raw[-1] == reply


@pytest.mark.parametrize("fmt,reply,expected", [
    ("object", '{"answer": true}', True), ("bool", "false", False), ("bool", "```json\ntrue\n```", True),
])
async def test_structured_formats_still_accept_documented_replies(tmp_path, fmt, reply, expected):
    red = tmp_path / "red.png"
    Image.new("RGB", (16, 16), (220, 20, 20)).save(red)
    judge = scripted_judge(answer_format=fmt, reply=lambda m, s: reply)
    v = await judge.judge_question(Question(id="q", text="True or False: x"), red)
    assert v.answer is expected and v.error is None
