"""Model weights that are not on disk: one line that says how to get them.

Offline (``HF_HUB_OFFLINE=1``) or without a network, ``from_pretrained`` (transformers,
diffusers) and open_clip raise long, library-specific errors (``LocalEntryNotFoundError``,
``OSError("... couldn't find them in the cached files")``, ``RuntimeError("Failed to download
weights ...")``). :func:`loading` wraps a load call and turns those into
:class:`ModelNotCached`, an :class:`~orig_local.errors.OrigError` the CLI prints on one line.
:func:`hub_access` does the same for the hub's gated / unknown-id / unknown-revision failures
(:class:`ModelAccessError`); :mod:`orig_local.presets` re-exports both names."""

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
    gated / unknown / not-cached failures become one line (:func:`hub_access`)."""
    with hub_access(ref or "model", revision):
        yield


class ModelAccessError(OrigError, OSError):
    """Weights that cannot be loaded for a reason the user fixes: a gated or private repo
    without a token, an unknown hub id or revision, or weights not cached while offline."""


def _hub_failure(exc: BaseException, model: str, revision: str | None) -> ModelAccessError | ModelNotCached | None:
    try:
        from huggingface_hub import errors
    except ImportError:
        return None
    login = "export HF_TOKEN=<your token> or run `huggingface-cli login`"
    seen: set[int] = set()
    err: BaseException | None = exc
    while err is not None and id(err) not in seen:  # transformers/diffusers wrap the hub's error
        seen.add(id(err))
        if isinstance(err, errors.GatedRepoError):
            return ModelAccessError(
                f"{model} is a gated model: accept its licence at https://huggingface.co/{model} "
                f"while logged in, then give this machine your token", hint=login)
        if isinstance(err, errors.RevisionNotFoundError):
            return ModelAccessError(f"{model} has no revision {revision!r} on the hub",
                                    hint="fix `revision` in the preset or set e.g. generator.revision=<sha>")
        if isinstance(err, errors.RepositoryNotFoundError):
            return ModelAccessError(f"{model} was not found on the hub (or it is private)",
                                    hint=f"check the id; for a private repo {login}")
        if isinstance(err, errors.HfHubHTTPError) and getattr(err.response, "status_code", None) in (401, 403):
            return ModelAccessError(f"the hub refused access to {model} (HTTP {err.response.status_code})",
                                    hint=login)
        err = err.__cause__ or err.__context__
    # Not cached while offline (the hub's own errors, or the libraries' wrapped texts): one
    # recogniser for every loader (transformers, diffusers, open_clip).
    return model_not_cached(exc, model, revision)


@contextmanager
def hub_access(model: str, revision: str | None = None) -> Iterator[None]:
    """Around a ``from_pretrained``: the hub's gated / not-found / not-cached failures become one
    :class:`ModelAccessError` line naming the fix (``HF_TOKEN``, ``huggingface-cli login``, ...);
    anything else propagates unchanged."""
    try:
        yield
    except ModelAccessError:
        raise
    except Exception as exc:
        failure = _hub_failure(exc, model, revision)
        if failure is None:
            raise
        raise failure from exc
