"""Checks of an item selection (``--ids``, ``--classes``): a name that matches nothing is an
error that lists what exists, never a silently smaller run or table.

Class names are compared after normalisation (``sport`` = ``sports``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from orig_local.errors import UsageError


def normalize(name: str) -> str:
    """``sport`` -> ``sports`` (FIG-Eval's aliases); other names unchanged (case kept)."""
    from orig_local.evaluation.items import FIGEVAL_CLASSES
    from orig_local.evaluation.loaders.figeval import normalize_class

    fixed = normalize_class(name)
    return fixed if fixed in FIGEVAL_CLASSES else name.strip()


def _listing(values: Iterable[str], limit: int = 20) -> str:
    values = sorted(set(values))
    shown = ", ".join(values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def check_selection(items: Sequence, ids: Sequence[str] | None = None,
                    classes: Sequence[str] | None = None) -> list[str] | None:
    """Raise :class:`UsageError` when an id or class in the selection is not among ``items``
    (objects with ``id`` and ``category``). Returns the classes, normalised (None if none).

    ``orig eval`` calls this on the loaded benchmark before ``select_items``; ``orig report``
    on the run's rows."""
    known_ids = {it.id for it in items}
    known_classes = {normalize(it.category) for it in items}
    if ids:
        unknown = [i for i in ids if i not in known_ids]
        if unknown:
            raise UsageError(f"unknown id(s) {', '.join(unknown[:10])}"
                             + (f" (+{len(unknown) - 10} more)" if len(unknown) > 10 else ""),
                             hint=f"valid ids: {_listing(known_ids)}")
    if not classes:
        return None
    wanted = [normalize(c) for c in classes]
    unknown = [c for c, w in zip(classes, wanted, strict=True) if w not in known_classes]
    if unknown:
        raise UsageError(f"unknown class(es) {', '.join(unknown)}", hint=f"valid classes: {_listing(known_classes)}")
    return wanted
