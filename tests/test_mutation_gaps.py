"""Behaviour pinned at the points where hand mutations survived the suite (issue 21 point 5):
interval coverage, merging overlapping shards, the P̂ word budget, the redirect limit, the
400 status boundary, the chat cache key, the study's exit after a failed report, the
tensor-parallel fit check, and reusing --out with another generator."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from orig_local.evaluation.scoring import PromptScore, _interval, bootstrap_ci

REPO = Path(__file__).resolve().parents[1]
MINI = str(REPO / "orig_local" / "evaluation" / "data" / "mini.jsonl")


# --------------------------------------------------------------------------- 1. interval coverage


@pytest.mark.parametrize("ci", [0.95, 0.90, 0.80])
def test_the_interval_covers_exactly_its_share_of_a_known_distribution(ci):
    values = (np.arange(100_000) + 0.5) / 100_000  # uniform on (0, 1): quantile q is q itself
    lo, hi = _interval(values, ci)
    assert lo == pytest.approx((1 - ci) / 2, abs=1e-4) and hi == pytest.approx(1 - (1 - ci) / 2, abs=1e-4)
    covered = np.mean((values >= lo) & (values <= hi))
    assert covered == pytest.approx(ci, abs=2e-4)


def test_a_95_percent_bootstrap_interval_of_a_mean_has_the_normal_width():
    rng = np.random.default_rng(7)
    outcomes = rng.permutation([True] * 200 + [False] * 200)  # p = 0.5 exactly, n = 400
    prompts = [PromptScore(f"p{i}", "animal", int(o), 1) for i, o in enumerate(outcomes)]
    lo, hi = bootstrap_ci(prompts, ["animal"], n_boot=4000, seed=3)["animal"]
    se = (0.25 / 400) ** 0.5  # 0.025
    # 95 %: 2 x 1.96 se = 0.098; a 90 % interval labelled 95 % would be 2 x 1.645 se = 0.082
    assert hi - lo == pytest.approx(2 * 1.96 * se, abs=0.006)
    assert lo < 0.5 < hi


# --------------------------------------------------------------------------- 2. merge


def _rows(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def test_merging_overlapping_shards_keeps_one_row_per_id_and_prefers_a_finished_one(tmp_path):
    from orig_local.evaluation.merge import merge_runs

    run = tmp_path / "run"
    run.mkdir()
    a = [{"id": "x1", "status": "ok", "v": "a"}, {"id": "x2", "status": "failed", "error": "E: down", "v": "a"}]
    b = [{"id": "x2", "status": "ok", "v": "b"}, {"id": "x3", "status": "ok", "v": "b"},
         {"id": "x1", "status": "failed", "error": "E: down", "v": "b"}]
    (run / "agent.shard-0-of-2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in a))
    (run / "agent.shard-1-of-2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in b))
    counts = merge_runs([run])
    merged = _rows(run / "agent.jsonl")
    assert counts == {"agent.jsonl": 3} and sorted(r["id"] for r in merged) == ["x1", "x2", "x3"]
    by_id = {r["id"]: r for r in merged}
    assert by_id["x1"]["status"] == "ok" and by_id["x2"]["status"] == "ok"  # never a failed row over an ok one
    assert not list(run.glob("agent.shard-*.jsonl"))  # absorbed shards moved aside, not read twice
    assert merge_runs([run]) == {"agent.jsonl": 3}  # merging again changes nothing


# --------------------------------------------------------------------------- 3. P̂ word budget


def test_the_word_budget_is_exact():
    from orig_local.agent.text import bound_prompt

    words = [f"w{i}" for i in range(40)]
    exactly = " ".join(words[:30]) + "."
    assert bound_prompt(exactly, 30, 10_000) == (exactly, False)  # 30 words fit a 30-word budget
    text, cut = bound_prompt(" ".join(words[:31]) + ".", 30, 10_000)  # one word over, one sentence
    assert cut and len(text.split()) == 30
    two = " ".join(words[:20]) + ". " + " ".join(words[20:30]) + ". " + "tail word."
    text, cut = bound_prompt(two, 30, 10_000)  # whole sentences up to exactly 30 words
    assert cut and len(text.split()) == 30 and text.endswith("w29.")


# --------------------------------------------------------------------------- 4-5. redirects, status


@pytest.fixture(scope="module")
def web():
    from orig_local.retrieval.testserver import LoopbackServer, article_html, redirect, respond

    page = article_html("Veltrane Harbor Lighthouse", ["The lighthouse has teal and orange bands. " * 12]).encode()
    routes = {f"/hop{i}": redirect(f"/hop{i + 1}") for i in range(6)}
    routes["/hop6"] = respond(page)
    routes["/s399"] = respond(page, status=399)
    routes["/s400"] = respond(page, status=400)
    with LoopbackServer(routes) as server:
        yield server


async def _get(url: str, max_redirects: int):
    from orig_local.retrieval.config import FetchConfig
    from orig_local.retrieval.httpfetch import HttpSession

    session = HttpSession(FetchConfig(allow_loopback=True, per_host_interval_s=0, timeout_s=10))
    try:
        return await session.get(url, max_bytes=1_000_000, max_redirects=max_redirects, timeout_s=10)
    finally:
        await session.aclose()


def test_redirects_up_to_the_limit_are_followed_and_one_more_is_not(web):
    from orig_local.retrieval.base import FetchFailure

    ok = asyncio.run(_get(web.url("/hop1"), max_redirects=5))  # hop1 -> ... -> hop6: 5 redirects
    assert not isinstance(ok, FetchFailure) and ok.final_url.endswith("/hop6"), ok
    before = web.hits.get("/hop6", 0)
    over = asyncio.run(_get(web.url("/hop0"), max_redirects=5))  # 6 redirects
    assert isinstance(over, FetchFailure) and over.kind == "redirects", over
    assert web.hits.get("/hop6", 0) == before  # the sixth redirect was not followed


@pytest.mark.parametrize("status,is_page", [(399, True), (400, False)])
def test_a_page_is_content_below_400_and_an_error_from_400(web, status, is_page):
    from orig_local.retrieval.base import FetchFailure, Page
    from orig_local.retrieval.config import FetchConfig, ReaderConfig
    from orig_local.retrieval.httpfetch import HttpSession
    from orig_local.retrieval.reader import ParseWorkers, WebPageReader

    async def read():
        session = HttpSession(FetchConfig(allow_loopback=True, per_host_interval_s=0, timeout_s=10))
        pool = ParseWorkers(1)
        try:
            return await WebPageReader(ReaderConfig(timeout_s=20, min_chars=50), session, pool).read(
                web.url(f"/s{status}"))
        finally:
            pool.close()
            await session.aclose()

    result = asyncio.run(read())
    if is_page:
        assert isinstance(result, Page) and "teal and orange" in result.text, result
    else:
        assert isinstance(result, FetchFailure) and result.kind == "http_error" and "400" in result.detail


# --------------------------------------------------------------------------- 6. chat cache key


def test_the_chat_cache_key_includes_the_schema():
    from pydantic import BaseModel

    from orig_local.llm import make_chat_model, user
    from orig_local.llm.config import ChatConfig

    class A(BaseModel):
        answer: bool

    class B(BaseModel):
        answer: str

    model = make_chat_model(ChatConfig(backend="scripted", model="s", script=None), cache_dir=None)
    msgs = [user("is it red?")]
    keys = {model.cache_key(msgs, schema, 0.0, 16, None) for schema in (None, A, B)}
    assert len(keys) == 3  # a reply cached for one schema is never served for another
    assert model.cache_key(msgs, A, 0.0, 16, None) == model.cache_key(msgs, A, 0.0, 16, None)


# --------------------------------------------------------------------------- 7. study exit status


@pytest.mark.parametrize("report_rc,expected", [(0, 0), (1, 1)])
def test_a_study_whose_final_report_fails_does_not_exit_0(tmp_path, report_rc, expected):
    from orig_local.study.plan import parse_plan
    from orig_local.study.runner import StudyRunner
    from orig_local.study.status import study_status

    plan = parse_plan({"out": str(tmp_path / "study"), "benchmark": "jsonl", "data": MINI, "limit": 2,
                       "serve": False, "judge": {"preset": "tiny-judge"}, "generator": "tiny-qwen-image",
                       "runs": [{"label": "d", "condition": "direct"}]})
    run = plan.run_dir(plan.runs[0])
    run.mkdir(parents=True)
    ids = [json.loads(ln)["id"] for ln in Path(MINI).read_text().splitlines()[:2]]
    for phase in ("agent", "generate", "judge"):  # every phase finished for every item
        (run / f"{phase}.jsonl").write_text("".join(json.dumps({"id": i, "status": "ok"}) + "\n" for i in ids))
    runner = StudyRunner(plan, echo=lambda _text: None)
    calls = []

    def fake(cmd, log_path, **event):
        calls.append(cmd)
        return report_rc

    runner.run_command = fake  # the report is the one step left; its exit status is the point
    assert all(c.complete for st in study_status(plan, ids).values() for c in st.values())
    assert runner.run() == expected
    assert any("report" in cmd for cmd in calls)


# --------------------------------------------------------------------------- 8. tensor-parallel fit


@pytest.mark.parametrize("tp,devices,ok", [(2, [0, 1], True), (3, [0, 1], False), (1, [0], True), (2, [0], False)])
def test_tensor_parallel_fits_exactly_the_server_gpus(tmp_path, tp, devices, ok):
    from orig_local.configbase import ConfigError
    from orig_local.study.plan import load_plan

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({
        "out": "o", "benchmark": "jsonl", "data": MINI, "generator": "tiny-qwen-image",
        "judge": {"preset": "qwen2.5-vl-72b"}, "runs": [{"condition": "orig", "backbone": "qwen2.5-vl-72b"}],
        "gpus": {"devices": devices, "tensor_parallel": {"qwen2.5-vl-72b": tp}}}))
    if ok:
        load_plan(path)
    else:
        with pytest.raises(ConfigError, match=rf"the plan gives servers {len(devices)} GPU\(s\) but .*"
                                              rf"tensor_parallel_size={tp}\)"):
            load_plan(path)


# --------------------------------------------------------------------------- 9. another generator


def test_reusing_out_with_another_generator_is_refused_on_the_cli(tmp_path, capsys):
    from orig_local.cli import main

    out = tmp_path / "run"
    common = ["-q", "eval", "--benchmark", "jsonl", "--data", MINI, "--condition", "direct", "--out", str(out),
              "-s", "cache_dir=''"]
    assert main([*common, "--phase", "agent", "--generator", "tiny-qwen-image"]) == 0
    before = (out / "run.json").read_text()
    assert main([*common, "--phase", "agent", "--generator", "tiny-sd3"]) == 2
    err = capsys.readouterr().err
    assert "generator='tiny-qwen-image'" in err and "--generator tiny-qwen-image" in err
    assert (out / "run.json").read_text() == before
