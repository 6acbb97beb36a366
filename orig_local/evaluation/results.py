"""Read a run folder's JSONL back into scores (everything reports need, nothing cached)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from orig_local.evaluation.rundir import read_meta, read_phase, run_label
from orig_local.evaluation.scoring import PromptScore, mean_ignoring_nan, prompt_score


@dataclass
class RunResults:
    dir: Path
    label: str
    meta: dict
    judge_name: str | None
    prompts: list[PromptScore]  # judged prompts with at least one scored question
    judge_rows: dict[str, dict]
    agent_rows: dict[str, dict]
    gen_rows: dict[str, dict]
    retrieval_rows: dict[str, dict]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def retrieval_accuracy(self) -> float:
        """Mean over prompts of A_i (paper Eq. 12)."""
        return mean_ignoring_nan(r["accuracy"] for r in self.retrieval_rows.values()
                                 if r.get("accuracy") is not None)


def load_run(run_dir: str | Path, judge_name: str | None = None, errors: str = "exclude") -> RunResults:
    """Scores of one run from its JSONL. ``errors``: how unparseable verdicts count (see scoring)."""
    run_dir = Path(run_dir)
    judge_rows = read_phase(run_dir, "judge", judge_name)
    prompts: list[PromptScore] = []
    question_errors = item_errors = 0
    for row in judge_rows.values():
        if row.get("error"):
            item_errors += 1
            continue
        ps = prompt_score(row["id"], row["category"],
                          [(v.get("concept"), v.get("correct")) for v in row.get("verdicts", [])
                           if v.get("correct") is not None or v.get("error")],  # graded rubrics (WiScore) aside
                          errors=errors)
        question_errors += ps.errors
        if ps.total:
            prompts.append(ps)
    agent_rows = read_phase(run_dir, "agent")
    gen_rows = read_phase(run_dir, "generate")
    retrieval_rows = read_phase(run_dir, "retrieval", judge_name)
    counts = {
        "agent_rows": len(agent_rows), "agent_errors": sum(bool(r.get("error")) for r in agent_rows.values()),
        "images": sum(bool(r.get("image")) for r in gen_rows.values()),
        "generate_errors": sum(bool(r.get("error")) for r in gen_rows.values()),
        "judged_prompts": len(prompts), "judge_item_errors": item_errors,
        "judge_question_errors": question_errors,
        "questions": sum(len(r.get("verdicts", [])) for r in judge_rows.values()),
    }
    return RunResults(run_dir, run_label(run_dir), read_meta(run_dir), judge_name, prompts,
                      judge_rows, agent_rows, gen_rows, retrieval_rows, counts)


def stage_means(run: RunResults) -> dict[str, dict[str, float]]:
    """Per-stage totals averaged over prompts whose agent phase succeeded (cost tables)."""
    rows = [r for r in run.agent_rows.values() if not r.get("error") and r.get("stages") is not None]
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        for stage, totals in (r.get("stages") or {}).items():
            slot = out.setdefault(stage, {})
            for key, value in totals.items():
                if isinstance(value, (int, float)):
                    slot[key] = slot.get(key, 0.0) + value
    n = len(rows)
    return {s: {k: v / n for k, v in d.items()} for s, d in out.items()} if n else {}


def retrieval_summary(run: RunResults) -> dict[str, float]:
    """Table 4/7 layout numbers: iterations, retrieval accuracy, final-prompt length, references,
    searches, prompt-extension tokens, generation accuracy (All)."""
    from orig_local.evaluation.scoring import table_row

    rows = [r for r in run.agent_rows.values() if not r.get("error")]
    means = stage_means(run)

    def avg(values):
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else math.nan

    total = lambda key: sum(d.get(key, 0.0) for d in means.values()) if means else math.nan  # noqa: E731
    ext = means.get("extension", {})
    return {
        "iterations": avg(r.get("iterations") for r in rows),
        "retrieval_acc": run.retrieval_accuracy,
        "prompt_words": avg(r.get("final_prompt_words") for r in rows),
        "references": avg(len(r.get("references") or []) for r in rows),
        "text_searches": total("searches_text"),
        "image_searches": total("searches_image"),
        "extension_in_tokens": ext.get("prompt_tokens", math.nan),
        "extension_out_tokens": ext.get("completion_tokens", math.nan),
        "generation_acc": table_row(run.prompts)["All"] if run.prompts else math.nan,
    }
