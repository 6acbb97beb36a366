"""Benchmark loaders: one file per format, picked by name through a lazy map."""

from __future__ import annotations

from pathlib import Path

from orig_local._lazy import resolve

# name -> "module:function"; a new benchmark is a new file plus one line here.
LOADERS = {
    "figeval": "orig_local.evaluation.loaders.figeval:load",
    "jsonl": "orig_local.evaluation.loaders.jsonl:load",
    "wise": "orig_local.evaluation.loaders.wise:load",
    "ihalla": "orig_local.evaluation.loaders.ihalla:load",
}


def load_benchmark(name: str, path: str | Path, classes: list[str] | None = None,
                   include_others: bool = False):
    """Load benchmark ``name`` from ``path`` into a list of :class:`BenchmarkItem`.

    ``classes`` keeps only those classes. For FIG-Eval the 20 ``others`` prompts are
    excluded from the 10-class table unless listed in ``classes`` or ``include_others``.
    """
    loader = resolve("benchmark", LOADERS, name)
    return loader(path, classes=classes, include_others=include_others)
