"""Stage building blocks: strict templates (every one renders), prompt folders for ablations,
final-prompt cleaning, citation repair, knowledge provenance, trace totals."""

from __future__ import annotations

import shutil

import jinja2
import pytest
from agent_support import PROMPT, make_agent

from orig_local.agent.config import AgentConfig
from orig_local.agent.knowledge import KnowledgeBase, Source
from orig_local.agent.prompting import PACKAGE_PROMPTS, PromptLibrary
from orig_local.agent.registry import check_reads, registry
from orig_local.agent.stages.base import StageContext
from orig_local.agent.stages.extension import finalize
from orig_local.agent.stages.refinement import Reference, RefinementResult
from orig_local.agent.text import clean_prompt, limit_words
from orig_local.agent.trace import StageRecord, Trace

# sample variables of every template, as the stages declare them (Call.example in each SPEC)
VARIABLES = registry().examples()


def test_every_template_renders_and_has_variables_listed():
    lib = PromptLibrary()
    assert sorted(VARIABLES) == lib.names() == PromptLibrary.required()
    for name, variables in VARIABLES.items():
        text = lib.render(name, prompt=PROMPT, **variables)
        assert text and "{{" not in text and "{%" not in text
        if name in registry().by_template:  # the sample data is what the stage declares it reads
            check_reads(name, text)
            assert "<data" in text or not registry().call(name).reads, f"{name}: a sample without data"
        if name not in ("system", "assemble"):
            assert "JSON" in text and PROMPT in text
            # instruction first, evidence last: the prompt line comes after the instruction
            assert text.index("JSON") < text.index(PROMPT)


def test_missing_variable_is_an_error():
    with pytest.raises(jinja2.UndefinedError):
        PromptLibrary().render("planning", prompt=PROMPT)


def test_prompt_folder_for_ablations(tmp_path):
    folder = tmp_path / "prompts"
    shutil.copytree(PACKAGE_PROMPTS, folder)
    (folder / "enhance.jinja").write_text("ABLATED {{ prompt }} {{ max_words }} JSON")
    assert PromptLibrary(folder).render("enhance", prompt="p", max_words=3) == "ABLATED p 3 JSON"
    # One policy for every role (orig_local.templates): a file left out of the copy falls back
    # to the packaged one; a file no template is named like is an error, never ignored.
    (folder / "planning.jinja").unlink()
    lib = PromptLibrary(folder)
    assert lib.overridden() == sorted(set(PromptLibrary.required()) - {"planning"})
    assert lib.render("planning", **VARIABLES["planning"], prompt="p") == PromptLibrary().render(
        "planning", **VARIABLES["planning"], prompt="p")
    (folder / "planing.jinja").write_text("typo")
    with pytest.raises(FileNotFoundError, match="planing"):
        PromptLibrary(folder)


async def test_agent_uses_a_copied_prompt_folder(tmp_path):
    folder = tmp_path / "prompts"
    shutil.copytree(PACKAGE_PROMPTS, folder)
    (folder / "enhance.jinja").write_text("Expand, ablated. JSON. User prompt: {{ prompt }} {{ max_words }}")
    agent = make_agent(condition="prompt_enhanced")
    agent.prompts = PromptLibrary(folder)
    res = await agent.run(PROMPT)
    assert "ablated" in res.trace.records[0].messages[1]["parts"][0]


@pytest.mark.parametrize("raw,clean", [
    ("```json\nA **bold** tower\n```", "A bold tower"),
    ("<prompt>A tower</prompt>", "A tower"),
    ("## Final prompt\n- teal bands\n- six panes", "Final prompt teal bands six panes"),
    ("Final prompt: A tower at dusk.", "A tower at dusk."),
    ("See [the page](https://x) now", "See the page now"),
    ("Tall tower. # Lantern room Six panes, item #3.", "Tall tower. Lantern room Six panes, item #3."),
])
def test_clean_prompt_leaves_no_markup(raw, clean):
    assert clean_prompt(raw) == clean


def test_limit_words_cuts_at_a_sentence():
    text = " ".join(f"Sentence {i} has five words." for i in range(100))
    cut, before = limit_words(text, 300)
    assert before == 500 and len(cut.split()) <= 300 and cut.endswith(".")


def _ctx(**config) -> StageContext:
    return StageContext(chat=None, retriever=None, config=AgentConfig(**config), prompts=PromptLibrary(),
                        trace=Trace(), prompt=PROMPT, knowledge=KnowledgeBase())


def test_finalize_cites_every_reference_within_budget():
    refined = RefinementResult(references=[Reference(id="V1", contributes="the tower"),
                                           Reference(id="V2", contributes="the lantern")])
    long = "A tower by the sea, as in reference image 2. " + "Very detailed words here. " * 200
    out = finalize(_ctx(max_prompt_words=120), long, refined, extended=True)
    # Numbers follow the order the text cites them: V2 (cited first) becomes reference image 1,
    # the forgotten V1 gets a citing sentence as reference image 2.
    assert out.references == ["V2", "V1"] and out.added_citations == [2]
    assert "as in reference image 1" in out.final_prompt
    assert "Reference image 2 shows the tower" in out.final_prompt
    assert out.words <= 120 and out.words_before_cut > out.words


def test_knowledge_dedups_and_keeps_provenance():
    from PIL import Image

    k = KnowledgeBase()
    src = Source(url="https://a", query="q", round=2)
    assert k.add_text("Teal bands.", src).id == "T1"
    assert k.add_text("  teal   BANDS. ", src) is None
    img = Image.new("RGB", (8, 8))
    assert k.add_image(img, "abc", src).id == "V1" and k.add_image(img, "abc", src) is None
    data = k.to_json()
    assert data["texts"][0]["source"]["round"] == 2 and "image" not in data["images"][0]
    assert [(e.text, e.evidence) for e in k.text_entries()] == [("Teal bands.", ["T1"])]


def test_trace_totals_per_stage():
    t = Trace()
    t.add(StageRecord(stage="planning", step="plan", attempts=2, prompt_tokens=100, completion_tokens=10,
                      latency_s=1.5, invalid_replies=["x"]))
    t.add(StageRecord(stage="search", step="search_text", searches_text=1, latency_s=0.5,
                      failures=[{"kind": "error"}], error="no results"))
    t.add(StageRecord(stage="planning", step="plan", attempts=1, prompt_tokens=50, completion_tokens=5))
    totals = t.totals()
    assert totals["planning"].calls == 2 and totals["planning"].prompt_tokens == 150
    assert totals["planning"].invalid_replies == 1 and totals["planning"].seconds == 1.5
    assert totals["search"].calls == 0 and totals["search"].searches_text == 1
    assert totals["search"].failures == 1 and totals["search"].errors == 1
    assert t.grand_total().prompt_tokens == 150
    assert t.to_json()["totals"]["planning"]["completion_tokens"] == 15


def test_config_is_strict_and_rounds_resolve():
    from orig_local.config import load_config
    from orig_local.configbase import ConfigError

    cfg = load_config(overrides=["agent.condition=orig_img", "agent.fixed_rounds=4", "agent.max_rounds=2"])
    assert cfg.agent.round_limit == 4 and cfg.agent.modalities == ("image",)
    with pytest.raises(ConfigError):
        load_config(overrides=["agent.bootstrapp=false"])
    with pytest.raises(ConfigError):
        load_config(overrides=["agent.condition=oracle_plus"])
