"""Model weights that are not on disk: one line that says how to get them.

Offline (``HF_HUB_OFFLINE=1``) or without a network, ``from_pretrained`` (transformers,
diffusers) and open_clip raise long, library-specific errors (``LocalEntryNotFoundError``,
``OSError("... couldn't find them in the cached files")``, ``RuntimeError("Failed to download
weights ...")``). :func:`loading` wraps a load call and turns those into
:class:`ModelNotCached`, an :class:`~orig_local.errors.OrigError` the CLI prints on one line."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from orig_local.errors import OrigError

# Exception classes (by name: no import of huggingface_hub needed) and message fragments that
# mean "the files are not in the local cache and could not be downloaded".
_CLASSES = {"LocalEntryNotFoundError", "OfflineModeIsEnabled"}
_FRAGMENTS = (
    "couldn't find them in the cached files",
    "not fully cached locally",
    "cannot find the requested files in the local cache",
    "cannot find the requested files in the disk cache",
    "outgoing traffic has been disabled",
    "failed to download weights",
    "offline mode is enabled",
)


class ModelNotCached(OrigError, OSError):
    """Weights of a model are neither cached nor downloadable right now."""


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def model_not_cached(exc: BaseException, ref: str | None = None,
                     revision: str | None = None) -> ModelNotCached | None:
    """A :class:`ModelNotCached` when ``exc`` (or what caused it) says the weights are missing
    from the cache; None otherwise."""
    if isinstance(exc, ModelNotCached):
        return exc
    for e in _chain(exc):
        names = {c.__name__ for c in type(e).__mro__}
        text = str(e).lower()
        if names & _CLASSES or (isinstance(e, (OSError, RuntimeError)) and any(f in text for f in _FRAGMENTS)):
            return not_cached(ref, revision)
    return None


def not_cached(ref: str | None, revision: str | None = None) -> ModelNotCached:
    what = f"model {ref}" if ref else "model weights"
    rev = f" --revision {revision}" if revision else ""
    download = f"`huggingface-cli download {ref}{rev}`" if ref else "`huggingface-cli download <hub id>`"
    offline = " or unset HF_HUB_OFFLINE" if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0") else ""
    return ModelNotCached(f"{what} is not cached", hint=f"download with {download}{offline}; "
                          "see `orig models` for the presets")


@contextmanager
def loading(ref: str | None, revision: str | None = None) -> Iterator[None]:
    """Wrap a ``from_pretrained``/open_clip call loading ``ref`` (a hub id or folder): the hub's
    gated / unknown / not-cached failures become one line (:func:`orig_local.presets.hub_access`)."""
    from orig_local.presets import hub_access

    with hub_access(ref or "model", revision):
        yield
