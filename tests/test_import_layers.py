"""The import map of ``orig_local``: no two modules import each other, and the layers point one
way (the root config and the lower layers never reach up into the agent or the harness).

What counts as an import here: every ``import``/``from ... import`` statement anywhere in a
module - at the top, inside a function (a lazy import defers the cost, not the dependency), and
under ``if TYPE_CHECKING:`` (a type is a dependency of the design too). A circle made of lazy
imports is still a circle. Not counted: the ``"module:Class"`` strings of the lazy backend maps
(``orig_local/_lazy.py``): they name a plugin picked at run time, not a dependency of the code
that holds the map. An import names its most specific module (``from orig_local.agent import
status`` is an edge to ``orig_local.agent.status``); the parent packages Python runs on the way
are not edges (our package ``__init__``\\ s resolve their names lazily).

``python tests/test_import_layers.py`` prints the two-module circles and the longer cycles.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "orig_local"

# Circles still present on this branch, each fixed on another branch (the lead removes the entry
# at merge). Nothing else may be listed here without a reason that says why it cannot be broken.
ALLOWED_CIRCLES: dict[frozenset[str], str] = {}
ALLOWED_CYCLES: dict[frozenset[str], str] = {}
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}

LOWER = ("orig_local.llm", "orig_local.retrieval", "orig_local.embeddings", "orig_local.generation")
UPPER = ("orig_local.agent", "orig_local.evaluation", "orig_local.study", "orig_local.cli")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    known = modules()
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:  # relative: from the module's package, one level up per extra dot
            base = module.split(".")
            if known[module].name != "__init__.py":
                base.pop()
            base = base[: len(base) - (node.level - 1)]
            package = ".".join(base + ([node.module] if node.module else []))
        else:
            package = node.module or ""
        names = [f"{package}.{a.name}" if f"{package}.{a.name}" in known else package for a in node.names]
    out = []
    for name in names:
        while name and name not in known:  # `import orig_local.x.y as z`, attributes of a module
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


@cache
def import_graph() -> dict[str, frozenset[str]]:
    """module -> the orig_local modules it imports (anywhere in the file)."""
    graph = {}
    for module, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(_targets(module, node))
        graph[module] = frozenset(found)
    return graph


def two_module_circles() -> list[tuple[str, str]]:
    graph = import_graph()
    return sorted({(min(a, b), max(a, b)) for a, targets in graph.items() for b in targets
                   if a in graph.get(b, ())})


def cycles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan): every module of a group
    reaches every other, so none of them can be read or tested without the rest."""
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(groups)


def layers() -> int:
    """Import layers: modules on the longest chain of imports (each group of :func:`cycles`
    counted as one module)."""
    graph = import_graph()
    group_of = {m: i for i, group in enumerate(cycles()) for m in group}
    depth: dict[str, int] = {}

    def node(m: str) -> str:
        return f"cycle{group_of[m]}" if m in group_of else m

    def longest(m: str) -> int:
        key = node(m)
        if key not in depth:
            depth[key] = 1  # provisional: a cycle's own edges add nothing
            members = [x for x in graph if node(x) == key] if m in group_of else [m]
            below = [t for x in members for t in graph[x] if node(t) != key]
            depth[key] = 1 + max((longest(t) for t in below), default=0)
        return depth[key]

    return max(longest(m) for m in graph)


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_the_map_sees_lazy_and_type_only_imports():
    # Guards the parser itself: a map that missed function-level or TYPE_CHECKING imports
    # would report no circles and pass for the wrong reason.
    graph = import_graph()
    assert len(graph) > 100
    assert "orig_local.presets" in graph["orig_local.llm"]  # inside make_chat_model
    assert "orig_local.config" in graph["orig_local.agent.factory"]  # under TYPE_CHECKING and lazy
    assert "orig_local.agent.knowledge" in graph["orig_local.agent.stages.base"]


def test_no_two_modules_import_each_other():
    found = [pair for pair in two_module_circles() if frozenset(pair) not in ALLOWED_CIRCLES]
    assert not found, "modules importing each other (move the shared part below both): " + "; ".join(
        f"{a} <-> {b}" for a, b in found)


def test_allow_lists_are_not_stale():
    present = {frozenset(pair) for pair in two_module_circles()} | {frozenset(g) for g in cycles()}
    stale = [" <-> ".join(sorted(group)) for group in [*ALLOWED_CIRCLES, *ALLOWED_CYCLES] if group not in present]
    assert not stale, f"allow-listed circles that are gone (remove them): {stale}"


def test_no_longer_import_cycles():
    found = [group for group in cycles() if frozenset(group) not in ALLOWED_CYCLES]
    assert not found, "import cycles: " + "; ".join(" -> ".join(g) for g in found)


def test_root_config_does_not_import_the_agent_or_the_harness():
    imported = import_graph()["orig_local.config"]
    upward = sorted(m for m in imported if _under(m, UPPER))
    assert not upward, f"orig_local/config.py imports {upward}"


def test_lower_layers_do_not_import_upper_layers():
    graph = import_graph()
    upward = sorted((m, t) for m, targets in graph.items() if _under(m, LOWER)
                    for t in targets if _under(t, UPPER) and (m, t) not in ALLOWED_UPWARD)
    assert not upward, "lower layer imports an upper one: " + "; ".join(f"{m} -> {t}" for m, t in upward)


if __name__ == "__main__":
    for a, b in two_module_circles():
        print(f"circle: {a} <-> {b}")
    for group in cycles():
        print(f"cycle of {len(group)}: {' '.join(group)}")
    print(f"import layers (longest chain): {layers()}")
