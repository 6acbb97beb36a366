"""A scripted backbone (``backend: scripted``, ``script: FILE``) that runs out of replies fails
the request that found none, as a chat error the asking stage records, saying how many replies
the script had; the run goes on and counts the item failed, never crashes or looks done."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from orig_local.cli import main
from orig_local.evaluation.rundir import read_phase
from orig_local.llm import ChatError
from orig_local.llm.config import ChatConfig
from orig_local.llm.messages import user
from orig_local.llm.scripted import ScriptedChatModel, ScriptExhausted

MINI = Path(__file__).resolve().parents[1] / "orig_local" / "evaluation" / "data" / "mini.jsonl"


def test_running_out_is_a_chat_error_that_counts_the_replies(tmp_path):
    script = tmp_path / "replies.yaml"
    script.write_text("- first\n- second\n")
    model = ScriptedChatModel(ChatConfig(backend="scripted", model="s", script=str(script), cache=False))

    async def ask(n):
        return [await model.chat([user(f"q{i}")]) for i in range(n)]

    assert [r.text for r in asyncio.run(ask(2))] == ["first", "second"]
    for request in (3, 4):  # each later request says which one it was
        with pytest.raises(ScriptExhausted) as info:
            asyncio.run(ask(1))
        assert isinstance(info.value, ChatError)
        assert f"{script} has 2 replies" in str(info.value) and f"request #{request}" in str(info.value)
    in_code = ScriptedChatModel(ChatConfig(backend="scripted", model="s", cache=False), replies=["only"])
    asyncio.run(in_code.chat([user("a")]))
    with pytest.raises(ScriptExhausted, match="has 1 reply and"):  # over-consumption still raises at chat()
        asyncio.run(in_code.chat([user("b")]))


def test_orig_chat_with_a_spent_script_exits_1_with_one_line(tmp_path, capsys):
    script = tmp_path / "empty.yaml"
    script.write_text("[]\n")
    rc = main(["-q", "chat", "hi", "-s", "backbone.backend=scripted", "-s", f"backbone.script={script}"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err and f"{script} has 0 replies" in err, err


def test_eval_records_exhaustion_on_the_items_that_found_no_reply(tmp_path):
    """prompt_enhanced asks the backbone once per item: a one-reply script answers the first
    item; the others fail on their row (exit 1), and the run finishes."""
    script = tmp_path / "enhance.jsonl"
    script.write_text(json.dumps(json.dumps({"prompt": "a teal and orange lighthouse at dusk"})) + "\n")
    out = tmp_path / "run"
    rc = main(["-q", "eval", "--offline", "--benchmark", "jsonl", "--data", str(MINI), "--condition",
               "prompt_enhanced", "--phase", "agent", "--out", str(out), "-s", "backbone.backend=scripted",
               "-s", f"backbone.script={script}", "-s", "backbone.cache=false", "-s", "agent.concurrency=1"])
    assert rc == 1
    rows = read_phase(out, "agent")
    n_items = sum(1 for line in MINI.read_text().splitlines() if line.strip())
    assert len(rows) == n_items  # every item has its row: none lost to a crash
    statuses = sorted(row["status"] for row in rows.values())
    assert statuses == ["failed"] * (n_items - 1) + ["ok"]
    failed = [row for row in rows.values() if row["status"] == "failed"]
    assert all("ScriptExhausted" in row["error"] and "has 1 reply" in row["error"] for row in failed), failed


def test_a_recorded_exhaustion_counts_as_a_backbone_that_did_not_answer():
    from orig_local.llm.base import is_transport_error

    error = ScriptExhausted("the script s.yaml has 2 replies and this is request #3")
    assert is_transport_error(error)
    assert is_transport_error(f"{type(error).__name__}: {error}")  # as a stage record keeps it
    assert not is_transport_error("ChatRequestRefused: too long")  # the server answered that one
    assert not is_transport_error("NoScriptedReply: no stage declares it")  # an answer it cannot give
