"""What the agent's output depends on, from the resolved config: the generator as the agent
sees it, the generator-side token counter for P̂, and the settings that key a shared agent
phase (:mod:`orig_local.study.share`).

The agent reads the generator only through :class:`GeneratorView` (reference capacity, the
prompt token bound, the tokenizer that bound counts in), made from the run's resolved generator
(:class:`~orig_local.resolved.ResolvedModels`); :func:`build_agent` and the study's sharing key
both use it, so two runs share an agent phase only when the agent would have been built
identically. Every other setting is part of the key unless it is listed in
:data:`NOT_AGENT_OUTPUT` with the reason it cannot change P̂, the references or the evidence:
a new setting keys sharing by default.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orig_local.agent.budget import TokenCounter
    from orig_local.config import Config
    from orig_local.generation.config import GeneratorConfig
    from orig_local.resolved import ResolvedModel

log = logging.getLogger(__name__)

# Settings (section -> keys; "*" = the whole section) the agent phase never reads or that only
# change how it runs, not what it writes. Each with why; anything not here keys the agent phase.
NOT_AGENT_OUTPUT: dict[str, dict[str, str]] = {
    "generator": {"*": "read only through generator_view (capacity, prompt bound, tokenizer)"},
    "judge": {"*": "the judge phases read it, the agent phase does not"},
    "agent": {
        "seed": "generator seed: used when an image is generated, never by the agent phase",
        "concurrency": "prompts in flight: order of work, not its result",
        "trace_messages": "stores request text in trace.json or only its hash: same P̂ and references",
    },
    "eval": {
        "seed": "generation seed (generate phase)",
        "label": "the run's name in reports",
        "max_consecutive_failures": "circuit breaker: stops a phase, does not change a row",
        "wise_judge": "judge phase", "judge_answer_format": "judge phase", "judge_logprobs": "judge phase",
        "judge_reference_text": "judge phase", "judge_errors": "scoring", "judge_concurrency": "judge phase",
        "judge_name": "judge phase", "retrieval_accuracy": "retrieval phase",
        "evidence_max_chars": "retrieval phase", "evidence_max_images": "retrieval phase",
        "bootstrap": "report CIs", "ci": "report CIs", "bootstrap_seed": "report CIs",
    },
    "": {
        "cache_dir": "caches are keyed by content: a hit returns what a call would",
        "log_level": "logging", "progress": "progress bars",
    },
}


@dataclass(frozen=True)
class GeneratorView:
    """The generator as the agent sees it. ``reference_capacity`` None = no generator known
    (the agent uses ``agent.max_references``); ``prompt_max_tokens`` None = no token bound."""

    reference_capacity: int | None = None
    prompt_max_tokens: int | None = None
    text_tokenizer: str | None = None  # tokenizer family the bound counts in: qwen2, t5, ...

    def describe(self) -> str:
        refs = "references not read" if self.reference_capacity is None else (
            "text-only generator (0 references)" if self.reference_capacity == 0
            else f"up to {self.reference_capacity} reference(s)")
        bound = (f"P̂ ≤ {self.prompt_max_tokens} {self.text_tokenizer or '?'} tokens"
                 if self.prompt_max_tokens else "P̂ without token bound")
        return f"{refs}, {bound}"

    @classmethod
    def of(cls, generator: ResolvedModel | None) -> GeneratorView:
        """The view of a resolved generator (None: no generator configured)."""
        if generator is None:
            return cls()
        return cls(generator.reference_capacity, generator.prompt_token_bound, generator.tokenizer_family)


def generator_view(config: GeneratorConfig) -> GeneratorView:
    """:class:`GeneratorView` of a generator section, from the resolved pipeline (a preset, a
    hub id given as preset, or ``generator.model``), nothing loaded."""
    from orig_local.resolved import resolve_generator

    return GeneratorView.of(resolve_generator(config))


def prompt_token_counter(generator: ResolvedModel | None) -> TokenCounter | None:
    """Counter for P̂'s bound in the generator's text-encoder tokens: the generator's own
    tokenizer when it loads offline (real models only: a tiny model's toy vocabulary counts
    several times the real tokens); for the Qwen2 family, the real Qwen2 BPE
    (:mod:`orig_local.llm.tokens`); else None (the agent's estimate, labelled as one)."""
    from orig_local.agent.budget import TokenizerTokens, make_token_counter

    if generator is None:
        return None
    if not generator.is_tiny:
        counter = make_token_counter(generator.path, subfolder=generator.tokenizer_subfolder or "tokenizer")
        if isinstance(counter, TokenizerTokens):
            return counter
    if generator.tokenizer_family == "qwen2":
        from orig_local.llm.tokens import default_counter

        text_counter = default_counter()
        if text_counter.exact:
            return _LabelledCounter(text_counter.count, f"tokenizer:{text_counter.name}")
    log.debug("no offline %s tokenizer for %s: P̂'s token bound is an estimate", generator.tokenizer_family,
              generator.preset)
    return None


class _LabelledCounter:
    def __init__(self, count: Any, label: str):
        self.count = count
        self.label = label


def agent_inputs(config: Config) -> dict[str, Any]:
    """Every resolved setting the agent phase's output depends on, as plain JSON data: the
    config without :data:`NOT_AGENT_OUTPUT`, the generator replaced by its
    :class:`GeneratorView` (capacity for every condition with a refinement step: it is rendered into
    refinement's request even when no image was found, e.g. ORIG-Txt)."""
    data = config.model_dump(mode="json")
    for section, keys in NOT_AGENT_OUTPUT.items():
        if "*" in keys:
            data.pop(section, None)
            continue
        target = data if section == "" else data.get(section, {})
        for key in keys:
            target.pop(key, None)
    view = generator_view(config.generator)
    spec = config.agent.spec
    if not (spec.retrieves or spec.needs_oracle):
        # no refinement step, the only reader of the capacity (Prompt Enhanced)
        view = GeneratorView(None, view.prompt_max_tokens, view.text_tokenizer)
    if not spec.uses_backbone:
        view = GeneratorView()  # P unchanged (direct): nothing of the generator reaches it
    data["generator_view"] = asdict(view)
    return data


def agent_inputs_key(config: Config) -> str:
    """A short hash of :func:`agent_inputs` (equal key = the agent would write the same rows)."""
    blob = json.dumps(agent_inputs(config), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def differing_inputs(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two :func:`agent_inputs` dicts."""
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += differing_inputs(va, vb, f"{prefix}{key}.")
        elif va != vb:
            out.append(f"{prefix}{key}")
    return out
