"""Study scale: how CPU time and peak memory grow with the number of items (and of runs).

Each measurement runs in a fresh process (so its peak RSS is its own) on synthetic run folders
(benchmarks/_scale_runs.py: the rows `orig eval` writes, 8 questions per item, images as hard
links of one small PNG):

* agent   - the agent phase's loop and store with a scripted async agent (no model: what the
            harness itself costs per item; a simulated backbone adds its own cost on top)
* judge   - the judge phase with a scripted judge (8 questions per item, real image encoding)
* resume  - rerunning a finished judge phase (open the stores, skip every item)
* report  - `orig report` over 2 runs (tables, 1000-replicate CIs, paged gallery, media by reference)
* merge   - `orig merge` of two half-size shard folders (rows streamed, assets hard-linked)
* status  - `orig study status`'s per-run phase counts over all three phases
* report x runs - the report at the smallest size over 1, 2, 4, 8 runs: memory must stay flat

Printed per scenario and size: CPU seconds, wall seconds, peak RSS and RSS above the process's
baseline after imports, then the growth exponent between sizes (CPU ~ n^k: 1 is linear, 2
quadratic; for RSS over baseline the same). Goals: CPU exponent <= 1.2 for every scenario;
report RSS exponent in the number of runs <= 0.3 (memory that does not grow with runs).

    .venv/bin/python benchmarks/bench_scale.py              # quick: 1k and 3k items
    .venv/bin/python benchmarks/bench_scale.py --full       # 1k, 10k, 50k (minutes; not in make test)
    .venv/bin/python benchmarks/bench_scale.py --sizes 2000,8000 --only judge,report
    .venv/bin/python benchmarks/bench_scale.py --only runs --runs-size 50000 --run-counts 1,2,4,8
        # a study's report: memory over runs at 50k items (36 runs x 50k: docs/scale.md)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _bench  # noqa: F401  (puts this checkout on sys.path)
from _bench import footer, header
from _scale_runs import items_for, write_run

SCENARIOS = ("agent", "judge", "resume", "report", "merge", "status")
RUN_COUNTS = (1, 2, 4, 8)


# --------------------------------------------------------------------------- one measurement (child)


def _scripted_agent():
    from orig_local.evaluation.phases.common import AgentOutput

    async def agent(item):
        await asyncio.sleep(0)
        return AgentOutput(final_prompt=f"{item.prompt}, with the facts it needs " * 8,
                           stages={"planning": {"calls": 1, "prompt_tokens": 900, "completion_tokens": 80}},
                           rounds=2, stop_reason="sufficient", iterations=3)
    return agent


def _scripted_judge():
    from orig_local.evaluation.judge import Judge
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel

    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="scripted-judge", concurrency=32),
                             replies=["true"], cycle=True)
    return Judge(chat, answer_format="text", name="scripted")


def run_one(scenario: str, n: int, work: Path, runs: int) -> dict:
    """Prepare (untimed), then time one scenario; returns its figures."""
    from orig_local.evaluation.merge import merge_runs
    from orig_local.evaluation.phases.agent import run_agent_phase
    from orig_local.evaluation.phases.judge import run_judge_phase
    from orig_local.evaluation.report import build_report
    from orig_local.study.status import phase_counts

    items = items_for(n)
    if scenario == "agent":
        go = lambda: run_agent_phase(items, work / "agent", _scripted_agent(), concurrency=16, progress=False)  # noqa: E731
    elif scenario == "judge":
        run = write_run(work / "judge", n, judged=False)
        go = lambda: run_judge_phase(items, run, _scripted_judge(), concurrency=16, progress=False)  # noqa: E731
    elif scenario == "resume":
        run = write_run(work / "resume", n)
        go = lambda: run_judge_phase(items, run, _scripted_judge(), concurrency=16, progress=False)  # noqa: E731
    elif scenario == "report":
        dirs = [write_run(work / f"run{k}", n, seed=k) for k in range(runs)]
        go = lambda: build_report(dirs, work / "report", n_boot=1000, media_mode="reference")  # noqa: E731
    elif scenario == "merge":
        a = write_run(work / "shard0", n // 2)
        b = write_run(work / "shard1", n - n // 2, start=n // 2)
        go = lambda: merge_runs([a, b], work / "merged")  # noqa: E731
    elif scenario == "status":
        run = write_run(work / "status", n)
        ids = [it.id for it in items]
        go = lambda: [phase_counts(run, ph, ids) for ph in ("agent", "generate", "judge")]  # noqa: E731
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    c0, w0 = time.process_time(), time.perf_counter()
    go()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"cpu": cpu, "wall": wall, "rss_mb": peak_kb / 1024, "over_mb": max(peak_kb - base_kb, 0) / 1024}


# --------------------------------------------------------------------------- driver (parent)


def _child(scenario: str, n: int, runs: int = 2) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"bench_scale_{scenario}_"))
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", scenario, str(n), str(work), str(runs)],
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            raise SystemExit(f"{scenario} at {n} failed:\n{proc.stderr[-3000:]}")
        figure = json.loads(proc.stdout.strip().splitlines()[-1])
        # as each figure comes: a long --full run stopped early still leaves what it measured
        print(f"  ({scenario} {n:,} items{f', {runs} run(s)' if scenario == 'report' else ''}: CPU {figure['cpu']:.1f} s, peak RSS "
              f"{figure['rss_mb']:.0f} MB)", flush=True)
        return figure
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _exponent(a: float, b: float, na: float, nb: float) -> float:
    return math.log(b / a) / math.log(nb / na) if a > 0 and b > 0 and nb != na else math.nan


def _table(title: str, xs: list[int], figures: list[dict], unit: str, goal_cpu: float | None,
           goal_rss: float | None) -> None:
    print(f"\n{title}")
    print(f"  {unit:>8} {'CPU s':>9} {'wall s':>9} {'peak RSS MB':>12} {'RSS over base MB':>17}"
          f" {'CPU exp.':>9} {'RSS exp.':>9}")
    for k, (x, f) in enumerate(zip(xs, figures, strict=True)):
        ce = re = math.nan
        if k:
            ce = _exponent(figures[k - 1]["cpu"], f["cpu"], xs[k - 1], x)
            re = _exponent(max(figures[k - 1]["over_mb"], 1.0), max(f["over_mb"], 1.0), xs[k - 1], x)
        verdict = ""
        if k and goal_cpu is not None and not math.isnan(ce):
            verdict += f"  CPU goal <= {goal_cpu}: {'MET' if ce <= goal_cpu else 'MISSED'}"
        if k and goal_rss is not None and not math.isnan(re):
            verdict += f"  RSS goal <= {goal_rss}: {'MET' if re <= goal_rss else 'MISSED'}"
        print(f"  {x:>8,} {f['cpu']:>9.2f} {f['wall']:>9.2f} {f['rss_mb']:>12.0f} {f['over_mb']:>17.0f}"
              f" {'' if math.isnan(ce) else f'{ce:.2f}':>9} {'' if math.isnan(re) else f'{re:.2f}':>9}{verdict}")
    if len(xs) > 2:  # first to last: the step-to-step figures are noisy at small sizes
        ce = _exponent(figures[0]["cpu"], figures[-1]["cpu"], xs[0], xs[-1])
        re = _exponent(max(figures[0]["over_mb"], 1.0), max(figures[-1]["over_mb"], 1.0), xs[0], xs[-1])
        print(f"  {xs[0]:,} -> {xs[-1]:,}: CPU exponent {ce:.2f}, RSS-over-base exponent {re:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", help="comma-separated item counts (default 1000,3000)")
    ap.add_argument("--full", action="store_true", help="1k, 10k and 50k items (minutes)")
    ap.add_argument("--only", help=f"comma-separated scenarios of {', '.join(SCENARIOS)}, runs")
    ap.add_argument("--runs-size", type=int, help="items per run of the 'runs' scenario (default: the smallest size)")
    ap.add_argument("--run-counts", help="runs per report of the 'runs' scenario (default 1,2,4,8)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        scenario, n, work, runs = args.child
        print(json.dumps(run_one(scenario, int(n), Path(work), int(runs))))
        return 0
    sizes = [1000, 10000, 50000] if args.full else [int(s) for s in (args.sizes or "1000,3000").split(",")]
    only = set(args.only.split(",")) if args.only else set(SCENARIOS) | {"runs"}
    header("Study scale: CPU and memory growth", sizes=",".join(map(str, sizes)), questions=8,
           note="one fresh process per figure; synthetic rows; scripted agent and judge")
    for scenario in SCENARIOS:
        if scenario in only:
            _table(f"{scenario} (report: 2 runs)" if scenario == "report" else scenario, sizes,
                   [_child(scenario, n) for n in sizes], "items", 1.2, None)
    if "runs" in only:
        n = args.runs_size or sizes[0]
        counts = [int(c) for c in args.run_counts.split(",")] if args.run_counts else list(RUN_COUNTS)
        _table(f"report over {counts[0]}-{counts[-1]} runs of {n:,} items (memory must not grow with runs)", counts,
               [_child("report", n, runs) for runs in counts], "runs", None, 0.3)
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
