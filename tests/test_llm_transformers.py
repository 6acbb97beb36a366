"""The in-process `transformers` chat backend on the tiny models (real processor, template,
generate), and agreement with the server path on the same request."""

from __future__ import annotations

import asyncio
import os

import pytest
from conftest import tiny_model
from PIL import Image
from pydantic import RootModel

from orig_local.llm import ChatConfig, make_chat_model, system, user

pytestmark = pytest.mark.timeout(240)

RED = Image.new("RGB", (64, 64), (230, 20, 20))
BLUE = Image.new("RGB", (64, 64), (20, 20, 230))
QUESTION = "Is the following statement true? The car in the picture is parked."


def _config(name: str, **kw) -> ChatConfig:
    return ChatConfig(backend="transformers", model=str(tiny_model(name)), device="cpu", **kw)


@pytest.fixture(scope="module")
def tiny_qwen():
    model = make_chat_model(_config("qwen2_5_vl", max_tokens=8))
    yield model
    asyncio.run(model.aclose())


@pytest.fixture(scope="module")
def tiny_judge():
    model = make_chat_model(_config("judge", max_tokens=4))
    yield model
    asyncio.run(model.aclose())


async def test_text_and_image_in_process_with_usage(tiny_qwen):
    import torch

    assert tiny_qwen.backend == "transformers" and tiny_qwen.dtype == torch.float32
    with_image = await tiny_qwen.chat([system("Be brief."), user(RED, "Describe the picture.")])
    text_only = await tiny_qwen.chat([system("Be brief."), user("Describe the picture.")])
    assert with_image.text.isprintable() and with_image.text  # printable noise, by construction
    assert 0 < with_image.usage.completion_tokens <= 8
    assert with_image.usage.prompt_tokens > text_only.usage.prompt_tokens + 4  # vision tokens


async def test_same_request_same_tokens_as_the_server(tiny_qwen, tiny_qwen_server):
    """One chat template, one processor: both paths count the same prompt and decode the same."""
    messages = [system("Be brief."), user(RED, "Describe the picture.")]
    local = await tiny_qwen.chat(messages)
    remote_model = make_chat_model(tiny_qwen_server.chat_config(max_tokens=8))
    remote = await remote_model.chat(messages)
    await remote_model.aclose()
    assert local.usage.prompt_tokens == remote.usage.prompt_tokens
    assert local.text == remote.text


async def test_tiny_judge_in_process_with_logprobs_and_schema(tiny_judge):
    red = await tiny_judge.chat([user(RED, QUESTION)], logprobs=3)
    blue = await tiny_judge.chat([system("You check statements about images."), user(BLUE, QUESTION)], logprobs=3)
    assert (red.text, blue.text) == ("true", "false")
    assert max(red.top_logprobs, key=red.top_logprobs.get) == "true"
    assert max(blue.top_logprobs, key=blue.top_logprobs.get) == "false"
    assert all(v <= 0 for v in red.top_logprobs.values()) and len(red.top_logprobs) <= 3
    # schema -> JSON-schema text in the prompt; the bare word is valid JSON for a bool
    typed = await tiny_judge.chat([user(RED, QUESTION)], schema=RootModel[bool])
    assert typed.parsed.root is True and typed.attempts == 1


async def test_one_generate_at_a_time_but_concurrent_callers_all_served(tiny_judge):
    images = [RED, BLUE, RED, BLUE]
    replies = await asyncio.gather(*[tiny_judge.chat([user(im, f"{QUESTION} #{i}")]) for i, im in enumerate(images)])
    assert [r.text for r in replies] == ["true", "false", "true", "false"]


async def test_sampling_is_seeded_and_uncached(tmp_path):
    model = make_chat_model(_config("qwen2_5_vl", max_tokens=6, seed=5), cache_dir=tmp_path)
    a = await model.chat([user("hello")], temperature=1.0)
    b = await model.chat([user("hello")], temperature=1.0)
    greedy = await model.chat([user("hello")])
    again = await model.chat([user("hello")])
    assert not a.cached and not b.cached and model.calls == 3
    assert again.cached and again.text == greedy.text
    await model.aclose()


def test_preset_fills_the_model_folder():
    model = make_chat_model(ChatConfig(backend="transformers", preset="tiny-judge", device="cpu", max_pixels=56 * 56))
    assert model.model_name == str(tiny_model("judge"))
    assert model.processor.image_processor.size["longest_edge"] == 56 * 56
    asyncio.run(model.aclose())


async def test_reply_cut_at_max_tokens_is_marked_like_a_server_does(tiny_judge):
    from orig_local.llm import ReplyTruncatedError

    whole = await tiny_judge.chat([user(RED, QUESTION)])  # "true" + end of sequence within 4 tokens
    assert whole.text == "true" and whole.finish_reason == "stop" and not whole.truncated
    cut = await tiny_judge.chat([user(RED, QUESTION)], max_tokens=1)  # no room for the end token
    assert cut.truncated and cut.usage.completion_tokens == 1

    class Explained(RootModel[dict[str, str]]):
        pass

    with pytest.raises(ReplyTruncatedError, match="max_tokens=1"):
        await tiny_judge.chat([user(BLUE, QUESTION)], schema=Explained, max_tokens=1)


async def test_a_reference_file_is_decoded_once_until_it_changes(tiny_judge, tmp_path, monkeypatch):
    """One prompt sends the same reference picture in several requests: the file is decoded
    once; rewritten (a blue picture where a red one was), it is read again, so the tiny judge,
    which answers by colour, sees the new picture."""
    from PIL import Image as PILImage

    path = tmp_path / "reference.png"
    Image.new("RGB", (1024, 768), (230, 20, 20)).save(path)
    opened = []
    real_open = PILImage.open
    monkeypatch.setattr(PILImage, "open", lambda fp, *a, **k: opened.append(str(fp)) or real_open(fp, *a, **k))
    first = await tiny_judge.chat([user(path, f"{QUESTION} (filter)")])
    second = await tiny_judge.chat([user(path, f"{QUESTION} (refinement)")])
    assert (first.text, second.text) == ("true", "true")
    assert opened.count(str(path)) == 1  # the second request did not read the file
    before = (tiny_judge.images.decodes - 1, tiny_judge.images.hits - 1)

    Image.new("RGB", (1024, 768), (20, 20, 230)).save(path)
    stat = path.stat()  # a rewrite within the clock's tick could keep the mtime: move it on
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    third = await tiny_judge.chat([user(path, f"{QUESTION} (extension)")])
    assert third.text == "false"  # the new picture, not the kept red one
    assert opened.count(str(path)) == 2 and tiny_judge.images.decodes == before[0] + 2
    assert tiny_judge.images.pixels <= tiny_judge.images.max_pixels


def test_decoded_pictures_are_bounded_by_pixels_least_recently_used_out(tmp_path):
    from orig_local.llm.imagecache import DecodedImages

    paths = []
    for i in range(4):
        paths.append(tmp_path / f"{i}.png")
        Image.new("RGB", (1024, 768), (i, i, i)).save(paths[-1])
    files = DecodedImages(max_pixels=3 * 1024 * 768)  # room for three
    for p in paths[:3]:
        files.get(p)
    files.get(paths[0])  # used again: now the most recent
    files.get(paths[3])  # over the bound: the least recently used (1.png) goes
    assert files.pixels == 3 * 1024 * 768 and files.decodes == 4
    assert files.get(paths[0]).getpixel((0, 0)) == (0, 0, 0) and files.decodes == 4  # kept
    files.get(paths[1])
    assert files.decodes == 5  # read again
    huge = DecodedImages(max_pixels=1024 * 768 - 1)  # a picture over the whole bound is never kept
    huge.get(paths[0])
    huge.get(paths[0])
    assert huge.decodes == 2 and huge.pixels == 0
