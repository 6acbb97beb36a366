"""Every user-caused error is an ``OrigError`` (issue 25.3): one line, exit 2, no traceback.

Two halves. The CLI half runs the mistakes that used to print a traceback. The static half
walks every ``raise`` of a built-in exception in the package: each must either sit in a
pydantic validator (pydantic turns it into a ValidationError, which the config layer reports
as a ConfigError) or be listed below as an internal invariant or a per-item failure that the
phase loop records on the row, with the reason it is not a user's mistake. A new built-in
``raise`` fails this test until someone decides which it is, so a user-facing check cannot
slip in as a bare ValueError unnoticed.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from orig_local.cli import main

PKG = Path(__file__).resolve().parents[1] / "orig_local"

# (file relative to orig_local/, enclosing function) -> why a built-in exception is right there
INTERNAL = {
    ("_lazy.py", "load_object"): "a malformed entry in one of our own lazy maps: a bug",
    ("generation/diffusers_base.py", "_generate"): "a generator that returned another size: the item fails, on its row",
    ("generation/references.py", "to_pil"): "a caller passed an object that is not an image: a bug",
    ("generation/references.py", "fit_references"): "strategy is a Literal in GeneratorConfig: unreachable from config",
    ("evaluation/phases/retrieval_accuracy.py", "work"): "per item: the agent row failed; recorded on the row",
    ("evaluation/phases/judge.py", "work"): "per item: no image to judge; recorded on the row",
    ("evaluation/phases/generate.py", "work"): "per item: the agent row failed; recorded on the row",
    ("evaluation/external.py", "import_images"): "per item: no image for it in the folder; a failed row says so",
    ("evaluation/judge.py", "strict_json"): "an unparseable judge reply: that question's error, on its verdict",
    ("evaluation/preflight.py", "served_models"): "caught by the preflight, which reports a PreflightError",
    ("evaluation/jsonl_store.py", "append"): "the phase loop never appends an id twice: a bug",
    ("evaluation/phases/loop.py", "__getitem__"): "summary[key] for a key PhaseSummary does not declare: "
                                                  "a caller's typo, as a dict's KeyError",
    ("study/servers.py", "_started"): "a server's URL asked for before start(): a bug in the runner",
    ("agent/stages/base.py", "knowledge_image"): "a stage asked for an id the knowledge base never issued: a bug",
    ("agent/agent.py", "__init__"): "library misuse (the CLI always builds a retriever for such conditions)",
    ("agent/agent.py", "_load_oracle"): "library misuse (the CLI always loads oracle evidence for oracle)",
    ("llm/tokens.py", "smart_resize"): "decoded images have a positive size and a bounded aspect: a bug",
    ("llm/tokens.py", "_default_size"): "a message part without a size: a bug in the caller",
    ("llm/messages.py", "__post_init__"): "roles are Literal in Message: a bug",
    ("retrieval/chain.py", "__init__"): "retrieval.search.chain has min_length=1: only library misuse reaches it",
    ("retrieval/parse_worker.py", "_read_exactly"): "the parent closed the pipe: the worker's loop ends on it",
    ("retrieval/parse_pool.py", "wait_ready"): "a parse worker died at start: the pool replaces it",
    ("embeddings/dedup.py", "__init__"): "threshold/prefer come from typed config: library misuse",
    ("embeddings/clip.py", "__init__"): "precision/batch_size come from typed config: library misuse",
}

BUILTIN_EXCEPTIONS = {name for name, obj in vars(builtins).items()
                      if isinstance(obj, type) and issubclass(obj, BaseException)}
# raised to follow a Python protocol (attribute lookup, iteration, abstract methods), not to report
PROTOCOL = {"AttributeError", "StopIteration", "StopAsyncIteration", "NotImplementedError"}
VALIDATORS = {"field_validator", "model_validator", "validator", "root_validator"}


def _decorator_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        names.add(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
    return names


def _builtin_raises():
    """(file, function, line, exception name, in a validator) for every ``raise Builtin(...)``."""
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stack: list[ast.AST] = []

        def visit(node, stack=stack, path=path):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.append(node)
                for child in ast.iter_child_nodes(node):
                    yield from visit(child)
                stack.pop()
                return
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) \
                    and isinstance(node.exc.func, ast.Name) and node.exc.func.id in BUILTIN_EXCEPTIONS \
                    and node.exc.func.id not in PROTOCOL:
                fns = [f for f in stack if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
                in_validator = any(_decorator_names(f) & VALIDATORS for f in fns)
                yield (path.relative_to(PKG).as_posix(), fns[-1].name if fns else "<module>",
                       node.lineno, node.exc.func.id, in_validator)
            for child in ast.iter_child_nodes(node):
                yield from visit(child)

        yield from visit(tree)


def test_every_builtin_raise_is_a_validator_or_a_listed_internal_error():
    sites = list(_builtin_raises())
    assert len(sites) > 10, "the walk found almost nothing: it is not looking at the package"
    unlisted = [f"{f}:{line} in {fn}(): raise {exc}" for f, fn, line, exc, v in sites
                if not v and (f, fn) not in INTERNAL]
    assert not unlisted, ("user-caused errors must be OrigError subclasses (orig_local/errors.py); "
                          "if one of these is a bug or a per-item failure, list it in INTERNAL with why:\n"
                          + "\n".join(unlisted))
    stale = set(INTERNAL) - {(f, fn) for f, fn, *_ in sites}
    assert not stale, f"INTERNAL lists sites that no longer raise a built-in: {sorted(stale)}"


def test_the_walk_sees_a_bare_valueerror(tmp_path, monkeypatch):
    """The static check can fail: a module with an unlisted ``raise ValueError`` is found."""
    fake = tmp_path / "orig_local"
    (fake / "sub").mkdir(parents=True)
    (fake / "sub" / "mod.py").write_text(
        "from pydantic import field_validator\n"
        "def load(x):\n    raise ValueError('bad input')\n"
        "class C:\n    @field_validator('a')\n    def _v(cls, v):\n        raise ValueError('checked by pydantic')\n")
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    sites = list(_builtin_raises())
    assert [(s[0], s[1], s[4]) for s in sites] == [("sub/mod.py", "load", False), ("sub/mod.py", "_v", True)]


def _cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    return rc, [ln for ln in err.splitlines() if ln.strip()]


@pytest.mark.parametrize("argv, needle", [
    (["search", "x", "-s", "retrieval.search.chain=[]"], "retrieval.search.chain"),
    (["search", "x", "-b", "snapshot"], "retrieval.replay"),
    (["search", "x", "-s", "retrieval.replay=/nonexistent-snapshot"], "/nonexistent-snapshot"),
    (["search", "x", "-b", "local", "-s", "retrieval.local.corpus=/nonexistent-corpus"], "/nonexistent-corpus"),
    (["eval", "--offline", "--benchmark", "jsonl", "--data", "/nonexistent-data", "--shard", "5/2",
      "--out", "/nonexistent-run", "--phase", "agent"], "--shard 5/2"),
])
def test_user_mistakes_print_one_line_and_exit_2(capsys, argv, needle):
    rc, lines = _cli(capsys, "-q", *argv)
    assert rc == 2, lines
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert lines[0].startswith("orig:") and needle in lines[0], lines


@pytest.mark.parametrize("content, needle", [
    ("a: 1\n", "list of replies"),
    ("- [unclosed\n", "does not parse"),
])
def test_scripted_backbone_with_a_bad_script(tmp_path, capsys, content, needle):
    script = tmp_path / "script.yaml"
    script.write_text(content)
    rc, lines = _cli(capsys, "-q", "chat", "hi", "-s", "backbone.backend=scripted", "-s", f"backbone.script={script}")
    assert rc == 2, lines
    assert len(lines) == 1 and needle in lines[0] and str(script) in lines[0], lines
