"""What every diffusers-backed generator shares: loading once, memory options, seeding, calling.

A backend file subclasses :class:`DiffusersGenerator` and states only what differs between
models: the pipeline class, which call argument carries the guidance scale, whether and how
reference images are passed. Loading goes through the pipeline class's ``from_pretrained``
(``DiffusionPipeline.from_pretrained``) for hub ids and tiny local folders alike.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from orig_local.configbase import ConfigError
from orig_local.errors import MissingDependency, UsageError
from orig_local.generation.base import GenerationRequest, GenerationResult
from orig_local.generation.config import GeneratorConfig
from orig_local.generation.references import fit_references

log = logging.getLogger(__name__)

# Preset ``defaults`` keys every backend understands; any other key goes to the pipeline call.
GENERIC_KEYS = ("width", "height", "steps", "guidance", "negative_prompt")


def pick_device(device: str) -> str:
    """``auto`` -> ``cuda:$LOCAL_RANK`` / ``cuda`` / ``mps`` / ``cpu``; anything else unchanged."""
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        # Under `accelerate launch` / torchrun each process owns the GPU of its local rank.
        rank = os.environ.get("LOCAL_RANK")
        return f"cuda:{rank}" if rank is not None else "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def pick_dtype(dtype: str, device: str, preset_dtype: str):
    import torch

    name = dtype
    if dtype == "auto":
        # bf16 halves memory on accelerators; CPU kernels for bf16 are slow or missing.
        name = preset_dtype if not device.startswith("cpu") else "float32"
    try:
        value = getattr(torch, name)
    except AttributeError:
        raise ConfigError(f"unknown torch dtype {name!r}") from None
    if not isinstance(value, torch.dtype):
        raise ConfigError(f"{name!r} is not a torch dtype")
    return value


class DiffusersGenerator:
    """A :class:`~orig_local.generation.base.Generator` over one diffusers pipeline.

    The pipeline is loaded on first use (or by :meth:`load`) and reused for every request until
    :meth:`unload`. ``loads`` counts actual loads.
    """

    pipeline_class: ClassVar[str]  # diffusers class name, e.g. "QwenImagePipeline"
    guidance_kwarg: ClassVar[str] = "guidance_scale"  # call argument that receives `guidance`
    reference_kwarg: ClassVar[str | None] = None  # call argument for reference images
    model_max_references: ClassVar[int] = 0  # what the pipeline itself accepts
    reference_as_list: ClassVar[bool] = False  # pass a list (multi-image) or a single image
    # Edit pipelines that cannot run without an input image (Qwen-Image-Edit*). Given no
    # reference (a Direct run, or an ORIG run that found no usable image) they get a blank
    # white canvas of the requested size, and the result's notes say so, instead of failing.
    requires_reference: ClassVar[bool] = False
    default_negative_prompt: ClassVar[str | None] = None
    # Text-encoder tokens the pipeline reads by default (its max_sequence_length); a preset's
    # or run's max_sequence_length overrides it. The agent bounds P̂ to this (see capacity()).
    default_max_sequence_length: ClassVar[int] = 512
    # The text encoder whose tokens max_sequence_length counts: its tokenizer family (the
    # agent's P̂ bound counts in it, and runs with different families get different P̂) and
    # the pipeline folder that holds that tokenizer.
    text_tokenizer: ClassVar[str] = "qwen2"
    text_tokenizer_subfolder: ClassVar[str] = "tokenizer"

    def __init__(self, preset, config: GeneratorConfig | None = None, progress: bool = False):
        self.preset = preset
        self.config = config or GeneratorConfig(preset=preset.name)
        self.name = preset.name
        self.progress = progress
        self.max_references, self.prompt_max_tokens = self.capacity(preset, self.config)
        self.device = pick_device(self.config.device)
        self.loads = 0
        self._pipe = None
        # diffusers pipelines keep per-call state (scheduler timesteps): one call at a time.
        self._lock = threading.RLock()

    @classmethod
    def capacity(cls, preset, config: GeneratorConfig | None = None) -> tuple[int, int]:
        """(reference images the generator receives, text-encoder tokens of its prompt), from
        the class, the preset and the run config only: nothing is loaded."""
        limit = cls.model_max_references if cls.reference_kwarg else 0
        if preset.max_references is not None:
            limit = min(limit, preset.max_references)
        if config is not None and config.max_references is not None:
            limit = min(limit, config.max_references)
        tokens = cls.default_max_sequence_length
        for source in (preset.defaults, config.call_kwargs if config is not None else {}):
            if source.get("max_sequence_length"):
                tokens = int(source["max_sequence_length"])
        return limit, tokens

    # -- loading -------------------------------------------------------------------------
    @property
    def pipeline(self):
        """The loaded diffusers pipeline (loading it if needed)."""
        return self.load()

    def load(self):
        with self._lock:
            return self._pipe if self._pipe is not None else self._load()

    def _load(self):
        from orig_local._lazy import require

        diffusers = require("diffusers", "gen")
        cls = getattr(diffusers, self.pipeline_class, None)
        if cls is None:
            raise MissingDependency(f"diffusers {diffusers.__version__} has no {self.pipeline_class} "
                              f"(needed by {self.name}); upgrade: pip install -U diffusers")
        dtype = pick_dtype(self.config.dtype, self.device, self.preset.dtype)
        path = self.preset.ensure_path()  # a missing tiny model is built here (seconds)
        revision = self.preset.revision
        log.info("loading %s (%s) from %s%s as %s on %s", self.name, self.pipeline_class, path,
                 f"@{revision}" if revision else "", dtype, self.device)
        if not self.progress:
            # from_pretrained's own loading bars (diffusers components, transformers weights)
            # ignore the pipeline's progress config; progress=False must silence them too.
            diffusers.utils.logging.disable_progress_bar()
            require("transformers", "gen").utils.logging.disable_progress_bar()
        start = time.perf_counter()
        from orig_local.loaderrors import hub_access

        kwargs: dict[str, Any] = {_dtype_kwarg(): dtype}
        if revision:
            kwargs["revision"] = revision
        with hub_access(path, revision):  # gated / unknown / not cached -> one line naming the fix
            pipe = cls.from_pretrained(path, **kwargs)
        self._place(pipe)
        self._memory_options(pipe)
        pipe.set_progress_bar_config(disable=not self.progress)
        self._pipe = pipe
        self.loads += 1
        log.info("loaded %s in %.1f s", self.name, time.perf_counter() - start)
        return pipe

    def attach(self, pipe):
        """Use an already built pipeline (quantised components, random weights for a speed
        check): it gets the same device placement and memory options as a loaded one."""
        with self._lock:
            self.unload()
            self._place(pipe)
            self._memory_options(pipe)
            pipe.set_progress_bar_config(disable=not self.progress)
            self._pipe = pipe
            return pipe

    def _place(self, pipe) -> None:
        mode = self.config.offload
        if mode == "none":
            pipe.to(self.device)
            return
        if self.device.startswith("cpu"):
            raise ConfigError(f"generator.offload={mode!r} needs an accelerator; device is {self.device!r}")
        if mode == "model":
            pipe.enable_model_cpu_offload(device=self.device)
        else:
            pipe.enable_sequential_cpu_offload(device=self.device)

    def _memory_options(self, pipe) -> None:
        cfg = self.config
        if cfg.vae_tiling:
            pipe.vae.enable_tiling()
        if cfg.vae_slicing:
            pipe.vae.enable_slicing()
        if not (cfg.attention_backend or cfg.torch_compile):
            return
        denoiser = getattr(pipe, "transformer", None) or getattr(pipe, "unet", None)
        if denoiser is None:
            raise ConfigError(f"{type(pipe).__name__} has no transformer or unet: generator.attention_backend "
                              "and generator.torch_compile do not apply to it")
        if cfg.attention_backend:
            denoiser.set_attention_backend(cfg.attention_backend)
        if cfg.torch_compile:
            full = cfg.torch_compile == "full" or not getattr(denoiser, "_repeated_blocks", None)
            if full:
                denoiser.compile()
            else:
                denoiser.compile_repeated_blocks()

    def unload(self) -> None:
        """Drop the pipeline and return its accelerator memory (another phase may need it)."""
        with self._lock:
            if self._pipe is None:
                return
            pipe, self._pipe = self._pipe, None
        if self.config.offload != "none":
            pipe.remove_all_hooks()
        del pipe
        gc.collect()
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        log.info("unloaded %s", self.name)

    # -- parameters ----------------------------------------------------------------------
    def resolve_params(self, request: GenerationRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        """(generic parameters, extra call kwargs): request > run config > preset defaults."""
        defaults = dict(self.preset.defaults)
        params = {key: defaults.pop(key, None) for key in GENERIC_KEYS}
        if params["negative_prompt"] is None:
            params["negative_prompt"] = self.default_negative_prompt
        for key in GENERIC_KEYS:
            run_value = getattr(self.config, key)
            if run_value is not None:
                params[key] = run_value
            req_value = getattr(request, key)
            if req_value is not None:
                params[key] = req_value
        missing = [k for k in ("width", "height", "steps") if params[k] is None]
        if missing:
            raise ConfigError(f"preset {self.name!r} sets no default for {missing}; pass them in the request")
        extras = {**defaults, **self.config.call_kwargs}
        return params, extras

    def check_size(self, pipe, width: int, height: int) -> None:
        """Refuse sizes the pipeline would silently round (the result must have the asked size)."""
        multiple = pipe.vae_scale_factor * 2
        if width % multiple or height % multiple:
            raise UsageError(
                f"{self.name}: width and height must be multiples of {multiple}; got {width}x{height} "
                f"(nearest: {width // multiple * multiple}x{height // multiple * multiple})")

    def call_kwargs(self, request: GenerationRequest, params: dict[str, Any], extras: dict[str, Any],
                    references: list) -> dict[str, Any]:
        """The pipeline call's keyword arguments. Backends extend this for their quirks."""
        kwargs: dict[str, Any] = {
            "prompt": request.prompt,
            "width": params["width"],
            "height": params["height"],
            "num_inference_steps": params["steps"],
        }
        if params["guidance"] is not None:
            kwargs[self.guidance_kwarg] = params["guidance"]
        if params["negative_prompt"] is not None:
            kwargs["negative_prompt"] = params["negative_prompt"]
        if references:
            if self.reference_kwarg is None:  # capacity() is 0 for such pipelines: a caller's slip
                raise UsageError(f"{self.pipeline_class} takes no reference images ({len(references)} given)")
            kwargs[self.reference_kwarg] = references if self.reference_as_list else references[0]
        kwargs.update(extras)
        return kwargs

    # -- generation ----------------------------------------------------------------------
    def generate(self, request: GenerationRequest) -> GenerationResult:
        with self._lock:
            return self._generate(request)

    def _generate(self, request: GenerationRequest) -> GenerationResult:
        import torch

        pipe = self.load()
        params, extras = self.resolve_params(request)
        self.check_size(pipe, params["width"], params["height"])
        references, used, notes = fit_references(
            request.references, self.max_references, self.config.reference_strategy, self.name)
        if not references and self.requires_reference:
            references = [blank_canvas(params["width"], params["height"])]
            notes = notes + [
                f"{self.name} needs an input image and got none: a blank white "
                f"{params['width']}x{params['height']} canvas was passed (for text-only "
                "conditions a text-to-image preset such as qwen-image is the cleaner choice)"]
        for note in notes:
            log.info("%s", note)
        kwargs = self.call_kwargs(request, params, extras, references)
        # A CPU generator per image: the same seed gives the same noise on any device/offload mode.
        kwargs["generator"] = torch.Generator(device="cpu").manual_seed(request.seed)
        start = time.perf_counter()
        image = pipe(**kwargs).images[0]
        seconds = time.perf_counter() - start
        if image.size != (params["width"], params["height"]):
            raise RuntimeError(f"{self.name} returned {image.size}, asked for {params['width']}x{params['height']}")
        record = {**params, **{k: v for k, v in extras.items() if _jsonable(v)},
                  "seed": request.seed, "preset": self.name, "pipeline": self.pipeline_class,
                  "model": self.preset.hf_id, "revision": self.preset.revision,
                  "references_given": len(request.references)}
        return GenerationResult(image=image, seed=request.seed, seconds=seconds, references_used=used,
                                notes=notes, params=record)

    def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        # One call per request: each keeps its own seed and references (the multi-image edit
        # pipelines take one prompt per call anyway). The pipeline is loaded once for all.
        return [self.generate(r) for r in requests]


def blank_canvas(width: int, height: int):
    from PIL import Image

    return Image.new("RGB", (width, height), (255, 255, 255))


def _dtype_kwarg() -> str:
    """diffusers renamed ``torch_dtype`` to ``dtype`` (the old name warns); older releases know only it."""
    try:
        from diffusers.utils.deprecation_utils import _resolve_dtype  # noqa: F401
    except ImportError:
        return "torch_dtype"
    return "dtype"


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))
