"""The agent's stages, each described once: the registry the loop, trace, simulator and tests read.

Every module in ``orig_local/agent/stages/`` (but ``base``) declares ``SPEC``, a
:class:`StageSpec`: the trace name, the words progress shows, the config switch that turns it
off, and one :class:`Call` per backbone request it makes (template, pydantic schema, the kinds
of data block the request may carry, and the ``simulated`` backbone's reply). Nothing else
lists stages: the trace's stage names, the simulated backbone's replies, ``orig generate``'s
progress lines and the template tests are all derived from here, so a new stage is its module,
its template and one numbered step in :meth:`orig_local.agent.agent.Agent.run`.

Modules are found and imported on first use (not at import time: stage modules import the
trace, which checks stage names against this registry).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from orig_local.agent.simrequest import SimRequest

STAGES_PACKAGE = "orig_local.agent.stages"
NOT_STAGES = frozenset({"base"})  # modules of the stages package that are no stage
# Templates every request uses, not one stage's.
SHARED_TEMPLATES = ("system",)
# Trace stage names of earlier versions -> today's (trace.json / agent rows written before).
RENAMED_STAGES = {"retrieval": "search"}

# What a data block holds, by its id (orig_local.agent.untrusted.delimit): a stage's ``reads``
# names these kinds, and a request carrying any other kind is refused before it is sent.
BLOCK_KINDS = {
    "Q": "query",  # a search query or sub-question (derived from web text)
    "R": "result",  # a search hit: title, URL, snippet
    "P": "page",  # a page read in full (its passages)
    "I": "image",  # a candidate or reference image: its caption or description
    "T": "knowledge",  # K's text entries / consolidated statements (their evidence ids)
    "V": "image_knowledge",  # K's images, as described
    "M": "missing",  # what the sufficiency check found missing
    "S": "searched",  # queries already searched
    "F": "feature",  # F^t, the refined visual descriptors
}
_DATA_OPEN = re.compile(r'<data id="([^"]*)">')


class StageSpecError(RuntimeError):
    """A stage's declaration is missing or broken, or a request breaks it (a programming error,
    not a model's or the web's): raised, never recorded as a stage result."""


@dataclass(frozen=True)
class Call:
    """One kind of backbone request a stage makes.

    ``reads``: the data-block kinds (:data:`BLOCK_KINDS` values) its request may carry;
    ``simulate``: the ``simulated`` backbone's reply to it, a function of the parsed request
    (:class:`orig_local.agent.simrequest.SimRequest`) returning the reply's JSON object;
    ``example``: template variables for a sample render (the tests render every template with
    them and check the data it carries against ``reads``)."""

    template: str
    schema: type[BaseModel]
    simulate: Callable[[SimRequest], dict[str, Any]]
    reads: frozenset[str] = frozenset()
    example: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        unknown = set(self.reads) - set(BLOCK_KINDS.values())
        if unknown:
            raise StageSpecError(f"template {self.template!r} reads unknown block kind(s) {sorted(unknown)}; "
                                 f"kinds: {', '.join(BLOCK_KINDS.values())}")


@dataclass(frozen=True)
class StageSpec:
    """A stage (or, for a stage split over two files, one file's part of it).

    ``name``: its trace name; ``doing``: what progress says while it runs; ``switch``: the
    ``AgentConfig`` boolean that turns it off (None: it always runs where its condition has
    it); ``calls``: its backbone requests; ``templates``: templates it renders without a call,
    each with its sample variables (as ``Call.example``)."""

    name: str
    doing: str
    calls: tuple[Call, ...] = ()
    switch: str | None = None
    templates: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, hash=False)
    order: float = 100.0  # where it sits in the paper's pipeline (trace and report order)


@dataclass(frozen=True)
class Registry:
    specs: tuple[StageSpec, ...]

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        """Trace stage names, in declaration order (a name declared twice counts once)."""
        return tuple(dict.fromkeys(s.name for s in self.specs))

    @functools.cached_property
    def by_template(self) -> dict[str, Call]:
        return {c.template: c for s in self.specs for c in s.calls}

    @functools.cached_property
    def stage_of(self) -> dict[str, str]:
        """template -> the trace name of the stage that declares it."""
        return {c.template: s.name for s in self.specs for c in s.calls}

    @functools.cached_property
    def by_schema(self) -> dict[str, Call]:
        """schema name -> its call (names are unique: a request over the wire carries only the name)."""
        return {c.schema.__name__: c for s in self.specs for c in s.calls}

    def templates(self) -> list[str]:
        """Every agent template: each call's, each spec's own, the shared ones."""
        return sorted({*self.by_template, *(t for s in self.specs for t in s.templates), *SHARED_TEMPLATES})

    def examples(self) -> dict[str, dict[str, Any]]:
        """Sample variables of every agent template (the shared ones take none)."""
        out: dict[str, dict[str, Any]] = {t: {} for t in SHARED_TEMPLATES}
        for s in self.specs:
            out.update({c.template: c.example for c in s.calls}, **s.templates)
        return dict(sorted(out.items()))

    def doing(self, name: str) -> str:
        return next((s.doing for s in self.specs if s.name == name), name)

    def call(self, template: str) -> Call:
        try:
            return self.by_template[template]
        except KeyError:
            raise StageSpecError(f"no stage declares template {template!r}: add a Call to its module's SPEC "
                                 "(orig_local/agent/registry.py)") from None

    def schema_call(self, schema: Any) -> Call | None:
        """The call answering ``schema`` (a class or its name), None if no stage declares it."""
        return self.by_schema.get(schema if isinstance(schema, str) else getattr(schema, "__name__", ""))


def _check(specs: list[StageSpec]) -> None:
    seen: dict[str, str] = {}
    for s in specs:
        for c in s.calls:
            for key in (c.template, c.schema.__name__):
                if key in seen:
                    raise StageSpecError(f"{key!r} is declared by two stages ({seen[key]} and {s.name})")
                seen[key] = s.name


@functools.cache
def registry() -> Registry:
    """Every stage module's ``SPEC``, in pipeline order (``StageSpec.order``, then module name).
    Found once per process."""
    package = importlib.import_module(STAGES_PACKAGE)
    found: list[tuple[float, str, StageSpec]] = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in NOT_STAGES or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{STAGES_PACKAGE}.{info.name}")
        spec = getattr(module, "SPEC", None)
        if not isinstance(spec, StageSpec):
            raise StageSpecError(f"{module.__name__} declares no SPEC = StageSpec(...) (orig_local/agent/registry.py)")
        found.append((spec.order, info.name, spec))
    specs = [s for _, _, s in sorted(found, key=lambda f: (f[0], f[1]))]
    _check(specs)
    return Registry(tuple(specs))


def stage_names() -> tuple[str, ...]:
    return registry().names


def canonical_stage(name: str) -> str:
    """Today's name of a trace stage (``retrieval`` -> ``search``); anything else unchanged."""
    return RENAMED_STAGES.get(name, name)


def block_kind(block_id: str) -> str | None:
    """The kind of a data block by its id: ``T3`` and ``T1,T4`` knowledge, ``I2`` image, ..."""
    first = block_id.split(",")[0].strip()
    return BLOCK_KINDS.get(first.rstrip("0123456789")) if first else None


def kinds_read(text: str) -> set[str]:
    """The kinds of every data block in a rendered request (a list block: each line's ids)."""
    kinds: set[str] = set()
    for m in _DATA_OPEN.finditer(text):  # opening tags only: no scan of the blocks' bodies
        ids = [m.group(1)]
        if m.group(1) == "list":
            body = text[m.end(): text.find("</data>", m.end())]
            ids = [ln.partition(": ")[0] for ln in body.strip().splitlines()]
        for block_id in ids:
            kinds.add(block_kind(block_id) or f"unknown id {block_id!r}")
    return kinds


def check_reads(template: str, text: str, stage: str | None = None) -> None:
    """Refuse a request that carries data its stage does not declare it reads (or, given
    ``stage``, that is traced under another stage than the one declaring its template)."""
    call = registry().call(template)
    if stage is not None and registry().stage_of[template] != stage:
        raise StageSpecError(f"template {template!r} is declared by stage {registry().stage_of[template]!r}, "
                             f"not {stage!r}")
    extra = kinds_read(text) - call.reads
    if extra:
        raise StageSpecError(f"template {template!r} was given {', '.join(sorted(extra))} data it does not "
                             f"declare in its Call.reads ({', '.join(sorted(call.reads)) or 'none'})")
