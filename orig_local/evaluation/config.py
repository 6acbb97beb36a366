"""Config section for benchmark runs (``eval:`` in the YAML; CLI flags of ``orig eval`` fill it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from orig_local.configbase import StrictModel


class EvalConfig(StrictModel):
    benchmark: str = "figeval"  # key of orig_local.evaluation.loaders.LOADERS
    data: str | None = None  # benchmark folder/file (FIG-Eval: the authors' repo or a flat folder)
    classes: list[str] | None = None  # None -> every class (FIG-Eval: the 10 paper classes)
    include_others: bool = False  # FIG-Eval's 20 "others" prompts are not in the paper's table
    # WISE: "base" prompts, or the legacy release's "rewrite" files (the same ids, simplified prompts).
    variant: Literal["base", "rewrite"] = "base"
    # WISE: what the judge scores per image. "wiscore" = legacy WiScore rubric (consistency,
    # realism, aesthetics 0-2), "verified" = WISE_Verified's binary score, "statement" = this
    # project's earlier one-true/false-statement rule. `orig report --wise-score` picks one.
    wise_judge: list[Literal["wiscore", "verified", "statement"]] = Field(
        default_factory=lambda: list[Literal["wiscore", "verified", "statement"]](["wiscore", "verified"]),
        min_length=1)
    seed: int = 0  # generation seed, the same for every prompt and condition
    label: str | None = None  # run name in reports (default: the run folder's name)
    # Circuit breaker: a phase stops after this many consecutive items whose server did not
    # answer (connection refused, timeout, HTTP error), keeping finished rows; 0 = never stop.
    max_consecutive_failures: int = Field(5, ge=0)

    # --- judge (the model itself is the root `judge:` ChatConfig; paper §4) ---
    # How the true/false answer is constrained: "bool" = JSON boolean schema (guided decoding
    # makes the reply exactly `true`/`false`), "object" = {"answer": bool}, "text" = no schema,
    # the reply must be exactly true/false after trimming case and punctuation.
    judge_answer_format: Literal["bool", "object", "text"] = "bool"
    judge_logprobs: int = Field(0, ge=0, le=20)  # >0: ask top-k logprobs -> soft score P(true)
    # The authors' released evaluation shows the judge the prompt's gold reference text; the
    # paper's Eq. 10 does not mention it. On by default to match the published protocol.
    judge_reference_text: bool = True
    # Multiple-choice replies (I-HallA) without a schema (judge_answer_format: text): "first_character"
    # = the official I-HallA scorer's rule, the reply's first character is the chosen letter
    # ("(B)", "Answer: B", "None of the above" are then wrong answers, never errors); "labelled"
    # = ours, exactly one letter or a labelled option ("B", "(b)", "B) Hydrogen"), else an error.
    # With a schema (bool/object) the reply is one letter and both rules agree.
    choice_rule: Literal["first_character", "labelled"] = "first_character"
    judge_errors: Literal["exclude", "false"] = "exclude"  # how scoring treats unparseable verdicts
    judge_concurrency: int = Field(16, ge=1)  # prompts judged at once (questions of one prompt run together)
    judge_name: str | None = None  # None -> judge.jsonl; else judge-<name>.jsonl (compare judges)

    # --- retrieval accuracy (paper Eq. 12) ---
    retrieval_accuracy: bool = True  # phase "all" also judges gold facts against the evidence
    evidence_max_chars: int = Field(8000, ge=100)  # retrieved text shown to the fact judge
    evidence_max_images: int = Field(4, ge=0)

    # --- reports ---
    bootstrap: int = Field(1000, ge=0)  # replicates for 95% CIs (0 = no CIs)
    ci: float = Field(0.95, gt=0, lt=1)
    bootstrap_seed: int = 0
