"""The shared chat protocol with the scripted backend: structured-output retry, the typed error,
the deterministic-call cache and the concurrency limit."""

from __future__ import annotations

import asyncio
import json

import pytest
from PIL import Image
from pydantic import BaseModel

from orig_local.llm import (
    ChatConfig,
    StructuredOutputError,
    make_chat_model,
    user,
)
from orig_local.llm.base import SCHEMA_NOTE, with_schema_instruction


class Plan(BaseModel):
    queries: list[str]
    done: bool


GOOD = json.dumps({"queries": ["eiffel tower 1889"], "done": False})


def scripted(replies, cache_dir=None, **kw):
    return make_chat_model(ChatConfig(backend="scripted", model="scripted", **kw), cache_dir=cache_dir,
                           replies=replies)


async def test_invalid_then_valid_json_is_retried_within_the_bound():
    model = scripted(["Sure! Here is the plan: queries=eiffel", '{"queries": "not a list", "done": false}', GOOD])
    reply = await model.chat([user("plan")], schema=Plan)
    assert reply.parsed == Plan(queries=["eiffel tower 1889"], done=False)
    assert reply.attempts == 3 and len(reply.invalid_replies) == 2
    assert len(model.requests) == 3
    # each retry carries the previous reply and the validation error
    retry = model.requests[2]["messages"]
    assert retry[-2].role == "assistant" and retry[-2].text.startswith('{"queries": "not a list"')
    assert "queries" in retry[-1].text and "could not be used" in retry[-1].text


async def test_fenced_json_is_accepted():
    model = scripted([f"```json\n{GOOD}\n```"])
    assert (await model.chat([user("plan")], schema=Plan)).parsed.queries == ["eiffel tower 1889"]


async def test_always_invalid_raises_typed_error_with_raw_texts():
    model = scripted(["nope", "still nope", "never"], schema_retries=2)
    with pytest.raises(StructuredOutputError) as info:
        await model.chat([user("plan")], schema=Plan)
    err = info.value
    assert err.raw_texts == ["nope", "still nope", "never"]
    assert err.schema == "Plan" and len(err.errors) == 3
    assert err.usage.completion_tokens > 0 and len(model.requests) == 3  # bounded: 1 + 2 retries


async def test_zero_schema_retries_means_one_attempt():
    model = scripted(["nope", GOOD], schema_retries=0)
    with pytest.raises(StructuredOutputError):
        await model.chat([user("plan")], schema=Plan)
    assert len(model.requests) == 1


def test_schema_instruction_goes_on_the_last_user_turn():
    messages = [user("first"), user("second")]
    out = with_schema_instruction(messages, Plan)
    assert out[0] is messages[0] and out[1].text.startswith("second")
    assert json.dumps(Plan.model_json_schema()) in out[1].text
    assert SCHEMA_NOTE.split("{")[0].strip() in out[1].text
    assert messages[1].text == "second"  # input untouched


async def test_cache_hit_on_repeat_and_same_picture_from_file(tmp_path):
    image = Image.new("RGB", (32, 32), (1, 2, 3))
    path = tmp_path / "a.png"
    image.save(path)
    model = scripted([GOOD], cache_dir=tmp_path)
    first = await model.chat([user(image, "plan")], schema=Plan)
    second = await model.chat([user(path, "plan")], schema=Plan)  # same pixels, from disk
    assert not first.cached and second.cached and second.parsed == first.parsed
    assert len(model.requests) == 1
    # a different picture, schema or decoding parameter is a different request
    other = scripted([GOOD, GOOD, GOOD], cache_dir=tmp_path)
    await other.chat([user(Image.new("RGB", (32, 32), (9, 9, 9)), "plan")], schema=Plan)
    await other.chat([user(image, "plan")])
    await other.chat([user(image, "plan")], schema=Plan, max_tokens=7)
    assert len(other.requests) == 3


async def test_sampling_bypasses_the_cache(tmp_path):
    model = scripted(["a", "b"], cache_dir=tmp_path)
    a = await model.chat([user("x")], temperature=0.7)
    b = await model.chat([user("x")], temperature=0.7)
    assert (a.text, b.text, a.cached, b.cached) == ("a", "b", False, False)


async def test_cache_off_by_config(tmp_path):
    model = scripted(["a", "b"], cache_dir=tmp_path, cache=False)
    await model.chat([user("x")])
    assert (await model.chat([user("x")])).text == "b"


async def test_concurrency_limit():
    in_flight = peak = 0

    model = make_chat_model(ChatConfig(backend="scripted", model="s", concurrency=3), replies=["ok"],
                            cycle=True, latency_s=0.05)
    original = model._complete

    async def counting(*args, **kwargs):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await original(*args, **kwargs)
        finally:
            in_flight -= 1

    model._complete = counting
    await asyncio.gather(*[model.chat([user(f"q{i}")]) for i in range(10)])
    assert peak == 3 and model.calls == 10
