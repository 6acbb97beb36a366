"""The cost plan's reference figures describe the package as it is (templates, agent defaults),
the merge call is priced where K is expected to need it, and pictures are priced at the pixel
cap the run resolves for its backbone (the record the agent's budgets read)."""

from __future__ import annotations

import shutil

import pytest

from orig_local.agent import prompting
from orig_local.config import load_config
from orig_local.evaluation import costplan, costref
from orig_local.llm.tokens import DEFAULT_MAX_PIXELS, default_counter, image_tokens
from orig_local.resolved import ResolvedModel, ResolvedModels

REF = costref.load_reference()


def _cfg(*sets: str):
    return load_config([], ["backbone.preset=qwen2.5-vl-7b", "generator.preset=qwen-image-edit-2509", *sets])


def _counter():
    counter = default_counter()
    if counter.exact != REF.get("exact"):
        pytest.skip(f"the reference was counted with {REF.get('counter')}; here only {counter.name} is available")
    return counter


def test_the_shipped_reference_matches_the_templates_and_defaults():
    problems = costref.drift(REF, _counter())
    assert not problems, ("orig_local/evaluation/cost_reference.json is stale:\n  " + "\n  ".join(problems)
                          + f"\nregenerate it: {costref.REGENERATE}")
    # every step the plan prices has its measured figures and its template's sample
    assert set(REF["sample_tokens"]) == {r["template"] for r in REF["per_call"].values()}
    assert "accumulation/consolidate" in REF["per_call"]


def test_a_longer_system_turn_makes_the_reference_stale(tmp_path, monkeypatch):
    """The cut that left the last reference 31 tokens a call high, undone: every template's
    sample request moves by as much, and each is named."""
    copy = tmp_path / "prompts"
    shutil.copytree(prompting.PACKAGE_PROMPTS, copy)
    system = copy / "system.jinja"
    system.write_text(system.read_text(encoding="utf-8").strip() + " Keep each answer short, exact and"
                      " complete; say plainly when the evidence does not tell, and never guess a detail that"
                      " no block states.\n", encoding="utf-8")
    monkeypatch.setattr(prompting, "PACKAGE_PROMPTS", copy)
    problems = costref.drift(REF, _counter())
    assert len(problems) == len(REF["sample_tokens"]), problems
    assert all(p.startswith("template ") and "per call" in p for p in problems)


def test_drift_tolerance_and_settings():
    counter = _counter()
    shifted = {**REF, "sample_tokens": {t: n + costref.SAMPLE_TOLERANCE for t, n in REF["sample_tokens"].items()}}
    assert costref.drift(shifted, counter) == []  # within the tolerance: still current
    one = dict(REF["sample_tokens"], planning=REF["sample_tokens"]["planning"] + costref.SAMPLE_TOLERANCE + 1)
    assert [p.split(":")[0] for p in costref.drift({**REF, "sample_tokens": one}, counter)] == ["template planning"]
    older = {**REF, "settings": {**REF["settings"], "max_page_tokens": 800, "images": {"image_filter": None}}}
    assert [p.split(":")[0] for p in costref.drift(older, counter)] == [
        "agent default max_page_tokens", "agent default images"]


def _merge(cfg, reference=None, **kw):
    steps = {s.step: s for s in costplan.agent_steps(cfg, reference, **kw)}
    return steps.get("accumulation/consolidate")


def test_merge_call_priced_where_k_reaches_the_threshold():
    assert _merge(_cfg("agent.consolidate_min_tokens=0")).calls == pytest.approx(1.8)  # every round
    assert _merge(_cfg("agent.consolidate_min_tokens=0", "agent.fixed_rounds=3")).calls == 3
    never = _merge(_cfg("agent.consolidate_min_tokens=1000000", "agent.fixed_rounds=10"))
    assert never.calls == 0 and never.prefill == 0 and "ESTIMATE" in never.note
    assert _merge(_cfg("agent.consolidate=false")) is None
    # the default follows the reference: K's size after each round against 500
    sizes = REF["knowledge_at_round"]
    default = _merge(_cfg("agent.fixed_rounds=2"))
    assert default.calls == sum(1 for k in sizes[:2] if k >= 500)
    assert f"{sizes[0]:,}" in default.note and "consolidate_min_tokens=500" in default.note
    # a K that reaches it in round 2 (and grows by as much each later round)
    grown = {**REF, "knowledge_at_round": [300, 600]}
    assert _merge(_cfg(), grown).calls == pytest.approx(0.8)  # 1.8 rounds: round 2 counts 0.8
    assert _merge(_cfg("agent.fixed_rounds=4"), grown).calls == 3
    assert _merge(_cfg("agent.fixed_rounds=4", "agent.consolidate_min_tokens=850"), grown).calls == 2  # 900, 1200
    per_call = REF["per_call"]["accumulation/consolidate"]
    assert _merge(_cfg("agent.fixed_rounds=4"), grown).prefill == 3 * per_call["text"]


def test_dry_run_says_the_merge_call_is_an_estimate(capsys, tmp_path):
    from orig_local.cli import main
    from orig_local.evaluation.data import mini_path

    assert main(["eval", "--dry-run", "--data", str(mini_path()), "--benchmark", "jsonl", "--out", str(tmp_path),
                 "--backbone", "qwen2.5-vl-7b", "-s", "agent.consolidate_min_tokens=0"]) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if "accumulation/consolidate" in ln)
    assert "| 1.8 |" in row and "[1]" in row
    assert "[1] ESTIMATE: merge call in rounds where K is expected to reach consolidate_min_tokens=0" in out


def test_pictures_priced_at_the_resolved_backbone_cap():
    cfg = _cfg()
    models = ResolvedModels.from_config(cfg)
    assert models.backbone is not None
    assert costplan.picture_cap(cfg, "backbone", models) == (models.backbone.max_pixels, "")
    assert models.backbone.image_tokens == models.backbone.max_pixels // (28 * 28)  # what the agent budgets
    # the plan reads the record it is given: a smaller cap, smaller pictures
    small = ResolvedModels(backbone=ResolvedModel(role="backbone", preset="x", hub_id="x", revision=None, path="x",
                                                  max_pixels=28 * 28 * 64))
    full_ext = "agent.images.extension=null"
    big = {s.step: s for s in costplan.agent_steps(_cfg(full_ext))}["extension/write_prompt"]
    low = {s.step: s for s in costplan.agent_steps(_cfg(full_ext), models=small)}["extension/write_prompt"]
    assert big.images == low.images == 3
    # a 1024x768 picture: 1,008 tokens under the 7B's cap, 64 under a 64-patch one
    assert big.prefill - low.prefill == 3 * (image_tokens(1024, 768) - image_tokens(1024, 768, max_pixels=28 * 28 * 64))
    assert big.prefill - low.prefill == 3 * (1008 - 63)
    tiny = _cfg("backbone.preset=tiny-qwen2.5-vl")
    assert costplan.picture_cap(tiny)[0] == ResolvedModels.from_config(tiny).backbone.max_pixels == 50176


@pytest.mark.parametrize(("sets", "why"), [
    (["backbone.preset=no-such-preset"], "backbone preset 'no-such-preset' unknown"),
    (["backbone.backend=simulated"], "a stand-in backbone (simulated)"),
])
def test_an_unresolved_backbone_is_priced_at_the_default_cap_and_says_so(sets, why, capsys, tmp_path):
    cap, note = costplan.picture_cap(load_config([], sets))
    assert cap == DEFAULT_MAX_PIXELS and note.startswith(why) and "default cap" in note
    from orig_local.cli import main
    from orig_local.evaluation.data import mini_path

    assert main(["eval", "--dry-run", "--data", str(mini_path()), "--benchmark", "jsonl", "--out", str(tmp_path),
                 *[x for s in sets for x in ("-s", s)]]) == 0
    agent_line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  agent"))
    assert why in agent_line


def test_unknown_judge_preset_falls_back_and_says_so():
    cfg = _cfg("judge.preset=no-such-judge")
    judge = costplan.estimate(cfg, ["judge"], None, n_items=2)[0]
    assert costplan.picture_cap(cfg, "judge")[0] == DEFAULT_MAX_PIXELS
    items = [type("It", (), {"questions": [1, 2]})()]
    judge = costplan.estimate(cfg, ["judge"], items)[0]
    assert judge.calls == 2 and "judge preset 'no-such-judge' unknown" in judge.note
