"""What a run's agent phase really cost, recorded beside the estimate of
:mod:`orig_local.evaluation.costplan`: ``run.json``'s ``measured.agent`` (tokens per item and the
throughput a later ``--dry-run`` of the same backbone uses) and the report's side-by-side table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def measure_agent(run_dir: Path, wall_s: float, ran: int) -> dict[str, Any]:
    """What the agent phase that just ended cost, for run.json's ``measured.agent``: mean
    tokens per finished item (from agent.jsonl's per-stage totals) and the throughput those
    items imply over the phase's wall time (items run x mean tokens / wall seconds)."""
    from orig_local.evaluation.rundir import read_phase

    rows = [r for r in read_phase(Path(run_dir), "agent").values() if r.get("status") != "failed"]
    prefill = decode = cacheable = calls = 0.0
    for r in rows:
        for t in (r.get("stages") or {}).values():
            prefill += t.get("prompt_tokens", 0)
            decode += t.get("completion_tokens", 0)
            cacheable += t.get("cacheable_tokens", 0)
            calls += t.get("calls", 0)
    n = len(rows)
    out: dict[str, Any] = {"items": n, "ran": ran, "wall_s": round(wall_s, 1)}
    if n:
        out.update(calls_per_item=round(calls / n, 2), prefill_per_item=round(prefill / n, 1),
                   decode_per_item=round(decode / n, 1), cacheable_per_item=round(cacheable / n, 1))
        if ran and wall_s > 0:
            out["tokens_per_s"] = round((prefill + decode) / n * ran / wall_s, 1)
    return out


def versus_measured(meta: dict[str, Any], means: dict[str, dict[str, float]]) -> str:
    """Markdown: the estimate recorded in run.json beside the measured means per prompt
    (``means``: per-stage means of the agent rows' totals), per stage; "" without an estimate."""
    from orig_local.agent.registry import canonical_stage

    est = {canonical_stage(k): v for k, v in ((meta.get("cost_estimate") or {}).get("stages") or {}).items()}
    if not est:
        return ""
    stages = list(dict.fromkeys([*est, *means]))
    rows = ["| stage | calls est. | calls measured | input est. | input measured | output est. | output measured |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    total = {k: [0.0, 0.0] for k in ("calls", "prompt_tokens", "completion_tokens")}
    for st in stages:
        e, m = est.get(st, {}), means.get(st, {})
        cells = []
        for k in total:
            total[k][0] += e.get(k, 0.0)
            total[k][1] += m.get(k, 0.0)
            cells += [f"{e.get(k, 0.0):,.1f}" if st in est else "-", f"{m.get(k, 0.0):,.1f}" if st in means else "-"]
        rows.append(f"| {st} | " + " | ".join(cells) + " |")
    rows.append("| **all** | " + " | ".join(f"{v:,.1f}" for pair in total.values() for v in pair) + " |")
    measured = (meta.get("measured") or {}).get("agent") or {}
    speed = (f" The agent phase ran {measured['ran']} item(s) in {measured['wall_s']:,.0f} s: "
             f"{measured['tokens_per_s']:,.0f} tokens/s." if measured.get("tokens_per_s") else "")
    return ("Estimate (made before the run from its config; orig_local/evaluation/costplan.py) beside what "
            f"was measured, mean per prompt.{speed}\n\n" + "\n".join(rows) + "\n")
