"""The cost plan's reference figures (``cost_reference.json``) and whether they still describe
the package.

``benchmarks/bench_cost.py --write-reference`` measures, on its realistic offline corpus at the
agent's default settings: per-call text and decode tokens of every step, the merge
(consolidation) call's figures (measured apart, with ``consolidate_min_tokens=0``, because at
the defaults K on that corpus stays under the threshold), and the size of K at each round's
consolidation check. It also records what those figures depend on:

* ``settings``: the agent defaults that decide how many tokens a call carries
  (:data:`TOKEN_SETTINGS`);
* ``sample_tokens``: per template, the tokens of a sample request - the system turn and the
  template rendered with the sample variables its stage declares (``Call.example``): the
  instructions and fixed text every call of that step sends, with a few lines of sample data.

:func:`drift` compares both with the package as it is: a changed default, or a template whose
sample request moved by more than :data:`SAMPLE_TOLERANCE` tokens, means the reference is
stale (``tests/test_cost_reference.py`` fails and says how to regenerate it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REFERENCE_FILE = Path(__file__).with_name("cost_reference.json")
REGENERATE = "python benchmarks/bench_cost.py --write-reference orig_local/evaluation/cost_reference.json"
# AgentConfig defaults that change what a call carries (evidence budgets, pictures and their
# pixel bounds, how many pages/queries feed a round, when the merge call is made).
TOKEN_SETTINGS = ("max_page_tokens", "page_text", "images", "knowledge_tokens", "consolidate",
                  "consolidate_min_tokens", "max_images_per_call", "text_top_k", "pages_per_query",
                  "image_top_k", "images_per_query", "max_queries_per_round", "bootstrap_max_queries",
                  "bootstrap_snippets_per_query", "max_references", "max_prompt_words")
SAMPLE_PROMPT = "The Korvath Tidal Observatory on Merrow Point at dusk"
# A sample request that moved by more than this many tokens makes the reference stale. Every
# call of the step moves by about as much (the same system turn and instructions); 8 tokens is
# ~1-4 % of a call (190-1,000 text tokens on the bench) and ~1 % of a prompt's bill, well
# inside the plan's 15 % accuracy; the cut that made the last reference stale (system turn 94 ->
# 63 tokens) moved every template by 31.
SAMPLE_TOLERANCE = 8


def load_reference(path: Path = REFERENCE_FILE) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def token_settings() -> dict[str, Any]:
    """The agent defaults of :data:`TOKEN_SETTINGS`, as JSON values."""
    from orig_local.agent.config import AgentConfig

    dumped = AgentConfig().model_dump(mode="json")
    return {k: dumped[k] for k in TOKEN_SETTINGS}


def sample_tokens(template: str, counter: Any) -> int:
    """Input text tokens of ``template``'s sample request (module doc), counted with ``counter``."""
    from orig_local.agent.prompting import PromptLibrary
    from orig_local.agent.registry import registry
    from orig_local.llm.base import system, user
    from orig_local.llm.tokens import count_request

    lib = PromptLibrary()
    text = lib.render(template, prompt=SAMPLE_PROMPT, **registry().call(template).example)
    return count_request([system(lib.render("system")), user(text)], counter).text


def fingerprint(templates: Sequence[str], counter: Any) -> dict[str, Any]:
    """What the reference's figures depend on: the token settings and each template's sample."""
    return {"settings": token_settings(),
            "sample_tokens": {t: sample_tokens(t, counter) for t in sorted(set(templates))}}


def drift(reference: dict[str, Any], counter: Any) -> list[str]:
    """Why ``reference`` no longer describes the package (empty: it does). The counter must be
    the kind the reference was written with (exact Qwen2 BPE or not)."""
    problems = []
    now = token_settings()
    was = reference.get("settings") or {}
    for key in TOKEN_SETTINGS:
        if was.get(key) != now[key]:
            problems.append(f"agent default {key}: {was.get(key)!r} when written, {now[key]!r} now")
    for template, tokens in sorted((reference.get("sample_tokens") or {}).items()):
        current = sample_tokens(template, counter)
        if abs(current - tokens) > SAMPLE_TOLERANCE:
            problems.append(f"template {template}: its sample request is {current} tokens, {tokens} when written "
                            f"({current - tokens:+d} per call)")
    missing = {r["template"] for r in reference["per_call"].values() if r.get("template")} - set(
        reference.get("sample_tokens") or {})
    problems += [f"template {t}: no sample recorded" for t in sorted(missing)]
    return problems


def knowledge_at(reference: dict[str, Any], rnd: int) -> float | None:
    """K's expected size (tokens) at round ``rnd``'s consolidation check: the bench's figure,
    beyond its last round grown by its last round's increase. None when not recorded."""
    sizes = reference.get("knowledge_at_round") or []
    if not sizes:
        return None
    if rnd <= len(sizes):
        return float(sizes[rnd - 1])
    step = sizes[-1] - sizes[-2] if len(sizes) > 1 else sizes[-1]
    return float(sizes[-1] + max(step, 0) * (rnd - len(sizes)))


def merge_calls(reference: dict[str, Any], rounds: float, min_tokens: int) -> tuple[float, str]:
    """Expected merge (consolidation) calls per prompt over ``rounds`` loop rounds (a fraction
    counts the last round in part), and how that was decided: a round makes the call when
    K's expected size there reaches ``min_tokens`` (the agent's rule, consolidation.py)."""
    calls = 0.0
    sizes = []
    for rnd in range(1, math.ceil(rounds) + 1):
        weight = min(1.0, rounds - (rnd - 1))
        size = knowledge_at(reference, rnd)
        if size is None:  # an old reference without K sizes: every round (an upper bound)
            return rounds, "merge call priced every round (the reference records no K sizes: an upper bound)"
        sizes.append(f"{size:,.0f}")
        if size >= min_tokens:
            calls += weight
    why = (f"ESTIMATE: merge call in rounds where K is expected to reach consolidate_min_tokens={min_tokens:,} "
           f"(K after rounds 1..{len(sizes)}: ~{', '.join(sizes)} tokens, bench_cost.py's corpus)")
    return calls, why
