"""The agent phase driving the real ORIG agent (scripted backbone, simulated demo-corpus search)."""

import json

import pytest

from orig_local.agent.agent import Agent
from orig_local.agent.config import AgentConfig
from orig_local.config import Config
from orig_local.evaluation.agent_adapter import make_agent_fn
from orig_local.evaluation.data import mini_path
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.phases.agent import run_agent_phase
from orig_local.evaluation.phases.retrieval_accuracy import run_retrieval_phase
from orig_local.evaluation.rundir import read_phase
from orig_local.llm.config import ChatConfig
from orig_local.llm.scripted import ScriptedChatModel
from orig_local.llm.simulated import SimulatedRetriever, orig_responder


def _agent(condition):
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="scripted"), replies=[orig_responder()], cycle=True)
    retriever = SimulatedRetriever.from_demo_corpus() if condition.startswith("orig") else None
    return Agent(chat=chat, retriever=retriever, config=AgentConfig(condition=condition))


@pytest.mark.parametrize("condition", ["orig", "oracle"])
def test_agent_phase_with_the_orig_agent(tmp_path, condition):
    items = load_benchmark("jsonl", mini_path())
    config = Config()
    config.agent.condition = condition
    config.eval.benchmark = "jsonl"
    fn, aclose = make_agent_fn(config, agent=_agent(condition))
    run = tmp_path / condition
    summary = run_agent_phase(items, run, fn, progress=False, concurrency=3, aclose=aclose)
    assert summary["errors"] == 0
    rows = read_phase(run, "agent")
    # every item once; the file is in completion order (issue 20.2), readers key rows by id
    lines = [json.loads(x)["id"] for x in (run / "agent.jsonl").read_text().splitlines()]
    assert sorted(lines) == sorted(i.id for i in items) and set(rows) == {i.id for i in items}
    row = rows["mini_landmark"]
    assert row["final_prompt"] and row["error"] is None
    assert all((run / r).is_file() for r in row["references"])
    trace = json.loads((run / row["trace"]).read_text())
    assert trace["final_prompt"] == row["final_prompt"]
    assert row["stages"] and all("prompt_tokens" in t for t in row["stages"].values())
    if condition == "orig":
        assert row["iterations"] >= 1 and "planning" in row["stages"]
        evidence = json.loads((run / row["evidence"]).read_text())
        assert any("teal" in t.lower() for t in evidence["texts"])
        # retrieval accuracy over the agent's evidence
        from _eval_fakes import scripted_judge

        judge = scripted_judge(answer_format="text",
                               reply=lambda m, s: "true" if "teal" in m[-1].parts[-1].lower() else "false")
        run_retrieval_phase(items[:1], run, judge, progress=False)
        acc = read_phase(run, "retrieval")["mini_landmark"]
        assert acc["error"] is None and 0 < acc["accuracy"] <= 1
