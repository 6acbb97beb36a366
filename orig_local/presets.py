"""Model presets: one YAML file per supported model in ``models/`` (the catalogue at the top of
the repository, shipped in the wheel as ``orig_local/models/``). ``$ORIG_MODELS_DIR`` names a
folder of your own: each file there overrides the packaged preset of the same name or adds one.

A preset names the Hugging Face id (or ``tiny:<name>`` for a tiny model built locally by
``scripts/make_tiny_models.py``), the hub ``revision`` to load (None = the default branch),
whether the hub repo is ``gated``, the role, dtype, rough memory, and role-specific settings:
``serve`` (vLLM flags) for chat models, ``generator`` / ``defaults`` for generators,
``open_clip`` for embedders.

A model without a preset is used by hub id (``-s generator.model=<hub id>``): see
:func:`generator_preset` and :func:`~orig_local.loaderrors.hub_access`, which turns the hub's "gated / not found / not
cached" failures into one-line :class:`ModelAccessError` messages.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from orig_local.configbase import ConfigError, StrictModel, read_yaml

# Loading failures live in loaderrors.py (below this module); importable from here as before.
from orig_local.loaderrors import ModelAccessError, hub_access
from orig_local.paths import PRESETS_DIR, tiny_models_dir, user_models_dir

if TYPE_CHECKING:
    from orig_local.generation.config import GeneratorConfig
    from orig_local.llm.config import ChatConfig

# vLLM's default structured-output backend lets a model emit unlimited whitespace inside guided
# JSON until max_tokens (seen with vLLM 0.32); xgrammar without free whitespace cannot. It only
# works as a serve-time setting: per request it had no effect.
DEFAULT_STRUCTURED_OUTPUTS = {"backend": "xgrammar", "disable_any_whitespace": True}


class ServeSpec(StrictModel):
    """Flags for ``vllm serve`` (only the ones that matter for this project)."""

    tensor_parallel_size: int = 1
    max_model_len: int = 32768
    # Images (and videos) one request may carry; vLLM answers HTTP 400 beyond it. It also sizes
    # the memory vLLM reserves at start-up, so a modality we never send is set to 0. Clients
    # read the image limit from here (ChatConfig.max_images) and send no more.
    limit_mm_per_prompt: dict[str, int] = Field(default_factory=lambda: {"image": 8, "video": 0})
    # Cap image pixels at the processor so a large reference image cannot OOM the server.
    # `size` is what transformers >= 5.19 asks for (min_pixels/max_pixels warn, removal announced).
    mm_processor_kwargs: dict[str, Any] = Field(
        default_factory=lambda: {"size": {"shortest_edge": 3136, "longest_edge": 1003520}})
    enable_prefix_caching: bool = True  # instructions first, evidence last -> shared prefixes
    gpu_memory_utilization: float = 0.90
    dtype: str | None = None  # None -> the preset's dtype (vLLM would otherwise pick bf16 itself)
    # `--structured-outputs-config`: None leaves vLLM's default (runaway whitespace possible)
    structured_outputs: dict[str, Any] | None = Field(default_factory=lambda: dict(DEFAULT_STRUCTURED_OUTPUTS))
    # vLLM serves under the hub id unless this is set; clients must then use this name as `model`.
    served_model_name: str | None = None
    extra_args: list[str] = Field(default_factory=list)  # any other `vllm serve` flags, verbatim

    @property
    def max_pixels(self) -> int | None:
        """Pixels per image the processor keeps: ``size.longest_edge`` (transformers' name for
        Qwen2-VL's pixel cap, whatever "edge" says) or the older ``max_pixels``; None if unset."""
        kwargs = self.mm_processor_kwargs or {}
        value = kwargs.get("max_pixels") or (kwargs.get("size") or {}).get("longest_edge")
        return int(value) if value else None


class OpenClipSpec(StrictModel):
    model_name: str  # open_clip architecture, e.g. ViT-B-32, or local-dir:<path>
    pretrained: str | None = None  # open_clip pretrained tag, e.g. openai / laion2b_s34b_b79k


class Preset(StrictModel):
    name: str
    hf_id: str  # hub id, or tiny:<name> for a locally built tiny model
    # Hub revision (branch, tag or commit sha) for from_pretrained / `vllm serve --revision`.
    # None = the default branch, which can change under you: pin a commit sha to reproduce a run.
    revision: str | None = None
    gated: bool = False  # the hub repo asks to accept a licence: needs HF_TOKEN / huggingface-cli login
    role: list[Literal["backbone", "judge", "generator", "embedder"]]
    dtype: str = "bfloat16"
    memory_gb: float | None = None  # approximate accelerator memory to load it
    notes: str | None = None
    serve: ServeSpec | None = None
    # generators: which backend file drives it, and the paper/vendor defaults
    generator: str | None = None  # key of orig_local.generation.BACKENDS
    defaults: dict[str, Any] = Field(default_factory=dict)
    max_references: int | None = None  # reference images the pipeline accepts at once
    open_clip: OpenClipSpec | None = None

    @property
    def path(self) -> str:
        """What ``from_pretrained`` should load: the hub id, or the tiny model's folder."""
        return resolve_model_path(self.hf_id)

    def ensure_path(self) -> str:
        """:attr:`path`, building the tiny model first if this is a missing tiny preset."""
        return resolve_model_path(self.hf_id, build=True)

    @property
    def is_tiny(self) -> bool:
        return self.hf_id.startswith("tiny:")


def resolve_model_path(ref: str, build: bool = False) -> str:
    """``tiny:<name>`` (or ``local-dir:tiny:<name>``) -> the tiny model's folder; anything else
    unchanged. With ``build``, a tiny model that is missing (or stale) is built first: it takes
    seconds, so offline runs and tests on a fresh machine just work."""
    prefix = ""
    if ref.startswith("local-dir:tiny:"):
        prefix, ref = "local-dir:", ref.removeprefix("local-dir:")
    if not ref.startswith("tiny:"):
        return prefix + ref
    name = ref.removeprefix("tiny:")
    if build:
        from orig_local.tiny.build import build_one

        build_one(name, tiny_models_dir())  # returns at once when built and current
    return prefix + str(tiny_models_dir() / name)


def preset_dirs(directory: Path | None = None) -> list[Path]:
    """The folders presets come from, first one wins: ``directory`` alone when given, else
    ``$ORIG_MODELS_DIR`` (per file, like prompt templates) before the packaged catalogue."""
    if directory is not None:
        return [directory]
    user = user_models_dir()
    return [user, PRESETS_DIR] if user else [PRESETS_DIR]


def preset_path(name: str, directory: Path | None = None) -> Path | None:
    """The file preset ``name`` is read from (None if no folder has it)."""
    return next((d / f"{name}.yaml" for d in preset_dirs(directory) if (d / f"{name}.yaml").is_file()), None)


def list_presets(directory: Path | None = None) -> list[str]:
    return sorted({p.stem for d in preset_dirs(directory) for p in d.glob("*.yaml")})


@cache
def _load(path: str) -> Preset:
    try:
        return Preset(**read_yaml(path))
    except ConfigError:
        raise
    except Exception as exc:  # pydantic ValidationError -> say which file
        raise ConfigError(f"invalid preset {path}: {exc}") from exc


def load_preset(name: str, directory: Path | None = None) -> Preset:
    """Load ``<name>.yaml`` from the first of :func:`preset_dirs` that has it; the error lists
    the known presets (and the closest names to a typo)."""
    path = preset_path(name, directory)
    if path is None:
        import difflib

        known = list_presets(directory)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        where = " + ".join(map(str, preset_dirs(directory)))
        raise ConfigError(f"unknown preset {name!r} (in {where}); {hint}known: {', '.join(known)}")
    return _load(str(path))


def resolve_chat_preset(config: ChatConfig) -> ChatConfig:
    """Fill what a :class:`~orig_local.llm.config.ChatConfig` leaves to its preset: ``model``,
    ``revision`` and, for the ``openai`` backend, ``max_images`` (the image limit the preset
    serves with, so a client never sends more than the server accepts).

    For the ``openai`` backend the model name is what the server was started with (vLLM
    serves under the hub id; ``transformers serve`` under the path it loaded). A section that
    names a ``model`` of its own (a hub id without a preset) is left as it is."""
    if not config.preset or config.model:
        return config
    preset = load_preset(config.preset)
    update: dict[str, Any] = {"model": preset.path}
    if config.backend == "openai" and preset.serve and preset.serve.served_model_name:
        update["model"] = preset.serve.served_model_name
    if config.revision is None and preset.revision:
        update["revision"] = preset.revision
    if config.backend == "openai" and config.max_images is None and preset.serve:
        update["max_images"] = preset.serve.limit_mm_per_prompt.get("image")
    if config.backend == "openai" and config.context_tokens is None and preset.serve:
        update["context_tokens"] = preset.serve.max_model_len
    return config.model_copy(update=update)


# --------------------------------------------------------------------------- models by hub id

# Hub repo name (lower case, after the "org/") -> the preset whose pipeline and defaults a model
# without a preset borrows. First match wins, so the more specific patterns come first.
GENERATOR_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"qwen-image-edit-25\d\d", "qwen-image-edit-2509"),  # multi-image edit (QwenImageEditPlusPipeline)
    (r"qwen-image-edit", "qwen-image-edit"),
    (r"qwen-image", "qwen-image"),
    (r"flux\.1-kontext", "flux.1-kontext-dev"),
    (r"flux\.1-schnell", "flux.1-schnell"),
    (r"flux\.1", "flux.1-dev"),  # dev, Krea-dev and fine-tunes: FluxPipeline with guidance 3.5
    (r"stable-diffusion-3", "sd-3.5-large"),
)


def family_preset(model: str) -> Preset | None:
    """The preset a generator given by hub id (or folder) borrows its pipeline from, if known."""
    repo = model.rstrip("/").rsplit("/", 1)[-1].lower()
    for pattern, name in GENERATOR_FAMILIES:
        if re.search(pattern, repo):
            return load_preset(name)
    return None


def generator_preset(config: GeneratorConfig) -> Preset:
    """The preset that drives a generator section: ``generator.preset``, or for
    ``generator.model=<hub id or folder>`` one built on the fly, with the pipeline (``backend``)
    and defaults of ``generator.backend`` or of the model's family (:data:`GENERATOR_FAMILIES`).
    ``generator.revision`` and ``generator.backend`` override the preset's. A ``preset`` that is
    a hub id or a path (it has a "/", which no preset name has) counts as ``model``: so
    ``--generator Qwen/Qwen-Image`` works wherever a preset name does."""
    if config.preset and "/" in config.preset and not config.model:
        config = config.model_copy(update={"preset": None, "model": config.preset})
    if not config.model:
        if not config.preset:
            raise ConfigError("generator.preset is not set: set generator.preset=<preset> (see `orig models "
                              "--role generator`) or generator.model=<hub id>")
        preset = load_preset(config.preset)
        update: dict[str, Any] = {}
        if config.revision is not None:
            update["revision"] = config.revision
        if config.backend is not None:
            update["generator"] = config.backend
        return preset.model_copy(update=update) if update else preset

    base: Preset | None
    if config.preset:
        base = load_preset(config.preset)  # a preset's settings for another checkpoint (a fine-tune)
    elif config.backend:
        base = next((p for p in map(load_preset, list_presets())
                     if p.generator == config.backend and not p.is_tiny), None)
    else:
        base = family_preset(config.model)
    backend = config.backend or (base.generator if base else None)
    if not backend:
        known = ", ".join(sorted({p.generator for p in map(load_preset, list_presets()) if p.generator}))
        raise ConfigError(f"generator.model={config.model}: unknown model family, so the pipeline to use "
                          f"is unknown; set generator.backend=<{known.replace(', ', '|')}>")
    base = base or Preset(name=config.model, hf_id=config.model, role=["generator"])
    return base.model_copy(update={
        "name": config.model, "hf_id": config.model, "revision": config.revision, "generator": backend,
        "gated": base.gated and base.hf_id == config.model, "memory_gb": None,
        "notes": f"hub id without a preset; pipeline and defaults from {base.name}",
    })


__all__ = [
    "GENERATOR_FAMILIES", "ModelAccessError", "OpenClipSpec", "Preset", "ServeSpec", "family_preset",
    "generator_preset", "hub_access", "list_presets", "load_preset", "preset_dirs", "preset_path",
    "resolve_chat_preset", "resolve_model_path",
]
