"""Prompt templates: one loader and policy for every role, and every "Return JSON: {...}" line
restating its pydantic schema (the keys, nested objects and order the schema sends)."""

import re
import shutil
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from orig_local.agent.prompting import PACKAGE_PROMPTS, PromptLibrary
from orig_local.agent.registry import registry
from orig_local.templates import PACKAGED_PROMPT_DIRS, PromptTemplates, TemplateError

# template -> schema, as the stages declare them (each module's SPEC)
SCHEMAS: dict[str, type[BaseModel]] = {t: c.schema for t, c in registry().by_template.items()}
ROOT = Path(__file__).resolve().parent.parent / "orig_local"


def json_keys(text: str) -> dict:
    """The keys of the first ``{...}`` after "Return JSON:", as an ordered tree {key: subtree}
    (a subtree for an object or a list of objects, None for anything else)."""
    start = text.index("{", text.index("Return JSON:"))
    root: dict = {}
    stack: list[dict] = []
    last_key: list[str | None] = []
    current = None
    i = start
    while i < len(text):
        c = text[i]
        if c == "{":
            obj: dict = {}
            if current is None:
                current = root
            else:
                current[last_key[-1]] = obj
                stack.append(current)
                current = obj
            last_key.append(None)
        elif c == "}":
            last_key.pop()
            if not stack:
                return root
            current = stack.pop()
        elif c == '"':
            end = text.index('"', i + 1)
            word = text[i + 1:end]
            if re.match(r"\s*:", text[end + 1:]):
                current[word] = None
                last_key[-1] = word
            i = end
        i += 1
    raise AssertionError("unbalanced JSON in template")


def schema_keys(model: type[BaseModel]) -> dict:
    out: dict = {}
    for name, field in model.model_fields.items():
        ann = field.annotation
        inner = typing.get_args(ann)[0] if typing.get_origin(ann) is list else ann
        out[name] = schema_keys(inner) if isinstance(inner, type) and issubclass(inner, BaseModel) else None
    return out


def _ordered(tree: dict | None):
    return None if tree is None else [(k, _ordered(v)) for k, v in tree.items()]


def test_json_key_parser_sees_nesting_and_order():
    text = 'x Return JSON: {"b": ..., "a": [{"y": 1, "x": "z: q"}], "c": true/false}.'
    assert _ordered(json_keys(text)) == [("b", None), ("a", [("y", None), ("x", None)]), ("c", None)]


def test_every_template_json_matches_its_schema():
    asks_json = sorted(p.stem for p in PACKAGE_PROMPTS.glob("*.jinja") if "Return JSON:" in p.read_text())
    assert asks_json == sorted(SCHEMAS), "a template asks for JSON without a stage's Call (or the reverse)"
    assert PromptLibrary.required() == registry().templates(), "a packaged template no stage declares"
    for name, model in SCHEMAS.items():
        raw = (PACKAGE_PROMPTS / f"{name}.jinja").read_text()
        # same keys, same nesting, same order (the order is what the model writes: reason first)
        assert _ordered(json_keys(raw)) == _ordered(schema_keys(model)), name


def test_prompts_dir_overrides_per_file_for_every_role(tmp_path):
    from orig_local.evaluation.judge import Judge

    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "enhance.jinja").write_text("ABLATED {{ prompt }} {{ max_words }}")
    (folder / "judge_question.jinja").write_text("JUDGE-ABLATED {{ statement }}")
    lib = PromptLibrary(folder)
    assert lib.render("enhance", prompt="p", max_words=3) == "ABLATED p 3"
    assert lib.render("system") == PromptLibrary().render("system")  # not copied: packaged
    judge = Judge(None, templates_dir=folder)
    assert judge.render("judge_question.jinja", statement="s") == "JUDGE-ABLATED s"
    packaged = Judge(None).render("judge_system.jinja", choices=None,
                                    answer_format="bool")
    assert judge.render("judge_system.jinja", choices=None, answer_format="bool") == packaged


def test_unknown_or_missing_prompt_folder_is_an_error(tmp_path):
    with pytest.raises(TemplateError, match="not found"):
        PromptLibrary(tmp_path / "nope")
    (tmp_path / "judge_questoin.jinja").write_text("typo")
    with pytest.raises(TemplateError, match="judge_questoin.jinja"):
        PromptTemplates(PACKAGED_PROMPT_DIRS[1], tmp_path)


def test_copied_folder_is_still_accepted(tmp_path):
    folder = tmp_path / "prompts"
    shutil.copytree(PACKAGE_PROMPTS, folder)
    assert PromptLibrary(folder).overridden() == PromptLibrary.required()


def test_one_jinja_environment_factory():
    """Every Jinja environment comes from orig_local.templates.environment (one policy)."""
    makers = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")
              if re.search(r"\bEnvironment\(", p.read_text(encoding="utf-8"))]
    assert makers == ["templates.py"]
