"""Types at the seams: where a Config meets a component, parameters are annotated (checked by
mypy in `make lint`), and every search backend implements the whole SearchBackend protocol."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "orig_local"
SEAMS = ["agent/factory.py", "agent/agent.py", "evaluation/orchestrate.py", "evaluation/agent_adapter.py",
         "evaluation/judge.py", "evaluation/wise_judge.py", "retrieval/__init__.py", "retrieval/retriever.py",
         "presets.py", "resolved.py", "agent/result.py", "evaluation/verdict.py", "loaderrors.py", "templates.py",
         *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "evaluation/phases").glob("*.py"))]


@pytest.mark.parametrize("rel", SEAMS)
def test_public_functions_at_the_seams_are_annotated(rel):
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    missing = []
    for node in [*tree.body, *(n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body)]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                not node.name.startswith("_") or node.name == "__init__"):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            missing += [f"{node.name}({a.arg})" for a in args if a.annotation is None and a.arg not in ("self", "cls")]
    assert not missing, f"{rel}: unannotated parameters {missing}"


def test_every_search_backend_implements_the_protocol():
    from orig_local.retrieval import BACKENDS
    from orig_local.retrieval.base import SearchBackend

    wanted = {"from_config", "text", "images", "aclose"}
    assert wanted <= set(dir(SearchBackend))
    for name, target in BACKENDS.items():
        module, cls_name = target.split(":")
        cls = getattr(importlib.import_module(module), cls_name)
        for method in wanted:
            assert callable(getattr(cls, method, None)), f"{name} lacks {method}"
        assert inspect.iscoroutinefunction(cls.aclose), f"{name}.aclose is not async"
