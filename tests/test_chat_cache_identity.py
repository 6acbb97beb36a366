"""The chat cache cannot serve another model's answers: its key names the model's revision and
server, a hit is checked against what /v1/models reports now, and a run says how many replies
came from the cache. Against real loopback servers."""

from __future__ import annotations

import asyncio
import json

from openai_loopback import OpenAILoopback
from PIL import Image

from orig_local.evaluation.items import BenchmarkItem, Question
from orig_local.evaluation.jsonl_store import JsonlStore
from orig_local.evaluation.judge import Judge
from orig_local.evaluation.phases.agent import run_agent_phase
from orig_local.evaluation.phases.common import AgentOutput
from orig_local.evaluation.phases.judge import run_judge_phase
from orig_local.llm import ChatConfig, make_chat_model, user


def _ask(config: ChatConfig, cache_dir) -> tuple[str, bool]:
    async def go():
        model = make_chat_model(config, cache_dir=cache_dir)
        try:
            reply = await model.chat([user("What is on the label?")])
        finally:
            await model.aclose()
        return reply.text, reply.cached

    return asyncio.run(go())


def test_one_key_per_model_identity(tmp_path):
    answers = iter(f"answer {i}" for i in range(100))
    a = OpenAILoopback(model="m", reply=lambda body: next(answers)).start()
    b = OpenAILoopback(model="m", reply=lambda body: next(answers)).start()
    try:
        base = ChatConfig(backend="openai", model="m", base_url=a.base_url, backoff_s=0.01)
        seen = {}
        for name, cfg in {
            "revision None": base,
            "revision abc123": base.model_copy(update={"revision": "abc123"}),
            "revision def456": base.model_copy(update={"revision": "def456"}),
            "another server": base.model_copy(update={"base_url": b.base_url}),
        }.items():
            text, cached = _ask(cfg, tmp_path)
            assert not cached, f"{name}: served another configuration's reply"
            seen[name] = text
            assert _ask(cfg, tmp_path) == (text, True)  # the same configuration: from the cache
        assert len(set(seen.values())) == 4
    finally:
        a.stop()
        b.stop()


def test_a_reserved_checkpoint_under_the_same_name_is_asked_again(tmp_path):
    server = OpenAILoopback(model="m", reply=lambda body: "old weights").start()
    cfg = ChatConfig(backend="openai", model="m", base_url=server.base_url, backoff_s=0.01)
    try:
        assert _ask(cfg, tmp_path) == ("old weights", False)
        assert _ask(cfg, tmp_path) == ("old weights", True)
        # the same name, port and config, but the server now reports another context length
        # (another checkpoint or serving setting): the old reply is not served
        server.max_model_len = 8192
        server.reply = lambda body: "new weights"
        assert _ask(cfg, tmp_path) == ("new weights", False)
    finally:
        server.stop()
    # the server gone: what it last served replays from the cache (key: name, revision, server)
    assert _ask(cfg, tmp_path) == ("new weights", True)


def test_the_run_says_how_many_replies_came_from_the_cache(tmp_path):
    server = OpenAILoopback(model="judge", reply=lambda body: "true").start()
    items = [BenchmarkItem(id=f"p{i}", prompt="p", category="others",
                           questions=[Question(id=f"q{k}", text=f"True or False: {k}") for k in range(3)])
             for i in range(2)]
    cfg = ChatConfig(backend="openai", model="judge", base_url=server.base_url, backoff_s=0.01)
    summaries = []
    try:
        for n in range(2):
            run = tmp_path / f"run{n}"
            run_agent_phase(items, run, lambda it: AgentOutput(final_prompt=it.prompt), progress=False)
            (run / "images").mkdir()
            gen = JsonlStore(run / "generate.jsonl")
            for it in items:
                Image.new("RGB", (32, 32), (200, 0, 0)).save(run / "images" / f"{it.id}.png")
                gen.append({"id": it.id, "category": it.category, "image": f"images/{it.id}.png", "error": None})
            judge = Judge(make_chat_model(cfg, cache_dir=tmp_path / "cache"), answer_format="text")
            summaries.append(run_judge_phase(items, run, judge, progress=False, close=True))
    finally:
        server.stop()
    assert [(s["replies"], s["from_cache"]) for s in summaries] == [(6, 0), (6, 6)]
    json.dumps(summaries[1].to_dict())  # as run.json records it
