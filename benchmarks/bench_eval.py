"""Evaluation harness benchmark: judge-phase throughput, scoring/bootstrap and report time.

* judge phase: N prompts x Q questions against a scripted judge whose every call takes
  ``--latency`` seconds, with the chat model's concurrency C (a vLLM server batches that many).
  ideal = ceil(N*Q / C) x latency; target: wall <= 1.3 x ideal (the phase keeps the server busy
  while writing each row as it finishes, with fsync per row).
* scoring: Table-3 row + 1000-replicate bootstrap CIs for N prompts.
* report: every table, figure and the gallery for one run.

Each part: one warm-up round, then ``--rounds`` timed rounds (wall and CPU, min/median/max).

    .venv/bin/python benchmarks/bench_eval.py --prompts 514 --questions 8 --latency 0.05
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from pathlib import Path

import _bench  # noqa: F401  (puts this checkout on sys.path)
from _bench import figure, footer, header, measure, print_timing
from PIL import Image

from orig_local.evaluation.items import FIGEVAL_CLASSES, BenchmarkItem, Question  # noqa: E402
from orig_local.evaluation.jsonl_store import JsonlStore  # noqa: E402
from orig_local.evaluation.judge import Judge  # noqa: E402
from orig_local.evaluation.phases.agent import run_agent_phase  # noqa: E402
from orig_local.evaluation.phases.common import AgentOutput  # noqa: E402
from orig_local.evaluation.phases.judge import run_judge_phase  # noqa: E402
from orig_local.evaluation.report import build_report  # noqa: E402
from orig_local.evaluation.results import load_run  # noqa: E402
from orig_local.evaluation.scoring import bootstrap_ci, table_row  # noqa: E402
from orig_local.llm.config import ChatConfig  # noqa: E402
from orig_local.llm.scripted import ScriptedChatModel  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=514)
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    header("Evaluation harness: judge phase, scoring, report", prompts=args.prompts, questions=args.questions,
           latency=f"{args.latency}s", concurrency=args.concurrency, rounds=args.rounds)

    concepts = ["PF", "CC", "TC"]
    items = [BenchmarkItem(id=f"p{i}", prompt=f"prompt {i}", category=FIGEVAL_CLASSES[i % 10], questions=[
        Question(id=f"q{k}", text=f"True or False: fact {k}", concept=concepts[(i + k) % 3])
        for k in range(args.questions)]) for i in range(args.prompts)]
    run = Path(tempfile.mkdtemp()) / "run"
    run_agent_phase(items, run, lambda it: AgentOutput(final_prompt=it.prompt), progress=False)
    (run / "images").mkdir(parents=True)
    gen = JsonlStore(run / "generate.jsonl")
    for n, it in enumerate(items):
        Image.new("RGB", (64, 64), (n % 256, 40, 200)).save(run / "images" / f"{it.id}.png")
        gen.append({"id": it.id, "category": it.category, "image": f"images/{it.id}.png", "error": None})

    def reply(messages, schema):
        msg = messages[-1]
        return "true" if hash((msg.images[0].png_sha256(), msg.parts[-1])) % 3 else "false"

    calls = args.prompts * args.questions
    ideal = math.ceil(calls / args.concurrency) * args.latency
    fresh = [0]

    def judge_round():
        # every round judges a fresh copy of the run (a finished phase would resume to nothing)
        fresh[0] += 1
        target = run.parent / f"judge{fresh[0]}"
        shutil.copytree(run, target)
        chat = ScriptedChatModel(ChatConfig(backend="scripted", concurrency=args.concurrency),
                                 replies=[reply], cycle=True, latency_s=args.latency)
        run_judge_phase(items, target, Judge(chat, answer_format="text"), concurrency=16, progress=False)
        if chat.calls != calls:
            raise SystemExit(f"judge made {chat.calls} calls, expected {calls}: the figure would be wrong")
        return target

    judged = measure(judge_round, repeats=args.rounds, warmup=1)
    print(f"\njudge phase: {calls} calls, latency {args.latency}s, concurrency {args.concurrency}, "
          f"ideal {ideal:.2f}s")
    figure("wall / ideal", [w / ideal for w in judged.wall], "x", goal=1.3, higher_is_better=False)
    figure("harness CPU per judge call", [1000 * c / calls for c in judged.cpu], "ms", higher_is_better=False)

    prompts = load_run(judged.results[-1]).prompts
    scored = measure(lambda: (table_row(prompts), bootstrap_ci(prompts, n_boot=1000)),
                     repeats=args.rounds, warmup=1)
    row, ci = scored.results[-1]
    print(f"\nscoring: {len(prompts)} prompts, Table-3 row + 1000-replicate CIs "
          f"(All = {100 * row['All']:.1f}%, CI {100 * ci['All'][0]:.1f}-{100 * ci['All'][1]:.1f})")
    print_timing("scoring", scored)
    print("\nreport (tables, figure, gallery) for one run:")
    print_timing("report", measure(lambda: build_report([judged.results[-1]], n_boot=1000),
                                   repeats=args.rounds, warmup=1))
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
