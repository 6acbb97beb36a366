#!/usr/bin/env python
"""Offline demo: a chat round trip through the real server path, written to an output folder.

    python scripts/demo.py --out out/demo

1. builds the tiny Qwen2.5-VL if missing (seconds; no hub access);
2. starts a real OpenAI-compatible server on 127.0.0.1 (``transformers serve``);
3. sends a text + image chat through the ``openai`` chat backend;
4. writes ``<out>/chat.json`` (reply, token usage, latency) and ``<out>/config.yaml``.

The tiny model has random weights: its reply is noise; the point is that every real component
(processor, chat template, HTTP, data-URI images, usage accounting) runs.
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

from orig_local.config import load_config, save_config  # noqa: E402
from orig_local.llm import make_chat_model, system, user  # noqa: E402
from orig_local.llm.local_server import transformers_server  # noqa: E402
from orig_local.paths import tiny_models_dir  # noqa: E402
from orig_local.tiny.build import build_one  # noqa: E402

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, default=Path("out/demo"))
    parser.add_argument("--set", "-s", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    model_dir = build_one("qwen2_5_vl", tiny_models_dir())
    with transformers_server(model_dir, log_path=args.out / "server.log") as server:
        overrides = [
            "backbone.backend=openai", f"backbone.base_url={server.base_url}",
            f"backbone.model={server.model}", "backbone.structured_mode=prompt",
            # the demo shows a live server round trip, not a cache hit from an earlier run
            "cache_dir=", *args.overrides,
        ]
        config = load_config(["offline"], overrides)
        save_config(config, args.out / "config.yaml")
        result = asyncio.run(chat_round_trip(config))
    result["total_s"] = round(time.perf_counter() - t0, 2)
    (args.out / "chat.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"chat: {result['usage']['prompt_tokens']} prompt + {result['usage']['completion_tokens']} "
          f"completion tokens in {result['latency_s']}s -> {args.out / 'chat.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
