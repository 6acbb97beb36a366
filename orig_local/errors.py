"""One root for every error a user can cause or fix (bad config, missing data, a server that
is down, a run folder in use). The CLI catches :class:`OrigError` once and prints one line
with what went wrong and what to do; anything else is a bug and keeps its traceback.

Subclasses keep a second, familiar base (``ValueError``, ``RuntimeError``, ``OSError``) where
callers already catch that."""

from __future__ import annotations


class OrigError(Exception):
    """An error a user can act on. ``hint`` says what to do (printed after the message)."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        text = " ".join(str(self).split())
        return f"{text} ({self.hint})" if self.hint else text


class UsageError(OrigError, ValueError):
    """A command line, option or argument that cannot be used as given."""


class DataError(OrigError, ValueError):
    """Benchmark data or result rows that are missing, malformed or inconsistent."""


class MissingDependency(OrigError, ImportError):
    """An optional package (or a version of it with the needed class) is not installed."""


class PreflightError(OrigError, RuntimeError):
    """A phase cannot start: a server does not answer, a model is not served, a folder is held."""
