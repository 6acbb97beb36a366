"""The strict base every config section derives from, and the override/YAML helpers.

Kept apart from :mod:`orig_local.config` so that each subsystem can define its own section
(``orig_local/<subsystem>/config.py``) without importing the root config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from orig_local.errors import OrigError


class StrictModel(BaseModel):
    """A config section: unknown keys are errors (a typo must never fall back to a default)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, protected_namespaces=())


class ConfigError(OrigError, ValueError):
    """A config file or override that cannot be applied."""


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``a.b.c=value`` into its key path and a YAML-parsed value."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override {text!r} is not of the form key.path=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {text!r}: value is not valid YAML: {exc}") from exc
    return key.strip().split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set each ``key.path=value`` into a nested dict (creating levels as needed)."""
    for item in overrides:
        path, value = parse_override(item)
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override {item!r}: {part!r} is not a section")
            node = child
        node[path[-1]] = value
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, with a clear error for anything else."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file ({exc.reason} at byte {exc.start})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Merge ``extra`` into a copy of ``base``; nested mappings merge, other values replace."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def describe_validation_error(exc, model: type[BaseModel]) -> str:
    """A pydantic ``ValidationError`` of ``model`` as one readable line: each problem as
    ``key.path: message``, an unknown key with its closest valid spelling ("did you mean
    `agent.max_rounds`?"), no documentation URLs."""
    import difflib

    parts = []
    for err in exc.errors():
        loc = [str(x) for x in err.get("loc", ())]
        where = ".".join(loc) or "(top level)"
        if err.get("type") == "extra_forbidden":
            fields = _fields_at(model, loc[:-1])
            close = difflib.get_close_matches(loc[-1], fields, n=1, cutoff=0.6) if loc else []
            prefix = ".".join(loc[:-1] + close) if close else ""
            hint = f"; did you mean `{prefix}`?" if close else (
                f"; valid keys: {', '.join(sorted(fields))}" if fields else "")
            parts.append(f"unknown key `{where}`{hint}")
        else:
            value = err.get("input")
            shown = repr(value) if not isinstance(value, dict) else "a mapping"
            parts.append(f"`{where}`: {err.get('msg', 'invalid')} (got {shown[:80]})")
    return "; ".join(parts)


def _fields_at(model: type[BaseModel], loc: list[str]) -> list[str]:
    """Field names of the (nested) model section at ``loc``."""
    import typing

    current: Any = model
    for part in loc:
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return []
        annotation = fields[part].annotation
        candidates = [annotation, *typing.get_args(annotation)]
        current = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if current is None:
            return []
    return list(getattr(current, "model_fields", {}) or [])
