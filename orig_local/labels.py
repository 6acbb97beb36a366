"""Stand-in labels: a run made by the simulated/scripted backbone or by tiny random-weight
models says so wherever its output shows (trace.json/html, galleries, report.md, CLI).

A number produced by a stand-in looks exactly like a real one; these labels are what keeps a
dry run from being read as a result. Everything here is cheap (no model is loaded)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

SIMULATED = "SIMULATED backbone — not model output"
TINY = "tiny random-weight models — numbers test the machinery only"
ESTIMATED_TOKENS = "token counts are estimates (word counts from the simulated/scripted backbone), not tokenizer counts"

# Chat backends whose replies are not produced by a model.
STAND_IN_BACKENDS = ("simulated", "scripted")


def is_tiny_ref(ref: str | None) -> bool:
    """A model reference (preset name, ``tiny:<name>``, ``local-dir:<path>`` or a folder) that
    points at a tiny random-weight model."""
    if not ref:
        return False
    ref = str(ref)
    if ref.startswith("local-dir:"):
        ref = ref.removeprefix("local-dir:")
    if ref.startswith("tiny:") or ref.startswith("tiny-"):
        return True
    try:
        from orig_local.paths import tiny_models_dir

        tiny = tiny_models_dir().resolve()
        path = Path(ref).expanduser().resolve()
        if path == tiny or tiny in path.parents:
            return True
    except (OSError, ValueError):
        pass
    return _preset_is_tiny(ref)


def _preset_is_tiny(name: str) -> bool:
    if "/" in name or not name:
        return False
    try:
        from orig_local.presets import load_preset

        return load_preset(name).is_tiny
    except Exception:  # not a preset name: nothing to say
        return False


def section_labels(section: dict | None, role: str) -> list[str]:
    """Labels for one model section of a config dict (``backbone``, ``judge``, ``generator``,
    ``embed``)."""
    if not isinstance(section, dict):
        return []
    out = []
    if role == "backbone" and section.get("backend") in STAND_IN_BACKENDS:
        return [SIMULATED]  # its preset names no model that ran
    if any(is_tiny_ref(section.get(k)) for k in ("preset", "model")):
        out.append(TINY)
    return out


def config_labels(config: Any, roles: Iterable[str] = ("backbone", "judge", "generator")) -> list[str]:
    """Labels for a root config (a :class:`~orig_local.config.Config` or its dict, e.g. a run
    folder's ``config.yaml``). Only the ``roles`` the output depends on are checked (a Direct
    run never calls its backbone: pass roles without it)."""
    if config is None:
        return []
    data = config.model_dump(mode="json") if hasattr(config, "model_dump") else dict(config)
    labels: list[str] = []
    for role in roles:
        key = "embed" if role == "embedder" else role
        for label in section_labels(data.get(key), role):
            if label not in labels:
                labels.append(label)
    return _ordered(labels)


def chat_labels(chat: Any) -> list[str]:
    """Labels for a built chat model (backbone)."""
    if chat is None:
        return []
    labels = []
    if getattr(chat, "backend", None) in STAND_IN_BACKENDS:
        return [SIMULATED]  # its preset names no model that ran
    cfg = getattr(chat, "config", None)
    if cfg is not None and (is_tiny_ref(getattr(cfg, "preset", None)) or is_tiny_ref(getattr(cfg, "model", None))):
        labels.append(TINY)
    return labels


def generator_labels(generator: Any) -> list[str]:
    if generator is None:
        return []
    preset = getattr(generator, "preset", None)
    if getattr(preset, "is_tiny", False) or is_tiny_ref(getattr(generator, "name", None)):
        return [TINY]
    return []


def run_labels(chat: Any = None, generator: Any = None) -> list[str]:
    """Labels for an agent run (what :class:`~orig_local.agent.trace.Trace` records)."""
    labels: list[str] = []
    for label in chat_labels(chat) + generator_labels(generator):
        if label not in labels:
            labels.append(label)
    return _ordered(labels)


def tokens_estimated(chat: Any) -> bool:
    """The stand-in backbones count words, not tokens."""
    return getattr(chat, "backend", None) in STAND_IN_BACKENDS


def _ordered(labels: list[str]) -> list[str]:
    order = {SIMULATED: 0, TINY: 1}
    return sorted(set(labels), key=lambda s: order.get(s, 2))
