"""Token counting as Qwen2.5-VL sees a request (orig_local/llm/tokens.py)."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from orig_local.llm.base import system, user
from orig_local.llm.tokens import (
    DEFAULT_MAX_PIXELS,
    EstimateCounter,
    count_request,
    image_tokens,
    load_counter,
    smart_resize,
)


class Chars:
    """A counter with an obvious rule (one token per character), to check the layout."""

    name, exact = "chars", False

    def count(self, text: str) -> int:
        return len(text)


@pytest.mark.parametrize(("w", "h", "expected"), [
    (448, 448, 16 * 16),  # multiples of 28 already: 16x16 patches of 28 px
    (224, 224, 8 * 8),
    (1024, 768, 37 * 27),  # rounded to 1036x756
    (56, 56, 4),  # at min_pixels
])
def test_image_tokens_small_images(w, h, expected):
    assert image_tokens(w, h) == expected


def test_image_tokens_capped_by_max_pixels():
    # A 4000x3000 photo is scaled down until (h/28)(w/28)*784 <= max_pixels.
    n = image_tokens(4000, 3000)
    assert n * 28 * 28 <= DEFAULT_MAX_PIXELS
    assert n > 0.9 * DEFAULT_MAX_PIXELS / 784  # and not far below the cap
    assert image_tokens(2240, 2240, max_pixels=50176) == 64  # the tiny preset's cap: 224x224
    assert image_tokens(4000, 3000, max_pixels=50176) == 9 * 6  # 252x168 keeps 4:3 under the cap
    assert image_tokens(1920, 1080, max_pixels=DEFAULT_MAX_PIXELS) < image_tokens(1920, 1080, max_pixels=10**8)


def test_smart_resize_matches_transformers():
    tf = pytest.importorskip("transformers.models.qwen2_vl.image_processing_qwen2_vl")
    for h, w in [(768, 1024), (1080, 1920), (3000, 4000), (30, 40), (600, 401), (27, 5000)]:
        for max_pixels in (50176, DEFAULT_MAX_PIXELS):
            assert smart_resize(h, w, max_pixels=max_pixels) == tf.smart_resize(h, w, max_pixels=max_pixels)


def test_smart_resize_rejects_bad_sizes():
    with pytest.raises(ValueError):
        smart_resize(0, 10)
    with pytest.raises(ValueError):
        smart_resize(10, 3000)


def test_request_layout_follows_chat_template():
    c = Chars()
    # default system turn + user turn + generation prompt; 2 specials per turn + 1 for the prompt
    got = count_request([user("abc")], c)
    expected_text = len("system\nYou are a helpful assistant.") + 1 + len("user\nabc") + 1 + len("assistant\n") + 5
    assert got.text == expected_text
    assert got.image == 0 and got.images == 0
    # an explicit system message replaces the default one
    got = count_request([system("S"), user("abc")], c)
    assert got.text == len("system\nS") + 1 + len("user\nabc") + 1 + len("assistant\n") + 5


def test_request_counts_each_image_at_its_size():
    c = Chars()
    a, b = Image.new("RGB", (448, 448)), Image.new("RGB", (224, 224))
    got = count_request([user("look", a, b, "end")], c)
    assert got.images == 2
    assert got.image == (256 + 2) + (64 + 2)
    # text around the images is still counted
    assert got.text == count_request([user("lookend")], c).text
    # a lower pixel cap lowers only the image part
    capped = count_request([user("look", a, b, "end")], c, max_pixels=224 * 224)
    assert capped.image == (64 + 2) * 2 and capped.text == got.text


def test_canonical_trace_messages_with_size_lookup():
    im = Image.new("RGB", (448, 448))
    msg = user("see", im)
    canonical = json.loads(json.dumps([msg.canonical()]))  # as stored in trace.json
    sizes = {p.png_sha256(): (448, 448) for p in msg.images}
    got = count_request(canonical, Chars(), image_size=lambda part: sizes[part["image_sha256"]])
    assert got == count_request([msg], Chars())


def test_unsizable_image_part_is_an_error():
    with pytest.raises(ValueError):
        count_request([{"role": "user", "parts": [{"image_sha256": "x"}]}], Chars())


def test_estimate_is_labelled_and_scales():
    est = EstimateCounter()
    assert not est.exact and est.name.startswith("estimate")
    assert est.count("") == 0
    assert est.count("a" * 400) == 100
    assert est.count("北京天安门") == 5


def test_load_counter_ignores_toy_vocabularies(tmp_path, monkeypatch):
    # The tiny test models' tokenizer.json has a toy vocabulary: it must not pass for Qwen's.
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    from orig_local.paths import tiny_models_dir

    tiny = tiny_models_dir() / "qwen2_5_vl"
    if not (tiny / "tokenizer.json").is_file():
        pytest.skip("tiny qwen2_5_vl not built")
    counter = load_counter(tiny)
    assert str(tiny) not in counter.name and "qwen2_5_vl" not in counter.name  # any source but the toy one


def test_vendor_sdk_ranks_are_qwens(monkeypatch):
    """Offline, with no tokenizer.json cached: the Qwen ranks Alibaba ships in its DashScope SDK
    give the real Qwen2 ids (not an estimate that happens to agree)."""
    from orig_local.llm import tokens

    ranks = tokens._vendor_ranks()
    if ranks is None:
        pytest.skip("the DashScope SDK is not installed (pip install 'orig-local[tokens]')")
    pytest.importorskip("tiktoken")
    monkeypatch.setattr(tokens, "_hf_cache_candidates", lambda: [])
    counter = load_counter()
    assert counter.exact and "dashscope" in counter.name
    assert counter.encoding.encode_ordinary("Hello world") == [9707, 1879]  # Qwen2's ids
    assert counter.count("2025") == 4  # digits one by one
    assert counter.count("北京天安门") < 5  # merged CJK, unlike the estimate's one per character
    assert counter.count("x" * 250_000) > 0  # chunked: no stack overflow on a huge page


def test_real_qwen2_tokenizer_when_cached():
    counter = load_counter()
    if not counter.exact:
        pytest.skip("no official Qwen2.5-VL tokenizer.json in the Hugging Face cache "
                    "(huggingface-cli download Qwen/Qwen2.5-VL-7B-Instruct tokenizer.json)")
    # Known Qwen2 ids: "Hello world" -> [9707, 1879]; a long word splits, digits one by one.
    assert counter.count("Hello world") == 2
    assert counter.count("2025") == 4
    assert counter.count("<|im_start|>") > 1  # special-token text in a prompt is plain text


def test_scripted_backbone_reports_qwen_counts():
    import asyncio

    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel
    from orig_local.llm.tokens import default_counter

    model = ScriptedChatModel(ChatConfig(backend="scripted", model="sim"), replies=["ok"])
    messages = [system("Be brief."), user("What is shown?", Image.new("RGB", (448, 448)))]
    reply = asyncio.run(model.chat(messages))
    expected = count_request(messages, default_counter())
    assert reply.usage.prompt_tokens == expected.total
    assert expected.image == 256 + 2
