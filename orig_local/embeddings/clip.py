"""open_clip image and text embeddings (L2-normalised), cached by image content hash.

Precision (measured by ``benchmarks/bench_dedup.py``, ViT-B/32): ``"fp32"`` is the reference
path (embeddings equal the plain open_clip forward pass up to float rounding). ``"bf16"`` keeps
the weights and activations in bfloat16: on CPUs with AVX512-BF16 or AMX (recent Xeon / EPYC)
the matrix products run about 3x faster per CPU-second (~20 -> ~74 img/s on 2 cores), and the
embeddings stay within cosine 0.9999 of fp32 (far inside any dedup threshold); on CPUs without
those instructions bf16 is emulated and slower. The default ``"auto"`` therefore takes bf16
where it is native (:func:`native_bf16`: torch's ``torch.cpu.get_capabilities()``, or a CUDA
device that supports bf16) and fp32 elsewhere; the run's provenance records which. (Dynamic
int8 quantization was measured too: slower than bf16, and torch deprecates its quantized tensors.)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from orig_local.embeddings.config import EmbedConfig
from orig_local.errors import UsageError
from orig_local.imagehash import pixels_sha256

log = logging.getLogger(__name__)

Precision = Literal["auto", "fp32", "bf16"]
PRECISIONS = ("auto", "fp32", "bf16")


def pick_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def native_bf16(device: str) -> bool:
    """Whether ``device`` runs bfloat16 matrix products natively (not emulated)."""
    import torch

    if device.startswith("cuda"):
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device == "cpu":
        caps = torch.cpu.get_capabilities() if hasattr(torch.cpu, "get_capabilities") else {}
        return bool(caps.get("avx512_bf16") or caps.get("amx_bf16"))
    return False  # mps and others: not measured, keep the reference path


def resolve_precision(precision: str, device: str = "auto") -> str:
    """``"auto"`` -> ``"bf16"`` where native on the device CLIP will use, else ``"fp32"``;
    an explicit precision is returned as given. Imports torch only for ``"auto"``."""
    if precision != "auto":
        return precision
    return "bf16" if native_bf16(pick_device(device)) else "fp32"


def open_clip_snapshot(model: str, revision: str | None = None) -> str:
    """``local-dir:<folder>`` for an open_clip model given by folder or hub id (downloaded at
    ``revision`` into the hub cache; open_clip's own ``hf-hub:`` loader cannot pin a revision)."""
    from pathlib import Path

    if Path(model).expanduser().is_dir():
        return "local-dir:" + str(Path(model).expanduser())
    from orig_local._lazy import require
    from orig_local.loaderrors import hub_access

    hub = require("huggingface_hub", "gen")
    with hub_access(model, revision):
        folder = hub.snapshot_download(model, revision=revision, allow_patterns=["open_clip_*", "*.txt"])
    return "local-dir:" + folder


class OpenClipEmbedder:
    """Embeds images and texts with an open_clip model.

    ``model_name`` is an open_clip architecture (``ViT-B-32``) with ``pretrained`` tag, or
    ``local-dir:<folder>`` (tiny test models, or weights copied to a workstation offline).
    ``cache`` (a :class:`~orig_local.cache.DiskCache`) keeps image embeddings by content hash,
    so an image is embedded once across prompts and runs. ``precision``: see the module doc;
    ``"auto"`` is resolved on first use (it imports torch). A cache shared between precisions
    must use separate namespaces: with ``precision_namespace`` the resolved precision is appended
    to the cache's namespace (``:bf16``; fp32 keys unchanged), as ``from_config`` does.
    """

    def __init__(self, model_name: str, pretrained: str | None = None, device: str = "auto",
                 batch_size: int = 32, cache: Any | None = None, precision: Precision = "auto",
                 precision_namespace: bool = False):
        from orig_local._lazy import require

        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        require("open_clip", "gen")  # a missing extra fails here, before any run starts
        self.requested_precision = precision
        self._precision: str | None = None if precision == "auto" else precision
        self._precision_namespace = precision_namespace
        self.model_name = model_name
        self.pretrained = pretrained
        self._device = device
        self.batch_size = batch_size
        self.cache = cache
        self._memory: dict[str, np.ndarray] = {}
        self.images_embedded = 0  # forward passes actually run (cache hits excluded)
        # The weights load on first use, not here: `orig generate` contacts the backbone and
        # checks its inputs before spending seconds (or a failed offline download) on CLIP.
        self._loaded: tuple | None = None

    @property
    def precision(self) -> str:
        """The precision in use: ``"fp32"`` or ``"bf16"`` (``"auto"`` resolved, see module doc)."""
        if self._precision is None:
            self._precision = resolve_precision("auto", self._device)
            log.info("CLIP precision auto -> %s", self._precision)
        if self._precision_namespace and self.cache is not None:
            self._precision_namespace = False  # once
            if self._precision != "fp32":
                self.cache.namespace += f":{self._precision}"
        return self._precision

    def _load(self) -> tuple:
        if self._loaded is None:
            import open_clip
            import torch

            from orig_local.loaderrors import loading

            device = pick_device(self._device)
            with loading(self.model_name):  # not cached offline: one line saying how to get it
                model, _, preprocess = open_clip.create_model_and_transforms(
                    self.model_name, pretrained=self.pretrained, device=device
                )
            model = model.eval()
            if self.precision == "bf16":
                model = model.to(torch.bfloat16)
            self._loaded = (torch, device, model, preprocess, open_clip.get_tokenizer(self.model_name))
        return self._loaded

    @property
    def _dtype(self):
        return self.torch.bfloat16 if self.precision == "bf16" else self.torch.float32

    @property
    def torch(self):
        return self._load()[0]

    @property
    def device(self) -> str:
        return self._load()[1]

    @property
    def model(self):
        return self._load()[2]

    @property
    def preprocess(self):
        return self._load()[3]

    @property
    def tokenizer(self):
        return self._load()[4]

    @classmethod
    def from_config(cls, config: EmbedConfig, cache_dir=None) -> OpenClipEmbedder:
        from orig_local.presets import load_preset, resolve_model_path

        if config.model:
            model_name, pretrained, label = open_clip_snapshot(config.model, config.revision), None, config.model
        else:
            preset = load_preset(config.preset)
            if preset.open_clip is None:
                raise UsageError(f"preset {config.preset!r} has no open_clip section",
                                 hint="pick an embedder preset: `orig models`")
            model_name = resolve_model_path(preset.open_clip.model_name, build=True)
            pretrained, label = preset.open_clip.pretrained, preset.name
        cache = None
        if cache_dir is not None:
            from pathlib import Path

            from orig_local.cache import DiskCache

            namespace = f"clip:{label}" + (f"@{config.revision}" if config.model and config.revision else "")
            cache = DiskCache(Path(cache_dir) / "embeddings.sqlite", namespace=namespace)
        return cls(model_name, pretrained, device=config.device, batch_size=config.batch_size, cache=cache,
                   precision=config.precision, precision_namespace=True)

    @property
    def dim(self) -> int:
        return int(self.model.text_projection.shape[1]) if hasattr(self.model, "text_projection") \
            else int(self.embed_texts(["x"]).shape[1])

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        """(n, d) float32, rows L2-normalised. Cached by content hash."""
        self.precision  # noqa: B018 - resolves "auto" (and the cache namespace) before any lookup
        keys = [pixels_sha256(im) for im in images]
        out: list[np.ndarray | None] = [self._lookup(k) for k in keys]
        todo = [i for i, v in enumerate(out) if v is None]
        for start in range(0, len(todo), self.batch_size):
            idx = todo[start : start + self.batch_size]
            batch = self.torch.stack([self.preprocess(images[i].convert("RGB")) for i in idx])
            batch = batch.to(self.device, dtype=self._dtype)
            # inference_mode: no autograd bookkeeping at all (a few % over no_grad on CPU)
            with self.torch.inference_mode():
                feats = self.model.encode_image(batch).float()
            feats = self.torch.nn.functional.normalize(feats, dim=-1).cpu().numpy().astype(np.float32)
            self.images_embedded += len(idx)
            for i, vec in zip(idx, feats, strict=True):
                out[i] = vec
                self._store(keys[i], vec)
        if not images:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(out)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(n, d) float32, rows L2-normalised."""
        vecs = []
        for start in range(0, len(texts), self.batch_size):
            tokens = self.tokenizer(list(texts[start : start + self.batch_size])).to(self.device)
            with self.torch.inference_mode():
                feats = self.model.encode_text(tokens).float()
            vecs.append(self.torch.nn.functional.normalize(feats, dim=-1).cpu().numpy().astype(np.float32))
        return np.concatenate(vecs) if vecs else np.zeros((0, 0), dtype=np.float32)

    def text_image_similarity(self, texts: Sequence[str], images: Sequence[Any]) -> np.ndarray:
        """Cosine similarity matrix (len(texts), len(images))."""
        return self.embed_texts(texts) @ self.embed_images(images).T

    def forget(self) -> None:
        """Drop the in-memory embeddings (not the disk cache): the next call embeds again."""
        self._memory.clear()

    def _lookup(self, key: str) -> np.ndarray | None:
        if key in self._memory:
            return self._memory[key]
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                vec = np.asarray(hit, dtype=np.float32)
                self._memory[key] = vec
                return vec
        return None

    def _store(self, key: str, vec: np.ndarray) -> None:
        self._memory[key] = vec
        if self.cache is not None:
            self.cache.set(key, vec.tolist())
