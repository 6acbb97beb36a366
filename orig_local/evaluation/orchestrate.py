"""Run the phases of a benchmark run from a Config: build each component only when its phase
runs, release it afterwards (generator ``unload()``, chat ``aclose()``), record run.json."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Sequence

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.rundir import backbone_size, read_meta
from orig_local.evaluation.runner import (
    AgentOutput,
    run_agent_phase,
    run_generate_phase,
    run_judge_phase,
    run_retrieval_phase,
    shard_from_env,
)

log = logging.getLogger(__name__)

ALL_PHASES = ("agent", "generate", "judge", "retrieval")


class RunMismatch(ValueError):
    """The run folder already holds results of a different benchmark/condition/model."""


# --------------------------------------------------------------------------- conditions without a backbone


def direct_agent(item: BenchmarkItem) -> AgentOutput:
    """Direct (paper Table 3): the raw prompt, no references."""
    return AgentOutput(final_prompt=item.prompt, stop_reason="direct")


def build_agent_fn(config):
    """The agent callable for ``config.agent.condition``."""
    condition = config.agent.condition
    if condition == "direct":
        return direct_agent, None
    from orig_local.evaluation.agent_adapter import make_agent_fn

    return make_agent_fn(config)


def build_generator(config):
    if not (config.generator.preset or config.generator.model):
        raise ValueError("no generator preset: pass --generator <preset> or set generator.preset")
    from orig_local.generation import make_generator

    return make_generator(config.generator, progress=config.progress)


def build_judge(config):
    from orig_local.evaluation.judge import Judge

    return Judge.from_config(config)


# --------------------------------------------------------------------------- run.json


def write_meta(run_dir: Path, config, extra: dict | None = None) -> dict:
    """Record what this run is; refuse to mix a different benchmark/condition into it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    uses_backbone = config.agent.condition != "direct"  # Direct sends the raw prompt
    backbone = (config.backbone.preset or config.backbone.model) if uses_backbone else None
    meta = {
        "benchmark": config.eval.benchmark,
        "data": config.eval.data,
        "condition": config.agent.condition,
        "backbone": backbone,
        "backbone_size_b": backbone_size(backbone),
        "generator": config.generator.preset or config.generator.model,
        "judge": config.judge.preset or config.judge.model,
        "seed": config.eval.seed,
        "label": config.eval.label or run_dir.resolve().name,
    }
    meta.update(extra or {})
    old = read_meta(run_dir)
    for key in ("benchmark", "condition", "generator", "backbone", "seed"):
        if old.get(key) is not None and meta.get(key) is not None and old[key] != meta[key]:
            raise RunMismatch(f"{run_dir} holds a run with {key}={old[key]!r}, not {meta[key]!r}; use another --out")
    merged = {**old, **{k: v for k, v in meta.items() if v is not None}}
    (run_dir / "run.json").write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    from orig_local.config import save_config

    save_config(config, run_dir / "config.yaml")
    return merged


# --------------------------------------------------------------------------- orchestration


def run_phases(config, run_dir: str | Path, items: Sequence[BenchmarkItem],
               phases: Sequence[str] = ("agent", "generate", "judge"), *,
               shard: tuple[int, int] | None = None, agent=None, generator=None, judge=None,
               retry_errors: bool = False) -> list[dict]:
    """Run ``phases`` in order over ``items`` (filtered, not yet sharded). ``shard=(i, n)``
    makes every phase take items i, i+n, ... and write its own shard file; without it, the
    generate phase shards itself by RANK/WORLD_SIZE under ``accelerate launch``/``torchrun``.
    Components not given are built from ``config`` when their phase starts and released when
    it ends."""
    run_dir = Path(run_dir)
    write_meta(run_dir, config)
    ev = config.eval
    progress = config.progress
    summaries = []
    for phase in phases:
        if phase not in ALL_PHASES:
            raise ValueError(f"unknown phase {phase!r}; phases: {', '.join(ALL_PHASES)}")
        # Data-parallel generation under `accelerate launch`/torchrun: each process its share.
        this_shard = shard or ((shard_from_env() or (0, 1)) if phase == "generate" else (0, 1))
        common = dict(shard=this_shard, progress=progress, retry_errors=retry_errors)
        items_here = list(items)[this_shard[0]::this_shard[1]]
        if phase == "agent":
            fn, aclose = (agent, None) if agent is not None else build_agent_fn(config)
            summaries.append(run_agent_phase(items_here, run_dir, fn, concurrency=config.agent.concurrency,
                                             aclose=aclose, **common))
        elif phase == "generate":
            gen = generator
            if gen is None:
                if shard is None and shard_from_env() and config.generator.device == "auto":
                    import os

                    config.generator.device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
                gen = build_generator(config)
            try:
                summaries.append(run_generate_phase(items_here, run_dir, gen, seed=ev.seed, **common))
            finally:
                if generator is None:
                    gen.unload()  # free the accelerator for the judge
        elif phase in ("judge", "retrieval"):
            jd = judge if judge is not None else build_judge(config)
            jargs = dict(judge_name=ev.judge_name, concurrency=ev.judge_concurrency, close=judge is None)
            if phase == "judge":
                summaries.append(run_judge_phase(items_here, run_dir, jd, **jargs, **common))
            else:
                summaries.append(run_retrieval_phase(items_here, run_dir, jd, max_chars=ev.evidence_max_chars,
                                                     max_images=ev.evidence_max_images, **jargs, **common))
        log.info("%s", summaries[-1])
    return summaries
