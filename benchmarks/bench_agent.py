"""Orchestration benchmark: N prompts through the full ORIG loop with scripted latencies.

Every backbone call takes ``--llm-latency`` seconds and every search, page read and image
fetch ``--web-latency`` seconds (ScriptedChatModel and SimulatedRetriever over the demo corpus;
the backbone's own concurrency limit is high, as a vLLM server batches continuously), so what
the wall time adds on top of those latencies is the agent's own overhead. Printed:

* critical path of each prompt, from the scripted latencies: the longest chain of its calls
  that ran one after another in a single-prompt run (records of the trace that do not overlap
  in time), each weighted by its scripted latency, not its measured one;
* T1 of each prompt: the minimum wall time of ``--single-repeats`` single-prompt runs;
* two lower bounds for the batch, each ``max(longest prompt, total work / concurrency)``
  (nothing runs faster than its own chain, and ``concurrency`` slots cannot do more than
  ``concurrency`` prompts' work at once): one from the critical paths, one from T1;
* wall with ``--concurrency`` prompts in flight, its ratio to both bounds (target <= 1.15 over
  the T1 bound), and the speed-up over running the prompts one after another (sum of T1);
* the agent's own CPU time per prompt (this process: the agent, the scripted backbone and the
  simulated retriever, which do almost nothing themselves), and the part of it spent on the
  event loop's thread. That part is serialised: with equal scripted latencies the prompts move
  in lockstep, so each step's loop CPU for all prompts in flight queues up, and the wall exceeds
  the bound by about the loop CPU of a wave (at 128 in flight, ~1 s per 8 ms of loop CPU per
  prompt). It is a CPU-time figure, so it stays comparable on a loaded machine where the
  wall ratios do not.

    .venv/bin/python benchmarks/bench_agent.py --prompts 64 --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import time

import _bench  # noqa: F401  (puts this checkout on sys.path)
from _bench import Samples, figure, footer, header

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


def scripted_seconds(record, llm: float, web: float) -> float:
    """What a trace record costs under the scripted latencies alone (no overhead)."""
    if record.attempts:
        return record.attempts * llm
    if record.searches_text or record.searches_image or record.page_reads:
        return web
    if record.image_fetches:
        # fetches of one wave run at once; waves run one after another
        waves = max(1, min(record.image_fetches, int(record.latency_s / web + 0.25))) if web else 1
        return waves * web
    return 0.0  # CPU-only steps (dedup, notes): overhead, not scripted latency


def critical_path(trace, llm: float, web: float) -> float:
    """Longest chain of records that ran one after another, weighted by scripted latency."""
    records = sorted((r for r in trace.records if r.did_work), key=lambda r: r.started_s)
    best: list[float] = []
    for i, r in enumerate(records):
        end_i = r.started_s
        prior = [best[j] for j in range(i) if records[j].started_s + records[j].latency_s <= end_i + 1e-6]
        best.append(scripted_seconds(r, llm, web) + max(prior, default=0.0))
    return max(best, default=0.0)


def lower_bound(per_prompt: list[float], concurrency: int) -> float:
    return max(max(per_prompt), sum(per_prompt) / concurrency)


async def single_runs(args, corpus) -> tuple[dict[str, float], dict[str, float], list[float]]:
    """Per distinct prompt: min wall of repeated single runs, and its scripted critical path."""
    t1: dict[str, float] = {}
    cp: dict[str, float] = {}
    cpu_each: list[float] = []
    for p in PROMPTS:
        for rep in range(args.single_repeats + 1):  # the first run is a warm-up
            agent, _, _ = build(args, corpus)
            c0, w0 = time.process_time(), time.perf_counter()
            result = await agent.run(p)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            assert result.error is None, result.error
            if rep == 0:
                continue
            t1[p] = min(t1.get(p, float("inf")), wall)
            cp[p] = critical_path(result.trace, args.llm_latency, args.web_latency)
            cpu_each.append(cpu)
    return t1, cp, cpu_each


async def batch_run(args, corpus, prompts) -> tuple[float, float, int, int, float]:
    """(wall, process CPU, backbone calls, web calls, CPU of the event loop's thread)."""
    agent, chat, retriever = build(args, corpus)
    c0, w0, t0 = time.process_time(), time.perf_counter(), time.thread_time()
    results = await agent.run_many(prompts, concurrency=args.concurrency)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    loop_cpu = time.thread_time() - t0
    errors = [r.error for r in results if r.error]
    assert not errors, errors
    return wall, cpu, chat.calls, sum(retriever.calls.values()), loop_cpu


async def main(args) -> None:
    header("Agent orchestration (scripted latencies)", prompts=args.prompts, concurrency=args.concurrency,
           condition=args.condition, llm_latency=f"{args.llm_latency}s", web_latency=f"{args.web_latency}s",
           repeats=args.repeats, single_repeats=args.single_repeats)
    corpus = SimulatedRetriever.from_demo_corpus()
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.prompts)]

    t1, cp, single_cpu = await single_runs(args, corpus)
    print("\nsingle prompts (min wall of repeats; critical path from scripted latencies):")
    for p in PROMPTS:
        print(f"  {p:<44} T1 {t1[p]:6.2f}s   critical path {cp[p]:6.2f}s   overhead {t1[p] - cp[p]:+.2f}s")
    bound_cp = lower_bound([cp[p] for p in prompts], args.concurrency)
    bound_t1 = lower_bound([t1[p] for p in prompts], args.concurrency)
    sequential = sum(t1[p] for p in prompts)

    await batch_run(args, corpus, prompts[: min(len(prompts), args.concurrency)])  # warm-up
    samples = Samples()
    calls = (0, 0)
    loop_cpu: list[float] = []
    for _ in range(args.repeats):
        wall, cpu, llm_calls, web_calls, loop = await batch_run(args, corpus, prompts)
        samples.add(wall, cpu)
        loop_cpu.append(loop)
        calls = (llm_calls, web_calls)

    print(f"\nbatch: {args.prompts} prompts, {calls[0] / args.prompts:.1f} backbone calls and "
          f"{calls[1] / args.prompts:.1f} web calls per prompt")
    print(f"  lower bound from critical paths  {bound_cp:7.2f}s   from min T1  {bound_t1:7.2f}s   "
          f"(max(longest prompt, total / {args.concurrency}))")
    print(f"  prompts one after another (sum of T1) {sequential:7.2f}s")
    figure("wall, concurrent", samples.wall, "s")
    figure("wall / bound (min T1)", [w / bound_t1 for w in samples.wall], "x", goal=1.15, higher_is_better=False)
    figure("wall / bound (critical paths)", [w / bound_cp for w in samples.wall], "x",
           note="includes the agent's own per-prompt overhead")
    figure("speed-up over one prompt at a time", [sequential / w for w in samples.wall], "x")
    figure("agent CPU per prompt, concurrent", [1000 * c / args.prompts for c in samples.cpu], "ms",
           higher_is_better=False)
    figure("event-loop CPU per prompt, concurrent", [1000 * c / args.prompts for c in loop_cpu], "ms",
           higher_is_better=False, note="serialised across prompts in lockstep")
    figure("agent CPU per prompt, alone", [1000 * c for c in single_cpu], "ms", higher_is_better=False,
           note="a fresh agent per run: includes first-use template compilation")
    footer()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--llm-latency", type=float, default=0.2)
    parser.add_argument("--web-latency", type=float, default=0.1)
    parser.add_argument("--condition", default="orig")
    parser.add_argument("--rounds", type=int, default=None, help="fixed loop rounds (default: adaptive)")
    parser.add_argument("--repeats", type=int, default=3, help="timed batch runs (after one warm-up)")
    parser.add_argument("--single-repeats", type=int, default=3, help="timed runs of each prompt alone")
    asyncio.run(main(parser.parse_args()))
