#!/usr/bin/env python
"""Offline demo of the main job: tiny real models, the bundled demo corpus, no network.

    python scripts/demo.py --out out/demo        (what `make demo` runs, then demo_eval.py)

1. builds the tiny models if missing (seconds; no hub access);
2. starts a real OpenAI-compatible server on 127.0.0.1 (``transformers serve``) with the tiny
   Qwen2.5-VL and sends a text + image chat through the ``openai`` backend -> ``chat.json``;
3. runs the ORIG agent on one prompt about a fictional entity that only the demo corpus knows,
   with the tiny Qwen-Image-Edit-2509 generator, twice:
   - ``agent-tiny/``: the backbone is the tiny Qwen2.5-VL over that server. Its weights are
     random, so every structured reply fails validation: the run shows the degradation path
     (errors recorded in the trace, a usable prompt assembled from the evidence anyway);
   - ``agent-simulated/``: the ``simulated`` backbone, a deterministic stand-in that answers
     each stage's schema from the evidence in its request, so every stage runs as it would
     with a real model (plans, filtering, refinement, reference images).
   Each folder holds image.png, prompt.txt, references/, trace.json, trace.html, config.yaml.

The tiny models have random weights: images are noise; the point is that every real component
(processor, chat template, HTTP, data-URI images, retrieval, dedup, diffusers) runs.

With ``--quiet`` (what `make demo` uses) it prints a short story: one line per step, the tiny
backbone's stage errors one line per stage (the trace holds the full text), where the outputs
are. The tiny models' library warnings are silenced for this process only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from demo_common import (  # scripts/ is on sys.path
    ensure_tiny_models,
    first_sentence,
    quiet_model_libraries,
)

from orig_local.config import load_config, save_config  # noqa: E402
from orig_local.llm import make_chat_model, system, user  # noqa: E402
from orig_local.llm.local_server import transformers_server  # noqa: E402
from orig_local.paths import tiny_models_dir  # noqa: E402

log = logging.getLogger("demo")


def demo_image():
    """A small synthetic picture (no files needed): red sky over a blue sea."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (96, 96), (200, 40, 30))
    ImageDraw.Draw(image).rectangle([0, 56, 95, 95], fill=(20, 60, 200))
    return image


async def chat_round_trip(config) -> dict:
    model = make_chat_model(config.backbone, cache_dir=config.resolved_cache_dir())
    try:
        reply = await model.chat(
            [system("You describe images briefly."), user(demo_image(), "What colours does this picture show?")],
            temperature=0.0,
        )
    finally:
        await model.aclose()
    return {
        "backend": model.backend, "model": reply.model, "base_url": config.backbone.base_url,
        "reply": reply.text, "cached": reply.cached,
        "usage": {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens},
        "latency_s": round(reply.latency_s, 4),
    }


DEMO_PROMPT = "The Veltrane Harbor Lighthouse at dusk, seen from the harbour"


def stage_error_lines(trace) -> list[str]:
    """One line per failed stage step: how often, and the first error's first sentence."""
    failed: dict[str, list[str]] = {}
    for record in trace.records:
        if record.error:
            failed.setdefault(f"{record.stage}/{record.step}", []).append(record.error)
    return [f"{name}{f' (x{len(errors)})' if len(errors) > 1 else ''}: {first_sentence(errors[0], 90)}"
            for name, errors in failed.items()]


def run_agent_demo(config, out_dir: Path, step: str) -> dict:
    from orig_local.agent import run_agent

    result = run_agent(DEMO_PROMPT, config=config, out_dir=out_dir)
    errors = stage_error_lines(result.trace)
    summary = {
        "out": str(out_dir), "condition": result.condition, "status": result.status,
        "stop_reason": result.stop_reason,
        "rounds": result.rounds, "stage_errors": len(result.trace.errors()),
        "references": len(result.references), "prompt_words": len(result.final_prompt.split()),
        "image": str(out_dir / "image.png") if result.image is not None else None,
    }
    image = "image.png" if result.image is not None else "NO image"
    head = (f"{step}: {result.status}, stop={result.stop_reason}, rounds={result.rounds}, "
            f"{summary['references']} refs, {summary['prompt_words']}-word prompt, {image}")
    if not errors and result.status != "failed":
        print(f"{head} -> {out_dir}/trace.html")
        return summary
    print(f"{head}, {summary['stage_errors']} stage error(s)" + (", one line per stage:" if errors else ""))
    for line in errors:
        print(f"      {line}")
    if result.status == "failed" and result.failure:
        print(f"    {result.failure.split(' (', 1)[0]}: prompt.txt falls back to the evidence gathered")
    print(f"    -> {out_dir}/trace.html")
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/demo"))
    parser.add_argument("--set", "-s", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--generator", default="tiny-qwen-image-edit-2509", help="generator preset")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level="WARNING" if args.quiet else "INFO",
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if args.quiet:
        quiet_model_libraries()
        # each stage error is summarised below from the trace (one line per stage)
        logging.getLogger("orig_local.agent.stages").setLevel(logging.ERROR)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"ORIG demo, offline (tiny random-weight models: images are noise; a bundled corpus of fictional "
          f"entities), prompt: {DEMO_PROMPT!r}")

    t0 = time.perf_counter()
    ensure_tiny_models()  # idempotent: only missing tiny models are built
    model_dir = tiny_models_dir() / "qwen2_5_vl"
    summary: dict = {}
    with transformers_server(model_dir, log_path=args.out / "server.log") as server:
        server_overrides = [
            "backbone.backend=openai", f"backbone.base_url={server.base_url}",
            f"backbone.model={server.model}", "backbone.structured_mode=prompt",
        ]
        # The chat step shows a live round trip, not a cache hit from an earlier run.
        config = load_config(["offline"], server_overrides + ["cache_dir=", *args.overrides])
        save_config(config, args.out / "config.yaml")
        summary["chat"] = asyncio.run(chat_round_trip(config))
        (args.out / "chat.json").write_text(json.dumps(summary["chat"], indent=2, ensure_ascii=False) + "\n",
                                            encoding="utf-8")
        print(f"1/3 chat: tiny Qwen2.5-VL on a local OpenAI-compatible server, text+image in "
              f"({summary['chat']['usage']['prompt_tokens']} + {summary['chat']['usage']['completion_tokens']} "
              f"tokens, {summary['chat']['latency_s']}s) -> {args.out / 'chat.json'}")

        common = [f"generator.preset={args.generator}", f"cache_dir={args.out / 'cache'}",
                  f"progress={'false' if args.quiet else 'true'}", *args.overrides]
        tiny = load_config(["offline"], server_overrides + common)
        summary["agent_tiny"] = run_agent_demo(
            tiny, args.out / "agent-tiny", "2/3 agent, tiny backbone (random weights: expect errors)")
    simulated = load_config(["offline"], ["backbone.backend=simulated", *common])
    summary["agent_simulated"] = run_agent_demo(
        simulated, args.out / "agent-simulated", "3/3 agent, SIMULATED backbone (not model output)")
    summary["total_s"] = round(time.perf_counter() - t0, 2)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"done in {summary['total_s']}s; each agent folder holds image.png, prompt.txt, references/, "
          f"trace.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
