"""Generators over the tiny random-weight pipelines, loaded through the same
``from_pretrained`` path (and the same presets mechanism) as the real models."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tiny_model


def gen_for(preset: str, tiny: str, **config):
    from orig_local.generation import GeneratorConfig, make_generator

    tiny_model(tiny)
    return make_generator(GeneratorConfig(preset=preset, device="cpu", **config))


def pixels(result):
    return np.asarray(result.image)


@pytest.fixture(scope="module")
def flux():
    return gen_for("tiny-flux", "flux")


@pytest.fixture(scope="module")
def qwen():
    return gen_for("tiny-qwen-image", "qwen_image")


def test_make_generator_picks_backend_from_preset(flux, qwen):
    from orig_local.generation import Generator

    assert type(flux).__name__ == "FluxGenerator" and flux.max_references == 0
    assert type(qwen).__name__ == "QwenImageGenerator"
    assert isinstance(flux, Generator)


@pytest.mark.parametrize("fixture", ["flux", "qwen"])
def test_seeded_determinism(fixture, request):
    from orig_local.generation import GenerationRequest

    gen = request.getfixturevalue(fixture)
    a = gen.generate(GenerationRequest("a lighthouse at dusk", seed=7))
    b = gen.generate(GenerationRequest("a lighthouse at dusk", seed=7))
    c = gen.generate(GenerationRequest("a lighthouse at dusk", seed=8))
    assert np.array_equal(pixels(a), pixels(b))
    assert not np.array_equal(pixels(a), pixels(c))
    assert a.seed == 7 and a.params["seed"] == 7


@pytest.mark.parametrize("fixture", ["flux", "qwen"])
def test_requested_size_honoured(fixture, request):
    from orig_local.generation import GenerationRequest

    gen = request.getfixturevalue(fixture)
    assert gen.generate(GenerationRequest("x", seed=0)).image.size == (64, 64)  # preset default
    result = gen.generate(GenerationRequest("x", seed=0, width=96, height=48, steps=1))
    assert result.image.size == (96, 48)
    assert (result.params["width"], result.params["height"], result.params["steps"]) == (96, 48, 1)


def test_size_the_model_cannot_make_is_an_error(qwen):
    from orig_local.generation import GenerationRequest

    with pytest.raises(ValueError, match="multiples of 16"):
        qwen.generate(GenerationRequest("x", width=72, height=64))


def test_loaded_once_across_prompts_and_reloaded_after_unload():
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-flux", "flux")
    assert gen.loads == 0  # building the generator loads nothing
    results = gen.generate_batch([GenerationRequest(p, seed=i) for i, p in enumerate(["a", "b", "c"])])
    gen.generate(GenerationRequest("d", seed=3))
    assert gen.loads == 1 and len(results) == 3
    gen.unload()
    assert gen._pipe is None
    gen.generate(GenerationRequest("e"))
    assert gen.loads == 2


def test_text_only_generator_records_ignored_references(flux, caplog):
    from PIL import Image

    from orig_local.generation import GenerationRequest

    refs = [Image.new("RGB", (32, 32), c) for c in ("red", "blue")]
    with caplog.at_level("INFO", logger="orig_local.generation"):
        with_refs = flux.generate(GenerationRequest("a cat", references=refs, seed=3))
    without = flux.generate(GenerationRequest("a cat", seed=3))
    assert with_refs.references_used == 0 and with_refs.params["references_given"] == 2
    assert any("text-only" in n and "2 reference" in n for n in with_refs.notes)
    assert any("text-only" in r.getMessage() for r in caplog.records)
    assert np.array_equal(pixels(with_refs), pixels(without))  # the prompt alone was used


def test_precedence_request_over_config_over_preset():
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-qwen-image", "qwen_image", steps=1, guidance=1.5, call_kwargs={"max_sequence_length": 48})
    params, extras = gen.resolve_params(GenerationRequest("x", guidance=3.0))
    assert (params["steps"], params["guidance"], params["width"]) == (1, 3.0, 64)
    assert params["negative_prompt"] == " "  # Qwen's CFG needs one
    assert extras == {"max_sequence_length": 48}


def test_guidance_reaches_the_right_argument(qwen, flux, monkeypatch):
    from orig_local.generation import GenerationRequest

    calls = spy_pipeline_calls(monkeypatch, type(qwen.pipeline))
    qwen.generate(GenerationRequest("x", guidance=2.0, steps=1))
    assert calls[-1]["true_cfg_scale"] == 2.0 and calls[-1]["negative_prompt"] == " "
    calls = spy_pipeline_calls(monkeypatch, type(flux.pipeline))
    flux.generate(GenerationRequest("x", steps=1))
    assert calls[-1]["guidance_scale"] == 0.0 and calls[-1]["max_sequence_length"] == 32


def test_kontext_reference_changes_the_image():
    from PIL import Image

    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-flux-kontext", "flux_kontext")
    assert gen.max_references == 1
    red = gen.generate(GenerationRequest("a cat", references=[Image.new("RGB", (64, 64), "red")], seed=1))
    blue = gen.generate(GenerationRequest("a cat", references=[Image.new("RGB", (64, 64), "blue")], seed=1))
    assert red.references_used == 1 and red.notes == []
    assert red.image.size == (64, 64)
    assert not np.array_equal(pixels(red), pixels(blue))


def test_sd3_backend():
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-sd3", "sd3")
    result = gen.generate(GenerationRequest("a bridge", seed=0, width=32, height=48))
    assert result.image.size == (32, 48) and gen.max_references == 0


def test_memory_options_apply_on_cpu(monkeypatch):
    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-qwen-image", "qwen_image", vae_tiling=True, vae_slicing=True, attention_backend="native")
    result = gen.generate(GenerationRequest("x", steps=1))
    assert result.image.size == (64, 64)
    assert gen.pipeline.vae.use_tiling and gen.pipeline.vae.use_slicing


def test_offload_on_cpu_is_a_config_error():
    from orig_local.configbase import ConfigError

    gen = gen_for("tiny-flux", "flux", offload="model")
    with pytest.raises(ConfigError, match="accelerator"):
        gen.load()


def test_non_generator_preset_is_rejected():
    from orig_local.configbase import ConfigError
    from orig_local.generation import GeneratorConfig, make_generator

    with pytest.raises(ConfigError, match="not a generator"):
        make_generator(GeneratorConfig(preset="tiny-clip"))
    with pytest.raises(ConfigError, match="not set"):
        make_generator(GeneratorConfig())


def test_real_presets_are_consistent():
    from orig_local.generation import BACKENDS
    from orig_local.presets import list_presets, load_preset

    generators = [load_preset(n) for n in list_presets() if "generator" in load_preset(n).role]
    names = {p.name for p in generators}
    assert {"qwen-image", "qwen-image-edit", "qwen-image-edit-2509", "flux.1-schnell", "flux.1-dev",
            "flux.1-kontext-dev"} <= names
    for p in generators:
        assert p.generator in BACKENDS, p.name
        assert {"width", "height", "steps", "guidance"} <= set(p.defaults), p.name
    qwen = load_preset("qwen-image")
    assert (qwen.defaults["width"], qwen.defaults["steps"], qwen.defaults["guidance"]) == (1328, 50, 4.0)
    assert load_preset("qwen-image-edit-2509").max_references == 3


def spy_pipeline_calls(monkeypatch, cls):
    """Record every call's kwargs on pipeline class ``cls`` and run the real call."""
    calls: list[dict] = []
    original = cls.__call__

    def spy(self, *args, **kwargs):
        calls.append(kwargs)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__call__", spy)
    return calls


def test_unbuilt_tiny_model_is_built_on_first_use(tmp_path, monkeypatch):
    """A fresh machine has no tiny models: loading a tiny preset builds it (seconds) instead
    of failing, so `--offline` runs and tests need no separate set-up step."""
    from orig_local.generation import GeneratorConfig, make_generator

    monkeypatch.setenv("ORIG_TINY_DIR", str(tmp_path))
    gen = make_generator(GeneratorConfig(preset="tiny-flux", device="cpu"))
    gen.load()
    assert (tmp_path / "flux" / ".complete").exists() and gen.loads == 1


@pytest.mark.slow
def test_torch_compile_regional_gives_the_same_image():
    from orig_local.generation import GenerationRequest

    plain = gen_for("tiny-flux", "flux").generate(GenerationRequest("a", seed=1))
    compiled_gen = gen_for("tiny-flux", "flux", torch_compile=True)
    compiled = compiled_gen.generate(GenerationRequest("a", seed=1))
    assert np.abs(pixels(plain).astype(int) - pixels(compiled).astype(int)).max() <= 2


def test_concurrent_callers_share_one_load():
    from concurrent.futures import ThreadPoolExecutor

    from orig_local.generation import GenerationRequest

    gen = gen_for("tiny-flux", "flux")
    requests = [GenerationRequest("a harbour", seed=s % 2, steps=1) for s in range(4)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(gen.generate, requests))
    assert gen.loads == 1
    assert np.array_equal(pixels(results[0]), pixels(results[2]))
    assert not np.array_equal(pixels(results[0]), pixels(results[1]))


@pytest.mark.parametrize("preset", ["tiny-flux", "tiny-flux-kontext", "tiny-qwen-image", "tiny-qwen-image-edit",
                                    "tiny-qwen-image-edit-2509", "tiny-sd3"])
def test_tiny_folders_load_as_their_pipeline_class(preset):
    """The saved model_index names the class the backend expects, as a hub checkpoint does."""
    from diffusers import DiffusionPipeline

    from orig_local._lazy import load_object
    from orig_local.generation import BACKENDS
    from orig_local.presets import load_preset

    p = load_preset(preset)
    tiny_model(p.hf_id.removeprefix("tiny:"))
    pipe = DiffusionPipeline.from_pretrained(p.path)
    assert type(pipe).__name__ == load_object(BACKENDS[p.generator]).pipeline_class
