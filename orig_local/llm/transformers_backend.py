"""In-process chat backend: any image-text-to-text model through transformers.

For users without a server (and for the offline demo): ``AutoProcessor`` +
``AutoModelForImageTextToText`` load a Qwen2.5-VL (or any model of that auto class) from a hub id
or a local folder. Generation runs in a worker thread (``asyncio.to_thread``) so the event loop
stays responsive, one ``generate`` at a time (a lock): batching belongs to a server such as vLLM.

There is no guided decoding here: a schema is appended to the last user turn as JSON-schema text
(:func:`~orig_local.llm.base.with_schema_instruction`) whatever ``structured_mode`` says, and the
reply goes through the shared validation and bounded retry of :class:`BaseChatModel`.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from pathlib import Path
from typing import Any

from orig_local._lazy import require
from orig_local.llm.base import (
    BaseChatModel,
    ChatError,
    Completion,
    Message,
    Usage,
    with_schema_instruction,
)
from orig_local.llm.config import ChatConfig
from orig_local.llm.imagecache import DecodedImages

log = logging.getLogger(__name__)


def pick_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; anything else as given."""
    import torch

    if requested != "auto":
        if requested.startswith("cuda") and not torch.cuda.is_available():
            raise ChatError(f"device {requested!r} requested but torch sees no CUDA GPU")
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(requested: str, device: str):
    """``auto`` -> bfloat16 on a GPU, float32 on the CPU (CPU bf16 matmuls are slow and lossy)."""
    import torch

    if requested == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return getattr(torch, requested)
    except AttributeError:
        raise ChatError(f"unknown dtype {requested!r}; use auto, bfloat16, float16 or float32") from None


def message_to_hf(message: Message, files: DecodedImages | None = None) -> dict[str, Any]:
    """A :class:`Message` in the processor's chat format (images as PIL). A picture given as a
    file path comes from ``files`` (decoded once while the file is unchanged) when given."""
    def picture(part):
        if files is not None and isinstance(part.source, Path):
            return files.get(part.source)
        return part.to_pil()

    content = [
        {"type": "text", "text": p} if isinstance(p, str) else {"type": "image", "image": picture(p)}
        for p in message.parts
    ]
    return {"role": message.role, "content": content}


class TransformersChatModel(BaseChatModel):
    """Chat with a local image-text-to-text model. ``config.model`` is a hub id or a folder
    (``preset`` fills it, e.g. ``tiny-qwen2.5-vl`` -> the tiny model's folder)."""

    backend = "transformers"

    def __init__(self, config: ChatConfig, cache=None):
        super().__init__(config, cache=cache)
        if not config.model:
            raise ChatError("the transformers backend needs `model` (a hub id or folder) or `preset`")
        torch = require("torch", "local")
        transformers = require("transformers", "local")
        _build_tiny_if_missing(config.model)
        from orig_local.loaderrors import hub_access

        self.device = pick_device(config.device)
        self.dtype = pick_dtype(config.dtype, self.device)
        hub: dict[str, Any] = {"revision": config.revision} if config.revision else {}
        with hub_access(config.model, config.revision):  # gated / not cached -> one clear line
            self.processor = transformers.AutoProcessor.from_pretrained(config.model, **hub)
        if config.max_pixels is not None:
            _cap_pixels(self.processor, config.max_pixels)
        load_kwargs: dict[str, Any] = {"dtype": self.dtype, **hub}
        if config.device == "auto" and self.device == "cuda" and torch.cuda.device_count() > 1:
            load_kwargs["device_map"] = "auto"  # spread a large model over all visible GPUs
        with hub_access(config.model, config.revision):
            self.model = transformers.AutoModelForImageTextToText.from_pretrained(config.model, **load_kwargs)
        if "device_map" not in load_kwargs:
            self.model.to(self.device)
        self.model.eval()
        self._lock = threading.Lock()  # one generate at a time, across event loops and threads
        self.images = DecodedImages()  # a reference file sent in several requests is decoded once
        self._sample_calls = 0

    @property
    def tokenizer(self):
        return getattr(self.processor, "tokenizer", self.processor)

    async def _complete(self, messages, *, schema, temperature, max_tokens, logprobs) -> Completion:
        if schema is not None:
            messages = with_schema_instruction(messages, schema)
        return await asyncio.to_thread(self._generate, messages, temperature, max_tokens, logprobs)

    def _generate(self, messages, temperature: float, max_tokens: int, logprobs: int | None) -> Completion:
        import torch

        hf_messages = [message_to_hf(m, self.images) for m in messages]  # decoding: off the event loop
        inputs = self.processor.apply_chat_template(
            hf_messages, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt",
        )
        inputs = {k: (v.to(self.model.device, dtype=self.dtype) if v.is_floating_point() else v.to(self.model.device))
                  for k, v in inputs.items()}
        gen_kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "return_dict_in_generate": True,
                                      "output_logits": bool(logprobs)}
        if temperature == 0.0:
            gen_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            gen_kwargs.update(do_sample=True, temperature=temperature, top_p=self.config.top_p, top_k=None)
        pad = self.tokenizer.pad_token_id
        if pad is not None:
            gen_kwargs["pad_token_id"] = pad
        with self._lock, torch.inference_mode():
            if temperature != 0.0 and self.config.seed is not None:
                # Reproducible runs, yet a different sample on each call.
                torch.manual_seed(self.config.seed + self._sample_calls)
                self._sample_calls += 1
            out = self.model.generate(**inputs, **gen_kwargs)
        prompt_len = inputs["input_ids"].shape[1]
        new_ids = out.sequences[0, prompt_len:].tolist()
        completion_ids = _until_eos(new_ids, self.model.generation_config.eos_token_id)
        text = self.tokenizer.decode(completion_ids, skip_special_tokens=True).strip()
        top = _first_token_top(out.logits[0][0], logprobs, self.tokenizer) if logprobs and out.logits else None
        # no end-of-sequence within max_new_tokens: cut, as a server reports finish_reason=length
        cut = len(completion_ids) >= max_tokens and not _ends_with_eos(
            completion_ids, self.model.generation_config.eos_token_id)
        return Completion(text=text, usage=Usage(prompt_len, len(completion_ids)), top_logprobs=top,
                          finish_reason="length" if cut else "stop")

    async def aclose(self) -> None:
        model = self.__dict__.pop("model", None)
        if model is None:
            return
        self.images = DecodedImages()  # the decoded pictures go with the model
        del model
        gc.collect()
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()


def _build_tiny_if_missing(model: str) -> None:
    """A tiny preset (``tiny:<name>``) is built on first use (seconds), so offline runs just work."""
    from pathlib import Path

    from orig_local.paths import tiny_models_dir
    from orig_local.tiny import BUILDERS

    path = Path(model)
    if path.parent == tiny_models_dir() and path.name in BUILDERS:
        from orig_local.tiny.build import build_one

        build_one(path.name, tiny_models_dir())  # returns at once when built and current


def _until_eos(ids: list[int], eos) -> list[int]:
    """Generated ids up to and including the first end-of-sequence id (padding after it dropped)."""
    eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos] if eos is not None else [])
    for i, t in enumerate(ids):
        if t in eos_ids:
            return ids[: i + 1]
    return ids


def _ends_with_eos(ids: list[int], eos) -> bool:
    eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos] if eos is not None else [])
    return bool(ids) and ids[-1] in eos_ids


def _first_token_top(logits, k: int, tokenizer) -> dict[str, float]:
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    values, ids = torch.topk(logp, k)
    top: dict[str, float] = {}
    for v, i in zip(values.tolist(), ids.tolist(), strict=True):
        top.setdefault(tokenizer.decode([i]), v)  # two ids can decode alike: keep the likelier
    return top


def _cap_pixels(processor, max_pixels: int) -> None:
    """Cap image pixels at the image processor (Qwen2-VL style ``size.longest_edge``)."""
    image_processor = getattr(processor, "image_processor", None)
    size = getattr(image_processor, "size", None)
    if size is None or "longest_edge" not in size:
        raise ChatError(f"max_pixels is set but {type(image_processor).__name__} has no pixel cap to set")
    size["longest_edge"] = max_pixels
    if image_processor is not None and hasattr(image_processor, "max_pixels"):
        image_processor.max_pixels = max_pixels
