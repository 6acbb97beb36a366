"""Config section for the image generator."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from orig_local.configbase import StrictModel


class GeneratorConfig(StrictModel):
    preset: str | None = None  # a model preset (`orig models --role generator`); None and no model -> no image
    # Any diffusers checkpoint by hub id (or a local folder) without writing a preset. Its pipeline
    # and defaults come from `backend`, else from its family (presets.GENERATOR_FAMILIES); with
    # `preset` also set, that preset's settings drive this checkpoint (e.g. a fine-tune).
    model: str | None = None
    # Hub revision (branch, tag or commit sha) passed to from_pretrained; None -> the preset's
    # (None there too -> the default branch).
    revision: str | None = None
    backend: str | None = None  # pipeline family (orig_local.generation.BACKENDS key); None -> the preset's
    # "auto": cuda (cuda:$LOCAL_RANK under `accelerate launch`) if available, else cpu.
    device: str = "auto"
    # "auto": the preset's dtype (bf16 for real models) on an accelerator, float32 on CPU.
    dtype: str = "auto"
    # none: whole pipeline on the device; model: one component at a time on the GPU (small
    # slowdown, ~half the memory of Qwen-Image); sequential: layer by layer (slow, minimal memory).
    offload: Literal["none", "model", "sequential"] = "none"
    vae_tiling: bool = False  # decode large images tile by tile (less peak memory)
    vae_slicing: bool = False  # decode a batch one image at a time
    # diffusers attention dispatcher name ("native", "flash", "_flash_3", "sage", ...); None = default
    attention_backend: str | None = None
    # True/"regional": compile the transformer's repeated blocks (fast to compile);
    # "full": compile the whole transformer. Pays off over many images with the same size.
    torch_compile: bool | Literal["regional", "full"] = False
    # Run-level overrides of the preset's defaults (None -> preset); a request's own values win.
    width: int | None = None
    height: int | None = None
    steps: int | None = None
    guidance: float | None = None
    negative_prompt: str | None = None
    # Extra keyword arguments for the pipeline call (e.g. max_sequence_length), over the preset's.
    call_kwargs: dict[str, Any] = Field(default_factory=dict)
    # Cap on reference images sent to the model (None -> the preset's max_references).
    max_references: int | None = Field(default=None, ge=0)
    # When there are more references than the model takes: "first" keeps the first ones (the
    # agent orders references most informative first); "collage" keeps the first limit-1 and
    # packs the rest side by side into the last slot.
    reference_strategy: Literal["first", "collage"] = "first"
