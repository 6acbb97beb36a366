"""Evaluation harness benchmark: judge-phase throughput, scoring/bootstrap and report time.

* judge phase: N prompts x Q questions against a scripted judge whose every call takes
  ``--latency`` seconds, with the chat model's concurrency C (a vLLM server batches that many).
  ideal = ceil(N*Q / C) x latency; target: wall <= 1.3 x ideal (the phase keeps the server busy
  while still writing rows in item order, with fsync per row).
* scoring: Table-3 row + 1000-replicate bootstrap CIs for N prompts.
* report: every table, figure and the gallery for one run.

    .venv/bin/python benchmarks/bench_eval.py --prompts 514 --questions 8 --latency 0.05
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image  # noqa: E402

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
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=514)
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()

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

    chat = ScriptedChatModel(ChatConfig(backend="scripted", concurrency=args.concurrency),
                             replies=[reply], cycle=True, latency_s=args.latency)
    t0 = time.perf_counter()
    run_judge_phase(items, run, Judge(chat, answer_format="text"), concurrency=16, progress=False)
    wall = time.perf_counter() - t0
    calls = args.prompts * args.questions
    ideal = math.ceil(calls / args.concurrency) * args.latency
    print(f"judge phase: {calls} calls, latency {args.latency}s, concurrency {args.concurrency}: "
          f"wall {wall:.2f}s, ideal {ideal:.2f}s, ratio {wall / ideal:.2f} (target <= 1.3)")

    prompts = load_run(run).prompts
    t0 = time.perf_counter()
    row = table_row(prompts)
    ci = bootstrap_ci(prompts, n_boot=1000)
    print(f"scoring: {len(prompts)} prompts, Table-3 row + 1000-replicate CIs in {time.perf_counter() - t0:.2f}s "
          f"(All = {100 * row['All']:.1f}%, CI {100 * ci['All'][0]:.1f}-{100 * ci['All'][1]:.1f})")
    t0 = time.perf_counter()
    build_report([run], n_boot=1000)
    print(f"report (tables, figure, gallery): {time.perf_counter() - t0:.2f}s")
    return 0 if wall <= 1.3 * ideal else 1


if __name__ == "__main__":
    sys.exit(main())
