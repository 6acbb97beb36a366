"""Phased, resumable benchmark runs: agent -> generate -> judge (-> retrieval accuracy).

Each phase (``orig_local/evaluation/phases/<phase>.py``) reads the previous phase's rows, skips
ids already in its own JSONL, appends one row per item as soon as it exists (see
:mod:`orig_local.evaluation.store`), and records an item's failure in its row instead of
stopping. Phases run alone (``phases=["generate"]``), so one GPU can hold the backbone, then the
generator, then the judge. Components are passed in (agent callable,
:class:`~orig_local.generation.base.Generator`, :class:`~orig_local.evaluation.judge.Judge`).
This module is the public face of the phases.
"""

from orig_local.evaluation.phases.agent import run_agent_phase
from orig_local.evaluation.phases.common import (
    AgentFn,
    AgentOutput,
    parse_shard,
    save_image,
    select_items,
    shard_from_env,
)
from orig_local.evaluation.phases.generate import run_generate_phase
from orig_local.evaluation.phases.judge import run_judge_phase
from orig_local.evaluation.phases.loop import PhaseSummary, row_status
from orig_local.evaluation.phases.retrieval import run_retrieval_phase

__all__ = [
    "AgentFn", "AgentOutput", "PhaseSummary", "parse_shard", "row_status", "run_agent_phase", "run_generate_phase",
    "run_judge_phase", "run_retrieval_phase", "save_image", "select_items", "shard_from_env",
]
