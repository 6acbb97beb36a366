"""Citation-safe, bounded final prompts (issue 10 point 3) and reasoning-first schemas
(point 5)."""

from __future__ import annotations

import re

import pytest
from agent_support import PROMPT

from orig_local.agent.budget import EstimatedTokens
from orig_local.agent.config import AgentConfig
from orig_local.agent.knowledge import KnowledgeBase
from orig_local.agent.prompting import PromptLibrary
from orig_local.agent.stages.base import StageContext
from orig_local.agent.stages.extension import finalize
from orig_local.agent.stages.refinement import Reference, RefinementResult
from orig_local.agent.trace import Trace

_CITE = re.compile(r"reference image (\d+)", re.I)


def _ctx(**cfg) -> StageContext:
    prompt_max_tokens = cfg.pop("prompt_max_tokens", None)
    return StageContext(chat=None, retriever=None, config=AgentConfig(**cfg), prompts=PromptLibrary(),
                        trace=Trace(), prompt=PROMPT, knowledge=KnowledgeBase(), prompt_max_tokens=prompt_max_tokens)


def _refs(n=2) -> RefinementResult:
    return RefinementResult(references=[Reference(id=f"V{i}", contributes=f"part {i} of the tower")
                                        for i in range(1, n + 1)])


def _check_citations(out):
    """Every passed reference is cited, numbers run 1..n, nothing else is cited."""
    cited = sorted({int(n) for n in _CITE.findall(out.final_prompt)})
    assert cited == list(range(1, len(out.references) + 1)), (cited, out.references)


def test_376_words_with_citations_in_the_tail():
    body = " ".join(f"Sentence {i} describes the harbour walls, the breakwater and the gulls in detail." for i in range(28))
    tail = " The tower follows reference image 1. The lantern follows reference image 2."
    text = body + tail
    assert len(text.split()) == 376
    out = finalize(_ctx(), text, _refs(2), extended=True)
    assert out.words <= 300 and out.words_before_cut == 376
    _check_citations(out)
    assert out.references == ["V1", "V2"]  # both still passed, because both are still cited
    assert out.final_prompt.rstrip().endswith(".")


def test_cut_references_that_cannot_be_explained_are_not_passed():
    text = " ".join(f"Sentence {i} about walls and gulls and the sea." for i in range(60)) + " See reference image 2."
    refined = _refs(2)
    out = finalize(_ctx(max_prompt_words=20), text, refined, extended=True)
    _check_citations(out)
    assert out.words <= 20 and len(out.final_prompt) <= AgentConfig().max_prompt_chars
    assert [r.id for r in refined.references] == out.references  # F^v follows what is passed


def test_one_megabyte_word_is_capped_by_characters():
    out = finalize(_ctx(), "x" * 1_000_000, _refs(0), extended=True)
    assert len(out.final_prompt) <= AgentConfig().max_prompt_chars


def test_text_encoder_token_limit_cuts_at_a_sentence_end():
    text = " ".join(f"The lighthouse detail number {i} is clearly visible." for i in range(40))
    out = finalize(_ctx(prompt_max_tokens=60), text, _refs(1), extended=True)
    assert EstimatedTokens().count(out.final_prompt) <= 60
    assert out.final_prompt.endswith(".") and "Reference image 1 shows part 1" in out.final_prompt
    _check_citations(out)
    # an explicit config value wins over the generator's limit
    out2 = finalize(_ctx(prompt_max_tokens=60, max_prompt_tokens=30), text, _refs(0), extended=True)
    assert EstimatedTokens().count(out2.final_prompt) <= 30


def test_control_and_bidi_characters_are_stripped():
    text = "A tower\u202e with teal\u200b bands\x00 and a\u2066 dome\ufeff. Reference image 1\x1b shows it."
    out = finalize(_ctx(), text, _refs(1), extended=True)
    assert out.final_prompt == "A tower with teal bands and a dome. Reference image 1 shows it."
    assert not re.search(r"[\u0000-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]", out.final_prompt)


def test_citations_of_references_not_given_are_removed():
    out = finalize(_ctx(), "A tower. Copy reference image 3 for the lamp. Reference image 1 shows the bands.",
                   _refs(1), extended=True)
    assert out.final_prompt == "A tower. Reference image 1 shows the bands."


# --------------------------------------------------------------------------- point 5

from orig_local.agent.stages.accumulation import ImageDecision, TextFilter  # noqa: E402
from orig_local.agent.stages.consolidation import Consolidation  # noqa: E402
from orig_local.agent.stages.planning import Plan, SubQuestion  # noqa: E402
from orig_local.agent.stages.search import PageSelection  # noqa: E402
from orig_local.agent.stages.sufficiency import Sufficiency  # noqa: E402


@pytest.mark.parametrize("schema,reasoning,decisions", [
    (TextFilter, ["reason"], ["relevant", "consistent", "facts"]),
    (ImageDecision, ["shows", "reason"], ["keep"]),
    (Sufficiency, ["reason", "missing"], ["sufficient"]),
    (PageSelection, ["reason"], ["chosen"]),
    (Plan, ["analysis"], ["sub_questions", "text_queries", "image_queries"]),
    (SubQuestion, ["reason"], ["modality"]),
    (Consolidation, ["reason"], ["statements"]),
])
def test_reasoning_fields_come_before_decisions(schema, reasoning, decisions):
    # the JSON schema sent as structured output keeps this order; guided decoding follows it
    order = list(schema.model_json_schema()["properties"])
    assert max(order.index(f) for f in reasoning) < min(order.index(f) for f in decisions), order
