"""`orig study PLAN --dry-run`'s cost plan: per run and phase, the expected backbone calls,
prefill/decode tokens, images, judge calls and generator steps, and GPU-hours given a
throughput. Every figure is an ESTIMATE (:mod:`orig_local.evaluation.costplan` says from what).

A run that takes its agent rows from another run (``share_agent``) costs no agent phase of its
own; the study total counts each agent phase once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orig_local.study.plan import Plan


def _items(plan: Plan) -> tuple[list[Any] | None, str]:
    from orig_local.evaluation.loaders import load_benchmark
    from orig_local.evaluation.phases.common import select_items

    data = Path(plan.data).expanduser()
    if not data.exists():
        return None, f"no data at {plan.data}: figures are per prompt"
    try:
        items = load_benchmark(plan.benchmark, str(data), classes=plan.classes, include_others=plan.include_others)
    except (OSError, ValueError, KeyError) as exc:
        return None, f"cannot read the plan's data ({type(exc).__name__}: {exc}): figures are per prompt"
    return list(select_items(items, ids=plan.ids, limit=plan.limit)), ""


def run_config(plan: Plan, run: Any) -> Any:
    """The config `orig eval` builds for ``run`` (the plan's files, then its overrides)."""
    from orig_local.config import load_config
    from orig_local.study.commands import config_overrides

    return load_config(list(plan.config), config_overrides(plan, run))


def cost_plan(plan: Plan, tokens_per_s: dict[str | None, float] | None = None) -> str:
    """The plan's cost, per run and phase, and the study's GPU-hours where a throughput is known
    (``tokens_per_s``: per preset, None for every model; else what a previous run of the same
    backbone recorded)."""
    from orig_local.evaluation import costplan
    from orig_local.study.share import agent_sources

    items, why = _items(plan)
    sources = agent_sources(plan)
    run_dirs = [plan.run_dir(r) for r in plan.runs]
    lines = ["", "## Cost plan (ESTIMATE)", ""]
    total_h: float = 0.0
    unknown_h = False
    for run in plan.runs:
        config = run_config(plan, run)
        phases = plan.phases(run)
        shared = sources[run.label] != run.label
        if shared:
            phases = [p for p in phases if p != "agent"]
        given = tokens_per_s or {}
        tps, source = costplan.throughput_for(run.backbone, given, run_dirs)
        judge_tps, _ = costplan.throughput_for(config.judge.preset, given)
        estimate = costplan.estimate(config, phases, items)
        text = costplan.render(run.label, estimate, tps, source, judge_tps)
        if shared:
            head, _, rest = text.partition("\n")
            text = f"{head}\n  agent     shared: rows copied from {sources[run.label]} (no backbone calls)\n{rest}"
        lines.append(text)
        for p in estimate:
            hours = p.gpu_hours(tps if p.phase == "agent" else judge_tps)
            if p.phase in ("agent", "judge") and p.calls:
                if hours is None:
                    unknown_h = True
                else:
                    total_h += hours
    lines.append("")
    if items is not None:
        lines.append(f"study total: {total_h:,.1f} GPU-h for the backbone and judge phases"
                     + (" (plus phases without a known throughput)" if unknown_h else ""))
    lines.append(costplan.FOOTNOTE + (f"\n({why})" if why else ""))
    return "\n".join(lines)
