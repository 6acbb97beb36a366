"""Lazy name -> class maps: how every pluggable role picks its backend.

Each role keeps a plain dict ``{"name": "module.path:ClassName"}``; the module is imported only
when that backend is built, so optional heavy dependencies stay optional.
"""

from __future__ import annotations

import importlib
from typing import Any

from orig_local.errors import MissingDependency, UsageError


class UnknownBackendError(UsageError):
    """A backend name that is not in a role's map."""


def load_object(path: str) -> Any:
    """Import ``"package.module:attr"`` and return the attribute."""
    module_name, _, attr = path.partition(":")
    if not attr:
        raise ValueError(f"expected 'module:attribute', got {path!r}")
    return getattr(importlib.import_module(module_name), attr)


def lazy_getattr(module: str, names: dict[str, str]):
    """A module-level ``__getattr__`` that resolves ``names`` (``{"Name": "mod:attr"}``) on
    first access, so a package can expose its API without importing it at import time."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return load_object(names[name])
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def resolve(role: str, registry: dict[str, str], name: str) -> Any:
    """Return the class registered under ``name`` for ``role`` or raise a clear error."""
    try:
        path = registry[name]
    except KeyError:
        known = ", ".join(sorted(registry))
        raise UnknownBackendError(f"unknown {role} backend {name!r}; known: {known}") from None
    return load_object(path)


def require(module: str, extra: str) -> Any:
    """Import an optional heavy module, or fail with the install command that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # only missing-dependency errors are turned into advice
        raise MissingDependency(
            f"{module!r} is needed here but is not installed ({exc}). "
            f"Install it with: pip install 'orig-local[{extra}]'"
        ) from exc
