"""Model presets: one YAML file per supported model in ``models/``.

A preset names the Hugging Face id (or ``tiny:<name>`` for a tiny model built locally by
``scripts/make_tiny_models.py``), the role, dtype, rough memory, and role-specific settings:
``serve`` (vLLM flags) for chat models, ``pipeline`` / ``defaults`` for generators,
``open_clip`` for embedders.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from orig_local.configbase import ConfigError, StrictModel, read_yaml
from orig_local.paths import models_dir, tiny_models_dir


class ServeSpec(StrictModel):
    """Flags for ``vllm serve`` (only the ones that matter for this project)."""

    tensor_parallel_size: int = 1
    max_model_len: int = 32768
    # Qwen2.5-VL on vLLM allows one image per prompt unless raised.
    limit_mm_per_prompt: dict[str, int] = Field(default_factory=lambda: {"image": 8, "video": 0})
    # Cap image pixels at the processor so a large reference image cannot OOM the server.
    mm_processor_kwargs: dict[str, Any] = Field(default_factory=lambda: {"max_pixels": 1003520})
    enable_prefix_caching: bool = True  # instructions first, evidence last -> shared prefixes
    gpu_memory_utilization: float = 0.90
    dtype: str = "bfloat16"
    # vLLM serves under the hub id unless this is set; clients must then use this name as `model`.
    served_model_name: str | None = None
    extra_args: list[str] = Field(default_factory=list)  # any other `vllm serve` flags, verbatim


class OpenClipSpec(StrictModel):
    model_name: str  # open_clip architecture, e.g. ViT-B-32, or local-dir:<path>
    pretrained: str | None = None  # open_clip pretrained tag, e.g. openai / laion2b_s34b_b79k


class Preset(StrictModel):
    name: str
    hf_id: str  # hub id, or tiny:<name> for a locally built tiny model
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


def list_presets(directory: Path | None = None) -> list[str]:
    directory = directory or models_dir()
    return sorted(p.stem for p in directory.glob("*.yaml"))


@lru_cache(maxsize=None)
def _load(path: str) -> Preset:
    try:
        return Preset(**read_yaml(path))
    except ConfigError:
        raise
    except Exception as exc:  # pydantic ValidationError -> say which file
        raise ConfigError(f"invalid preset {path}: {exc}") from exc


def load_preset(name: str, directory: Path | None = None) -> Preset:
    """Load ``models/<name>.yaml``; the error lists the known presets."""
    directory = directory or models_dir()
    path = directory / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown preset {name!r} (in {directory}); known: {', '.join(list_presets(directory))}")
    return _load(str(path))


def resolve_chat_preset(config):
    """Fill ``model`` of a :class:`~orig_local.llm.config.ChatConfig` from its preset.

    For the ``openai`` backend the model name is what the server was started with (vLLM
    serves under the hub id; ``transformers serve`` under the path it loaded)."""
    if not config.preset or config.model:
        return config
    preset = load_preset(config.preset)
    model = preset.path
    if config.backend == "openai" and preset.serve and preset.serve.served_model_name:
        model = preset.serve.served_model_name
    return config.model_copy(update={"model": model})
