"""Reference-conditioned generators over the tiny Qwen-Image-Edit pipelines.

The edit pipelines always VAE-encode each reference at ~1 MP (a hard-coded size in diffusers),
which costs a few seconds per reference on a CPU even for the tiny VAE, so these tests make as
few calls as possible (one step, CFG off) and spy on what reaches the pipeline call.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tiny_model
from PIL import Image


def gen_for(preset: str, tiny: str, **config):
    from orig_local.generation import GeneratorConfig, make_generator

    tiny_model(tiny)
    return make_generator(GeneratorConfig(preset=preset, device="cpu", **config))


def refs(n: int, size=(48, 32)):
    colours = ["red", "green", "blue", "yellow", "purple"]
    return [Image.new("RGB", size, colours[i]) for i in range(n)]


def spy_pipeline_calls(monkeypatch, cls, run=True):
    """Record every call's kwargs on pipeline class ``cls``; ``run=False`` skips the model and
    returns a blank image of the asked size (for tests about arguments only)."""
    calls: list[dict] = []
    original = cls.__call__

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        if run:
            return original(self, *args, **kwargs)
        from types import SimpleNamespace

        return SimpleNamespace(images=[Image.new("RGB", (kwargs["width"], kwargs["height"]))])

    monkeypatch.setattr(cls, "__call__", spy)
    return calls


def test_edit_2509_gets_all_references(monkeypatch):
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-qwen-image-edit-2509", "qwen_image_edit_plus")
    assert gen.max_references == 3
    calls = spy_pipeline_calls(monkeypatch, type(gen.pipeline))
    given = refs(3)
    result = gen.generate(GenerationRequest("the three flags side by side", references=given, seed=0,
                                            steps=1, guidance=1.0))
    sent = calls[0]["image"]
    assert isinstance(sent, list) and len(sent) == 3
    assert [im.getpixel((0, 0)) for im in sent] == [im.getpixel((0, 0)) for im in given]  # order kept
    assert result.references_used == 3 and result.notes == []
    assert result.image.size == (64, 64)


def test_edit_2509_caps_at_its_limit(monkeypatch):
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-qwen-image-edit-2509", "qwen_image_edit_plus")
    calls = spy_pipeline_calls(monkeypatch, type(gen.pipeline), run=False)
    result = gen.generate(GenerationRequest("x", references=refs(5)))
    assert len(calls[0]["image"]) == 3 and result.references_used == 3
    assert "kept the first 3 of 5" in result.notes[0]
    # collage: first two as they are, references 3-5 packed into the third slot
    gen = gen_for("tiny-qwen-image-edit-2509", "qwen_image_edit_plus", reference_strategy="collage")
    calls = spy_pipeline_calls(monkeypatch, type(gen.pipeline), run=False)
    result = gen.generate(GenerationRequest("x", references=refs(5)))
    sent = calls[0]["image"]
    assert [im.size for im in sent] == [(48, 32), (48, 32), (144, 32)]
    assert result.references_used == 5 and "collage" in result.notes[0]


def test_single_reference_edit_model(monkeypatch):
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-qwen-image-edit", "qwen_image_edit", reference_strategy="collage")
    assert gen.max_references == 1
    calls = spy_pipeline_calls(monkeypatch, type(gen.pipeline))
    result = gen.generate(GenerationRequest("x", references=refs(2), steps=1, guidance=1.0))
    sent = calls[0]["image"]
    assert sent.size == (96, 32)  # one image: both references side by side
    assert np.asarray(sent)[0, 0].tolist() == [255, 0, 0] and np.asarray(sent)[0, 95].tolist() == [0, 128, 0]
    assert result.references_used == 2 and result.image.size == (64, 64)


def test_config_can_lower_the_reference_limit():
    gen = gen_for("tiny-qwen-image-edit-2509", "qwen_image_edit_plus", max_references=2)
    assert gen.max_references == 2


@pytest.mark.slow
def test_edit_2509_references_change_the_image():
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-qwen-image-edit-2509", "qwen_image_edit_plus")
    one = gen.generate(GenerationRequest("x", references=refs(1), steps=1, guidance=1.0, seed=0))
    two = gen.generate(GenerationRequest("x", references=refs(2), steps=1, guidance=1.0, seed=0))
    assert not np.array_equal(np.asarray(one.image), np.asarray(two.image))


def test_edit_model_without_references_gets_a_blank_canvas(monkeypatch):
    """A Direct run with an edit preset must not crash: the pipeline needs an input image, so
    it gets a white canvas of the requested size and the result says so."""
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-qwen-image-edit-2509", "qwen_image_edit_plus")
    calls = spy_pipeline_calls(monkeypatch, type(gen.pipeline), run=False)
    result = gen.generate(GenerationRequest("a lighthouse", references=[], seed=0, steps=1, guidance=1.0))
    sent = calls[0]["image"]
    assert len(sent) == 1 and sent[0].size == (64, 64) and sent[0].getpixel((0, 0)) == (255, 255, 255)
    assert result.references_used == 0
    assert any("blank white" in n for n in result.notes)
