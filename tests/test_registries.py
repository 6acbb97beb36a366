"""Stages and conditions are data (issue 25, part 1): one declaration each, read by the trace,
the simulated backbone, the study plan, the CLI and the docs. The docs' recipe for a new stage
is followed for real: a throwaway stage is added to a copy of the package and the simulated
agent runs through it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from agent_support import PROMPT, make_agent

from orig_local import conditions
from orig_local.agent.registry import BLOCK_KINDS, StageSpecError, check_reads, registry
from orig_local.agent.trace import StageRecord, from_json

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "orig_local"


def _read(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def _ticked(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


# --------------------------------------------------------------------------- stages


def test_every_stage_module_declares_itself_and_every_switch_is_an_agent_boolean():
    from orig_local.agent.config import AgentConfig

    modules = sorted(p.stem for p in (PACKAGE / "agent" / "stages").glob("*.py") if p.stem not in ("__init__", "base"))
    assert len(registry().specs) == len(modules)  # one SPEC per module, none forgotten
    for spec in registry().specs:
        if spec.switch is not None:
            assert AgentConfig.model_fields[spec.switch].annotation is bool, spec.name
        for call in spec.calls:
            assert call.reads <= set(BLOCK_KINDS.values())


@pytest.mark.parametrize("switch", sorted({s.switch for s in registry().specs if s.switch}))
async def test_a_stage_switched_off_makes_none_of_its_calls(switch):
    """The switch a SPEC names really turns its calls off (and only a switch does)."""
    templates = {c.template for s in registry().specs if s.switch == switch for c in s.calls}
    # consolidate_min_tokens=0: the merge call runs however small K is (the demo's K stays small)
    on = await make_agent(consolidate_min_tokens=0).run(PROMPT)
    off = await make_agent(**{switch: False}, consolidate_min_tokens=0).run(PROMPT)
    assert templates <= {r.template for r in on.trace.records if r.attempts}
    assert not templates & {r.template for r in off.trace.records if r.attempts}


def test_llm_names_no_agent_schema():
    names = {c.schema.__name__ for s in registry().specs for c in s.calls}
    for path in (PACKAGE / "llm").glob("*.py"):
        said = {n for n in names if re.search(rf"\b{n}\b", path.read_text(encoding="utf-8"))}
        assert not said, f"{path.name} names agent schema(s) {sorted(said)}"


async def test_a_schema_no_stage_declares_is_a_recorded_stage_failure_not_a_crash():
    from pydantic import BaseModel

    from orig_local.agent.stages.base import StageContext
    from orig_local.llm import make_chat_model
    from orig_local.llm.config import ChatConfig

    class Undeclared(BaseModel):
        x: int

    agent = make_agent(chat=make_chat_model(ChatConfig(backend="simulated", model="simulated")))
    res = await agent.run(PROMPT)  # the simulated backbone answers every declared stage
    assert res.status == "ok" and res.trace.stages()[:3] == ["bootstrap", "planning", "search"]
    ctx = StageContext(chat=agent.chat, retriever=None, config=agent.config, prompts=agent.prompts,
                       trace=res.trace, prompt=PROMPT, knowledge=res.knowledge)
    parsed, record = await ctx.ask(stage="enhance", step="expand", template="enhance", schema=Undeclared,
                                   variables={"max_words": 30})
    assert parsed is None and record.error.startswith("NoScriptedReply: ")
    assert "'Undeclared'" in record.error and record in res.trace.records


def test_a_request_with_data_its_stage_does_not_declare_is_refused():
    page = '<data id="P">Title\nhttps://x.invalid\nbody</data>'
    check_reads("text_filter", f'text <data id="Q">q</data> {page}')  # declared: query, page
    with pytest.raises(StageSpecError, match="page"):
        check_reads("extension", f"write the prompt from {page}")  # P̂ is written from F^t, never raw pages
    with pytest.raises(StageSpecError, match="knowledge"):  # a list block's lines count by their ids
        check_reads("refine_visual", '<data id="list">F1: teal bands\nT3: a fact</data>')
    with pytest.raises(StageSpecError, match="no stage declares template 'nope'"):
        check_reads("nope", "")
    with pytest.raises(StageSpecError, match="declared by stage 'search', not 'planning'"):
        check_reads("select_pages", "", stage="planning")  # traced under the stage that declares it


def test_an_old_trace_naming_retrieval_loads_and_is_reported_as_search(tmp_path):
    from orig_local.evaluation.results import RunResults, stage_means
    from orig_local.evaluation.rows import AgentRow

    old = {"labels": [], "records": [
        {"stage": "retrieval", "step": "search_text", "searches_text": 1, "latency_s": 0.5},
        {"stage": "retrieval", "step": "select_pages", "attempts": 1, "prompt_tokens": 600},
        {"stage": "planning", "step": "plan", "attempts": 1, "prompt_tokens": 500}]}
    trace = from_json(old)
    assert [r.stage for r in trace.records] == ["search", "search", "planning"]
    assert trace.totals()["search"].searches_text == 1 and trace.totals()["search"].prompt_tokens == 600
    assert StageRecord.model_validate({"stage": "retrieval", "step": "read_page"}).stage == "search"
    with pytest.raises(ValueError, match="unknown stage 'retreival'"):
        StageRecord(stage="retreival", step="x")
    # agent rows written before the rename: their per-stage totals are reported under "search"
    run = RunResults(dir=tmp_path, label="old", meta={}, judge_name=None, prompts=[], judge_rows={}, gen_rows={},
                     retrieval_rows={}, agent_rows={
        "a": AgentRow.model_validate({"id": "a", "status": "ok", "stages": {
            "retrieval": {"calls": 1, "prompt_tokens": 600}, "planning": {"calls": 1}}}),
        "b": AgentRow.model_validate({"id": "b", "status": "ok", "stages": {"search": {"calls": 3, "prompt_tokens": 200}}})})
    means = stage_means(run)
    assert "retrieval" not in means and means["search"] == {"calls": 2.0, "prompt_tokens": 400.0}


# --------------------------------------------------------------------------- the docs' recipe

STAGE_MODULE = '''"""A throwaway stage (tests/test_registries.py): count the words of F^t."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest
from orig_local.agent.stages.base import StageContext
from orig_local.agent.stages.refinement import feature_list


class WordCount(BaseModel):
    reason: str = Field("", description="one sentence")
    words: int


def _simulate(req: SimRequest) -> dict:
    return {"reason": "counted", "words": sum(len(b.split()) for _, b in req.blocks())}


SPEC = StageSpec(name="wordcount", doing="counting the descriptors' words", order=75,
                 calls=(Call("wordcount", WordCount, _simulate, reads=frozenset({"feature"})),))


async def count_words(ctx: StageContext, features: list[str]) -> WordCount | None:
    out, _ = await ctx.ask(stage="wordcount", step="count", template="wordcount", schema=WordCount,
                           variables={"text_features": feature_list(features)})
    return out
'''
TEMPLATE = '''Count the words of the visual descriptors. Return JSON: {"reason": "...", "words": 0}
User prompt: {{ prompt }}
{% for f in text_features %}{{ f }}
{% endfor %}'''
STEP = '''        # 6b. A throwaway stage (tests/test_registries.py): the words of F^t.
        if cfg.retrieves:
            from orig_local.agent.stages.wordcount import count_words

            await count_words(ctx, result.text_features)

'''
ANCHOR = "        # 7. Generation"
RUN = r'''
import asyncio, json, sys
import orig_local
from orig_local.agent.agent import Agent
from orig_local.agent.config import AgentConfig
from orig_local.agent.registry import registry
from orig_local.cli.progress import StageLines
from orig_local.llm import make_chat_model
from orig_local.llm.config import ChatConfig
from orig_local.llm.simulated import SimulatedRetriever

class Lines:
    def write(self, s): said.append(s)
    def flush(self): pass
said = []
agent = Agent(chat=make_chat_model(ChatConfig(backend="simulated", model="simulated")),
              retriever=SimulatedRetriever.from_demo_corpus(), config=AgentConfig())
agent.progress = StageLines(stream=Lines())
res = asyncio.run(agent.run(sys.argv[1]))
rec = next(r for r in res.trace.records if r.stage == "wordcount")
print(json.dumps({"package": orig_local.__file__, "stages": res.trace.stages(), "status": res.status,
                  "output": rec.output, "error": rec.error, "features": res.text_features,
                  "progress": "".join(said), "names": list(registry().names)}))
'''


def test_the_docs_recipe_adds_a_stage_in_three_files(tmp_path):
    """README / docs/agent.md "Add a stage": a module with its SPEC, a template, one numbered step
    in Agent.run. Nothing else is touched (no trace list, no simulator branch, no test registry),
    and the simulated agent runs through the new stage, traced, answered, shown in progress."""
    copy = tmp_path / "pkg" / "orig_local"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "agent" / "stages" / "wordcount.py").write_text(STAGE_MODULE)
    (copy / "agent" / "prompts" / "wordcount.jinja").write_text(TEMPLATE)
    agent_py = copy / "agent" / "agent.py"
    source = agent_py.read_text()
    assert source.count(ANCHOR) == 1, "Agent.run's step 7 moved: update this test's anchor (and the recipe)"
    agent_py.write_text(source.replace(ANCHOR, STEP + ANCHOR))
    changed = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()
                     and (not (PACKAGE / p.relative_to(copy)).exists()
                          or (PACKAGE / p.relative_to(copy)).read_bytes() != p.read_bytes()))
    assert changed == ["agent/agent.py", "agent/prompts/wordcount.jinja", "agent/stages/wordcount.py"]

    done = subprocess.run([sys.executable, "-c", RUN, PROMPT], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(copy.parent), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                               "ORIG_HOME": str(tmp_path / "home")}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["package"].startswith(str(copy))  # the copy ran, not the installed package
    assert out["status"] == "ok" and out["error"] is None
    assert out["stages"] == ["bootstrap", "planning", "search", "accumulation", "sufficiency", "refinement",
                             "extension", "wordcount"]
    assert out["output"]["reason"] == "counted"
    assert out["output"]["words"] == sum(len(f.split()) for f in out["features"]) > 0
    assert "counting the descriptors' words" in out["progress"]
    assert out["names"].index("wordcount") == out["names"].index("extension") + 1  # SPEC.order


# --------------------------------------------------------------------------- conditions


def test_a_new_condition_entry_is_accepted_by_orig_study_dry_run(tmp_path, monkeypatch, capsys):
    """One ConditionSpec entry, nothing else: `orig study --dry-run` plans it, and what each run
    needs (backbone server, retrieval-accuracy phase, grid collapse) follows its attributes."""
    from orig_local.cli import main
    from orig_local.study.plan import load_plan

    added = [conditions.ConditionSpec("orig_txt_plain", "text retrieval, a new variant", modalities=("text",)),
             conditions.ConditionSpec("raw_again", "the raw prompt again", uses_backbone=False)]
    for spec in added:
        monkeypatch.setitem(conditions.CONDITIONS, spec.name, spec)
    monkeypatch.setattr(conditions, "CONDITION_NAMES", tuple(conditions.CONDITIONS))
    plan = {"out": str(tmp_path / "study"), "benchmark": "jsonl", "data": str(PACKAGE / "evaluation" / "data" / "mini.jsonl"),
            "limit": 2, "judge": {"preset": "tiny-judge"}, "generator": "tiny-qwen-image",
            "grid": {"condition": ["orig_txt_plain", "raw_again"], "backbone": ["tiny-qwen2.5-vl", "tiny-judge"]}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    runs = {r.label.removesuffix("_tiny-qwen-image"): r for r in load_plan(path).runs}
    assert sorted(runs) == ["orig-txt-plain_tiny-judge", "orig-txt-plain_tiny-qwen2.5-vl", "raw-again"]
    assert runs["raw-again"].backbone is None  # no backbone: one run, not one per backbone
    assert load_plan(path).phases(runs["orig-txt-plain_tiny-judge"])[-1] == "retrieval"
    assert "retrieval" not in load_plan(path).phases(runs["raw-again"])
    assert main(["study", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "orig-txt-plain_tiny-qwen2.5-vl_tiny-qwen-image" in out and "raw-again_tiny-qwen-image" in out
    plan["grid"]["condition"] = ["orig_txt_plian"]
    path.write_text(yaml.safe_dump(plan))
    assert main(["study", str(path), "--dry-run"]) == 2
    assert "unknown condition 'orig_txt_plian'" in capsys.readouterr().err


# --------------------------------------------------------------------------- docs and CLI lists


def test_docs_lists_equal_the_registries():
    from orig_local.evaluation.loaders import LOADERS
    from orig_local.generation import BACKENDS as GENERATORS
    from orig_local.llm import BACKENDS as CHAT
    from orig_local.retrieval import BACKENDS as SEARCH

    readme, agent_md, models_md = _read("README.md"), _read("docs/agent.md"), _read("docs/models.md")
    assert re.search(r"search backends \(([^)]*)\)", readme).group(1).split(", ") == list(SEARCH)
    assert re.search(r"loaders/ \(([^)]*)\)", readme).group(1).split(", ") == list(LOADERS)
    assert re.search(r"generator protocol \+ (.*)", readme).group(1).split(", ") == list(GENERATORS)
    table = readme.split("| condition / switch |")[1].split("\n\n")[0]
    names = [n for row in table.splitlines()[2:] for n in _ticked(row.split("|")[1])]
    assert [n for n in names if not n.startswith("agent.")] == list(conditions.CONDITION_NAMES)
    switches = {n.removeprefix("agent.") for n in names if n.startswith("agent.")} - {"fixed_rounds=N"}
    assert switches == {s.switch for s in registry().specs if s.switch}
    row = next(ln for ln in agent_md.splitlines() if ln.startswith("| `condition` |"))
    assert _ticked(row.split("|")[3]) == list(conditions.CONDITION_NAMES)
    stages = re.search(r"`stage` \(([^;)]*)", agent_md).group(1)
    assert [s.strip() for s in stages.split("|")] == list(registry().names)
    templates = re.search(r"One template per step in `orig_local/agent/prompts/`: (.*?) \(the", agent_md, re.S)
    assert sorted(_ticked(templates.group(1))) == registry().templates()
    chat = models_md.split("## Chat backends")[1].split("\n\n")[2]
    assert [_ticked(row)[0] for row in chat.splitlines()[2:]] == list(CHAT)


def test_cli_help_lists_the_registries(capsys):
    from orig_local.cli import main
    from orig_local.evaluation.loaders import LOADERS
    from orig_local.retrieval import BACKENDS as SEARCH

    for argv, names in ((["eval", "--help"], LOADERS), (["search", "--help"], SEARCH)):
        with pytest.raises(SystemExit):
            main(argv)
        help_text = " ".join(capsys.readouterr().out.split())
        assert ", ".join(names) in help_text, argv
