"""Benchmark loaders: one file per format, picked by name through a lazy map.

Each loader module has ``load_all(path, **options) -> Loaded`` (one read of the data: every
item of every class) and ``select(items, classes, include_others)`` (which of them a run
takes); its ``load`` is the two together. ``orig eval`` reads once and selects as often as it
needs (the run's classes, each class's check, the identity over every item)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orig_local.evaluation.items import BenchmarkItem

from orig_local._lazy import resolve
from orig_local.errors import UsageError

# name -> "module:function"; a new benchmark is a new file plus one line here.
LOADERS = {
    "figeval": "orig_local.evaluation.loaders.figeval:load",
    "jsonl": "orig_local.evaluation.loaders.jsonl:load",
    "wise": "orig_local.evaluation.loaders.wise:load",
    "ihalla": "orig_local.evaluation.loaders.ihalla:load",
}


def load_benchmark(name: str, path: str | Path, classes: list[str] | None = None,
                   include_others: bool = False, **options):
    """Load benchmark ``name`` from ``path`` into a list of :class:`BenchmarkItem`.

    ``classes`` keeps only those classes. For FIG-Eval the 20 ``others`` prompts are
    excluded from the 10-class table unless listed in ``classes`` or ``include_others``.
    ``options`` are loader-specific (WISE: ``variant="rewrite"``, ``protocols=[...]``); an
    option the loader does not know is an error, not ignored.

    Example (the 3-item mini benchmark bundled for the demo)::

        >>> from orig_local.evaluation import load_benchmark
        >>> from orig_local.evaluation.data import mini_path
        >>> items = load_benchmark("jsonl", mini_path())
        >>> len(items), sorted({q.modality for item in items for q in item.questions})
        (3, ['image', 'text'])
    """
    loader = resolve("benchmark", LOADERS, name)
    _check_options(name, loader, options)
    return loader(path, classes=classes, include_others=include_others, **options)


@dataclass
class Loaded:
    """One read of a benchmark. ``items``: every item, every class (FIG-Eval's ``others``
    included); ``source``: what the loader read (WISE, I-HallA: file hashes; None where the
    loader records nothing); ``bound``: the items that bind a run folder to its data when they
    differ from ``items`` (WISE: built with every judge protocol's questions)."""

    items: list[BenchmarkItem]
    source: dict | None = None
    bound: list[BenchmarkItem] | None = None


def keep_classes(items: Iterable[BenchmarkItem], wanted: set[str] | None,
                 key: Callable[[str], str] = str) -> list[BenchmarkItem]:
    """The items whose ``key(category)`` is in ``wanted`` (all of them when ``wanted`` is None):
    what every loader's ``select`` does once it has turned the names asked for into its own."""
    return list(items) if wanted is None else [it for it in items if key(it.category) in wanted]


def _module(name: str):
    return inspect.getmodule(resolve("benchmark", LOADERS, name))


def read_benchmark(name: str, path: str | Path, **options) -> Loaded:
    """Read benchmark ``name`` once: every item, every class (see :class:`Loaded`); pick a run's
    items from it with :func:`select_benchmark`."""
    module = _module(name)
    _check_options(name, module.load, options)
    return module.load_all(path, **options)


def select_benchmark(name: str, items: Sequence[BenchmarkItem], classes: Sequence[str] | None = None,
                     include_others: bool = False) -> list[BenchmarkItem]:
    """The items of ``classes`` (the loader's names and aliases; all when None), as
    ``load_benchmark(name, path, classes, include_others)`` would return them."""
    return _module(name).select(items, classes, include_others)


def _check_options(name: str, loader, options: dict) -> None:
    known = inspect.signature(loader).parameters
    unknown = [k for k in options if k not in known]
    if unknown:
        raise UsageError(f"benchmark {name!r} takes no option {', '.join(unknown)}")


def benchmark_options(eval_config) -> dict:
    """Loader options from the ``eval:`` config section: only what the chosen benchmark uses,
    and an error for a setting that would silently do nothing (``--variant rewrite`` on FIG-Eval)."""
    name = eval_config.benchmark
    variant = getattr(eval_config, "variant", "base")
    if name == "wise":
        return {"variant": variant, "protocols": list(getattr(eval_config, "wise_judge", None) or ["wiscore", "verified"])}
    if variant != "base":
        raise UsageError(f"--variant {variant} applies to WISE only, not to benchmark {name!r}")
    return {}


def benchmark_source(name: str, path: str | Path, **options) -> dict | None:
    """What data a load reads, for binding a run folder to it: the loader's own description
    (WISE: release, variant, sha256 per file; I-HallA: sha256 per file) or None when the
    loader has no ``source`` function."""
    module = _module(name)
    describe = getattr(module, "source", None)
    return describe(path, **options) if describe else None
