"""Orchestration benchmark: N prompts through the full ORIG loop with simulated latencies.

Every backbone call takes ``--llm-latency`` seconds and every search, page read and image fetch
``--web-latency`` seconds (fixed, via ScriptedChatModel and SimulatedRetriever over the demo
corpus), so the wall time measures only the agent's orchestration. Printed:

* ideal   = ceil(N / concurrency) x T1, T1 = one prompt's wall time alone (its critical path:
            nothing can make a prompt faster than its own chain of dependent calls);
* serial  = the sum of every simulated latency (one call at a time, no overlap at all);
* wall    = measured with ``concurrency`` prompts in flight. Target: wall <= 1.15 x ideal.

The backbone's own concurrency limit is set high, as a vLLM server batches continuously.

    .venv/bin/python benchmarks/bench_agent.py --prompts 64 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orig_local.agent.agent import Agent  # noqa: E402
from orig_local.agent.config import AgentConfig  # noqa: E402
from orig_local.llm.config import ChatConfig  # noqa: E402
from orig_local.llm.scripted import ScriptedChatModel  # noqa: E402
from orig_local.llm.simulated import SimulatedRetriever, orig_responder  # noqa: E402

PROMPTS = [
    "The Veltrane Harbor Lighthouse at dusk",
    "Quillon glassback beetle on a leaf",
    "Korvath K-7 tram in the rain",
    "Marrowby Kestrels F.C. players celebrating",
    "Brannock Point Lighthouse in fog",
    "The Eiffel Tower in 1889",
]


def build(args, corpus: SimulatedRetriever) -> tuple[Agent, ScriptedChatModel, SimulatedRetriever]:
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="sim", concurrency=100_000),
                             replies=[orig_responder()], cycle=True, latency_s=args.llm_latency)
    retriever = SimulatedRetriever(corpus.docs, corpus.images, search_latency_s=args.web_latency,
                                   read_latency_s=args.web_latency, fetch_latency_s=args.web_latency)
    agent = Agent(chat, retriever, AgentConfig(condition=args.condition, concurrency=args.concurrency,
                                               fixed_rounds=args.rounds, max_rounds=max(3, args.rounds or 0)))
    return agent, chat, retriever


async def main(args) -> None:
    corpus = SimulatedRetriever.from_demo_corpus()
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.prompts)]

    # T1: each distinct prompt alone (the longest one bounds a full batch).
    t1 = 0.0
    for p in PROMPTS:
        agent, _, _ = build(args, corpus)
        start = time.perf_counter()
        await agent.run(p)
        t1 = max(t1, time.perf_counter() - start)

    agent, chat, retriever = build(args, corpus)
    start = time.perf_counter()
    results = await agent.run_many(prompts, concurrency=args.concurrency)
    wall = time.perf_counter() - start

    assert all(r.error is None for r in results), [r.error for r in results if r.error]
    llm_calls = chat.calls
    web_calls = sum(retriever.calls.values())
    serial = llm_calls * args.llm_latency + web_calls * args.web_latency
    ideal = math.ceil(args.prompts / args.concurrency) * t1
    print(f"prompts={args.prompts} concurrency={args.concurrency} condition={args.condition} "
          f"llm_latency={args.llm_latency}s web_latency={args.web_latency}s")
    print(f"per prompt: {llm_calls / args.prompts:.1f} backbone calls, {web_calls / args.prompts:.1f} web calls; "
          f"T1 (longest prompt alone) = {t1:.2f}s")
    print(f"wall    {wall:8.2f}s")
    print(f"ideal   {ideal:8.2f}s   wall/ideal  = {wall / ideal:.3f}  (target <= 1.15)")
    print(f"serial  {serial:8.2f}s   serial/wall = {serial / wall:.1f}x speed-up over one call at a time")
    if wall / ideal > 1.15:
        print("WARNING: orchestration overhead above target")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--llm-latency", type=float, default=0.2)
    parser.add_argument("--web-latency", type=float, default=0.1)
    parser.add_argument("--condition", default="orig")
    parser.add_argument("--rounds", type=int, default=None, help="fixed loop rounds (default: adaptive)")
    asyncio.run(main(parser.parse_args()))
