"""The judge: strict verdict parsing, labelled images, errors recorded (never defaulted)."""

import pytest
from _eval_fakes import scripted_judge, solid

from orig_local.evaluation.items import BenchmarkItem, GoldFact, Question
from orig_local.evaluation.judge import parse_choice, parse_verdict, soft_true, statement_of


@pytest.mark.parametrize("reply,expected", [
    ("true", True), ("False", False), (" TRUE. ", True), ('"false"', False), ("`true`", True),
    ('{"answer": true}', True), ("False — it is not true", None), ("False, it is not true", None),
    ("The answer is true", None), ("true false", None), ("yes", None), ("", None), ("Truely", None),
    ('{"answer": "true"}', None), ('{"answer": true, "why": "x"}', None),
])
def test_parse_verdict_is_strict(reply, expected):
    assert parse_verdict(reply) is expected


def test_substring_true_is_never_true():
    # the authors' prototype counted this as True ("True" appears in it)
    assert parse_verdict("False — it is not true") is not True


def test_parse_choice_and_statement():
    assert parse_choice("B", "ABC") == "B" and parse_choice("(c).", "ABC") == "C"
    assert parse_choice("B or C", "ABC") is None and parse_choice("D", "ABC") is None
    # an option written with its label, as I-HallA lists them (the official scorer reads the
    # first character); an unclosed letter is a word, not a label; two options are no answer
    assert parse_choice("B) Hydrogen", "ABC") == "B" and parse_choice("(C) Carbon dioxide", "ABC") == "C"
    assert parse_choice("A cat", "ABC") is None and parse_choice("B) one\nC) two", "ABC") is None
    assert parse_choice("D) elsewhere", "ABC") is None
    assert statement_of("True or False:The cover is red.") == "The cover is red."
    assert statement_of("True or False： a b") == "a b"


def test_soft_true_from_logprobs():
    assert soft_true({"true": -0.1, "false": -2.4, "the": -5.0}) == pytest.approx(0.909, abs=1e-3)
    assert soft_true({"The": -0.1}) is None and soft_true(None) is None


@pytest.fixture
def images(tmp_path):
    red, blue = tmp_path / "red.png", tmp_path / "blue.png"
    solid("red").save(red)
    solid("blue").save(blue)
    return red, blue


def _item(ref):
    return BenchmarkItem(id="x", prompt="p", category="animal", reference_text="The thing is red.", questions=[
        Question(id="q1", text="True or False: the thing is red.", concept="PF"),
        Question(id="q2", text="True or False: it matches the reference.", concept="CC", modality="image",
                 reference_image=str(ref)),
    ])


async def test_text_and_image_questions_see_labelled_images(images):
    red, blue = images
    judge = scripted_judge()
    verdicts = await judge.judge_item(_item(blue), red)
    assert [(v.qid, v.answer, v.correct, v.error) for v in verdicts] == [("q1", True, True, None), ("q2", True, True, None)]
    text_req, image_req = judge.chat.requests
    parts = image_req["messages"][-1].parts
    assert parts[0] == "Generated image:" and parts[2] == "Reference image:"
    assert len(text_req["messages"][-1].images) == 1 and len(image_req["messages"][-1].images) == 2
    # the generated image comes first: blue generated + red reference -> false
    verdicts = await scripted_judge().judge_item(_item(red), blue)
    assert [v.answer for v in verdicts] == [False, False]
    # reference text shown (authors' protocol) and the "True or False:" prefix removed
    body = text_req["messages"][-1].parts[-1]
    assert "The thing is red." in body and "True or False" not in body


async def test_bool_schema_sent_and_invalid_reply_is_an_error_with_raw_text(images):
    red, _ = images
    judge = scripted_judge(reply=lambda m, s: "False — it is not true")
    (v,) = await judge.judge_item(_item(red).model_copy(update={"questions": _item(red).questions[:1]}), red)
    assert judge.chat.requests[0]["schema"].model_json_schema() == {"type": "boolean", "title": "BoolAnswer"} or \
        judge.chat.requests[0]["schema"].model_json_schema()["type"] == "boolean"
    assert v.answer is None and v.correct is None and "StructuredOutputError" in v.error
    assert v.raw[0] == "False — it is not true" and len(v.raw) == 3  # 1 + 2 schema retries


async def test_text_format_strict_parse_error(images):
    red, _ = images
    judge = scripted_judge(answer_format="text", reply=lambda m, s: "False — it is not true")
    q = Question(id="q", text="True or False: x")
    v = await judge.judge_question(q, red)
    assert judge.chat.requests[0]["schema"] is None
    assert v.answer is None and v.correct is None and v.error.startswith("unparseable verdict")
    assert v.raw == ["False — it is not true"]


async def test_object_format(images):
    red, _ = images
    judge = scripted_judge(answer_format="object", reply=lambda m, s: '{"answer": false}')
    v = await judge.judge_question(Question(id="q", text="x"), red)
    assert v.answer is False and v.correct is False and v.error is None


async def test_missing_reference_image_is_an_error_without_a_call(images, tmp_path):
    red, _ = images
    judge = scripted_judge()
    q = Question(id="q", text="x", modality="image", reference_image=str(tmp_path / "nope.png"),
                 reference_image_found=False)
    v = await judge.judge_question(q, red)
    assert v.error.startswith("reference image missing") and v.correct is None
    assert judge.chat.requests == []


async def test_multiple_choice_constrained_to_letters(images):
    red, _ = images
    judge = scripted_judge(reply=lambda m, s: '"B"')
    q = Question(id="q", text="Which?", choices=["apple", "pear"], answer="B")
    v = await judge.judge_question(q, red)
    assert v.answer == "B" and v.correct is True
    schema = judge.chat.requests[0]["schema"].model_json_schema()
    assert schema["enum"] == ["A", "B"]


async def test_fact_judging_for_retrieval_accuracy(images):
    red, blue = images
    judge = scripted_judge(answer_format="text")
    fact = GoldFact(id="1", text="The tower is teal.")
    v = await judge.judge_fact(fact, ["The tower is teal and orange."], [red, blue], max_images=1)
    assert v.answer is True
    msg = judge.chat.requests[0]["messages"][-1]
    assert len(msg.images) == 1 and "The tower is teal and orange." in msg.parts[-1]


async def test_judge_calls_are_cached(images, tmp_path):
    from orig_local.cache import DiskCache

    red, _ = images
    judge = scripted_judge()
    judge.chat.cache = DiskCache(tmp_path / "c.sqlite", "chat")
    q = Question(id="q", text="x")
    first = await judge.judge_question(q, red)
    second = await judge.judge_question(q, red)
    assert not first.cached and second.cached and second.answer is True
    assert len(judge.chat.requests) == 1


# --------------------------------------------------------------------------- end to end, real server


@pytest.mark.timeout(600)
def test_judge_end_to_end_through_openai_server_with_tiny_judge(tiny_judge_server, tmp_path, images):
    """Real HTTP server, real tiny VLM: red -> true, blue -> false, incl. an "image" question."""
    from _eval_fakes import FakeGenerator

    from orig_local.evaluation.judge import Judge
    from orig_local.evaluation.orchestrate import direct_agent
    from orig_local.evaluation.phases.agent import run_agent_phase
    from orig_local.evaluation.phases.generate import run_generate_phase
    from orig_local.evaluation.phases.judge import run_judge_phase
    from orig_local.llm import make_chat_model

    red, blue = images
    items = [
        BenchmarkItem(id="r", prompt="thing red", category="animal", questions=[
            Question(id="q1", text="True or False: the thing is shown.", concept="PF"),
            Question(id="q2", text="True or False: it looks like the reference.", concept="CC",
                     modality="image", reference_image=str(blue))]),
        BenchmarkItem(id="b", prompt="thing blue", category="sports", questions=[
            Question(id="q1", text="True or False: the thing is shown.", concept="PF"),
            Question(id="q2", text="True or False: it looks like the reference.", concept="TC",
                     modality="image", reference_image=str(blue))]),
    ]
    # Blue references for both: red generated + blue reference -> true shows the generated
    # image is the one judged. (The tiny judge says true whenever ANY shown image is red, so
    # a red reference beside a blue output cannot be used with it; the scripted test checks
    # the order and labels of the two images.)
    run = tmp_path / "run"
    run_agent_phase(items, run, direct_agent, progress=False)
    run_generate_phase(items, run, FakeGenerator(), progress=False)  # "... red" -> red image
    # concurrency 1: `transformers serve` batches concurrent requests, and padding changes the
    # tiny model's answers; a real judge on vLLM is run with the default concurrency.
    chat = make_chat_model(tiny_judge_server.chat_config(max_tokens=4, concurrency=1), cache_dir=tmp_path / "cache")
    for fmt in ("text", "bool"):
        judge = Judge(chat, answer_format=fmt, name=f"tiny-{fmt}")
        run_judge_phase(items, run, judge, judge_name=fmt, progress=False, close=fmt == "bool")
        from orig_local.evaluation.rundir import read_phase

        rows = read_phase(run, "judge", fmt)
        assert [v["answer"] for v in rows["r"]["verdicts"]] == [True, True], rows["r"]["verdicts"]
        assert [v["answer"] for v in rows["b"]["verdicts"]] == [False, False], rows["b"]
        assert rows["r"]["score"] == 1.0 and rows["b"]["score"] == 0.0
        assert all(v["raw"] for r in rows.values() for v in r["verdicts"])


def test_one_judge_reused_across_event_loops(images):
    """The judge and retrieval phases each run their own asyncio loop with the same chat model."""
    import asyncio

    red, blue = images
    judge = scripted_judge()
    judge.chat.config.concurrency = 1  # the 2nd question waits on the semaphore
    for _ in range(2):
        verdicts = asyncio.run(judge.judge_item(_item(blue), red))
        assert [v.error for v in verdicts] == [None, None]


async def test_soft_score_recorded_when_server_returns_logprobs(images):
    from orig_local.evaluation.judge import Judge
    from orig_local.llm.base import Completion, Usage
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel

    class WithLogprobs(ScriptedChatModel):
        async def _complete(self, messages, *, schema, temperature, max_tokens, logprobs):
            self.requests.append({"logprobs": logprobs})
            return Completion("false", Usage(10, 1), top_logprobs={"false": -0.2, "true": -1.8})

    red, _ = images
    judge = Judge(WithLogprobs(ChatConfig(backend="scripted")), logprobs=5)
    v = await judge.judge_question(Question(id="q", text="x"), red)
    assert judge.chat.requests[0]["logprobs"] == 5
    assert v.answer is False and v.p_true == pytest.approx(0.168, abs=1e-3)
