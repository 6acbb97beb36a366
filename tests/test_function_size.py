"""Every function in ``orig_local`` is at most 60 lines (issue 25 part 5, style: functions ≲ 60
lines), counted from its ``def`` line to its last line, docstring and nested functions included
(decorators not). A longer function is split into helpers named for what they do.

``ALLOWED`` names a function that may stay longer for now, with its length and why; it is empty.
An entry must still exist and still be over the limit, so the list cannot go stale.
``python tests/test_function_size.py`` prints the longest functions.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "orig_local"
LIMIT = 60

# "path/relative/to/orig_local.py:Qualified.name" -> (current length, why it may stay longer)
ALLOWED: dict[str, tuple[int, str]] = {}


def _lengths(source: str, rel: str) -> dict[str, int]:
    """``rel:qualname`` -> lines from ``def`` to the end, for every function and method."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                out[f"{rel}:{name}"] = child.end_lineno - child.lineno + 1
                visit(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def all_lengths() -> dict[str, int]:
    lengths: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lengths.update(_lengths(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix()))
    return lengths


def test_the_package_is_scanned() -> None:
    lengths = all_lengths()
    # The scan reaches every layer, nested packages and methods included.
    assert "agent/agent.py:Agent.run" in lengths
    assert "evaluation/phases/loop.py:run_items" in lengths
    assert "agent/stages/base.py:StageContext.ask" in lengths
    assert len(lengths) > 500


def test_counting_includes_docstring_and_nested_functions() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(55))
    source = textwrap.dedent('''\
        class K:
            @staticmethod
            def long(a):
                """Doc
                string."""
                def inner():
                    return 1
        ''') + textwrap.indent(body, "    ") + "\n        return inner\n"
    lengths = _lengths(source, "m.py")
    # def + 2 docstring lines + 2 inner lines + 55 statements + return = 61: over the limit
    assert lengths == {"m.py:K.long": 61, "m.py:K.long.<locals>.inner": 2}


def test_no_function_is_over_60_lines() -> None:
    lengths = all_lengths()
    over = {name: n for name, n in lengths.items() if n > LIMIT and name not in ALLOWED}
    assert not over, (f"functions over {LIMIT} lines (split them into helpers named for what they do): "
                      + ", ".join(f"{name} ({n})" for name, n in sorted(over.items(), key=lambda kv: -kv[1])))


def test_the_allow_list_is_not_stale() -> None:
    lengths = all_lengths()
    for name, (recorded, why) in ALLOWED.items():
        assert why.strip(), f"{name}: say why it may stay over {LIMIT} lines"
        assert name in lengths, f"{name} is allow-listed but no longer exists: remove the entry"
        assert lengths[name] > LIMIT, f"{name} is {lengths[name]} lines now: remove its allow-list entry"
        assert lengths[name] == recorded, f"{name} is {lengths[name]} lines, the allow-list says {recorded}"


if __name__ == "__main__":
    for name, n in sorted(all_lengths().items(), key=lambda kv: -kv[1])[:20]:
        print(f"{n:4d}  {name}")
