"""Input tokens per prompt and per stage, as Qwen2.5-VL would count them (paper Table 6).

    python benchmarks/bench_tokens.py [--prompt "..."] [--preset qwen2.5-vl-7b] [--image-side 1024]

One traced ORIG run (scripted backbone over the demo corpus; every request is recorded in the
trace) is counted request by request with :mod:`orig_local.llm.tokens`: text with the real
Qwen2 tokenizer when one is available (a cached model's official ``tokenizer.json``),
otherwise with a clearly labelled estimate; images with
Qwen2.5-VL's pixel rule at the preset's ``max_pixels``. The demo corpus's pictures are small
(256 px), so a second column projects the same requests with web-sized images
(``--image-side``, the retriever's downscale bound), and a third adds the JSON schema text that
backends without guided decoding (``structured_mode: prompt``) append to each request.

The scripted backbone keeps every sentence of a page as a fact, so K (and every later request)
is larger than a real model's would be: compare orders of magnitude and the split by stage, not
exact totals. Paper Table 6 (Qwen2.5-VL-7B ORIG): ~6.25k input tokens per prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import defaultdict

import _bench  # noqa: F401  (puts this checkout on sys.path)
from _bench import footer, header

# Paper Table 6, input tokens per prompt by stage (Qwen2.5-VL-7B backbone).
PAPER = {"bootstrap": 62, "planning": 1021, "accumulation": 3599, "refinement": 827, "extension": 741}


class Recorder:
    """Reply wrapper: image sizes by content hash and the schema of every request."""

    def __init__(self, reply):
        self.reply = reply
        self.sizes: dict[str, tuple[int, int]] = {}
        self.schemas: dict[str, type] = {}

    def __call__(self, messages, schema):
        from orig_local.agent.trace import messages_digest
        from orig_local.imagehash import pixels_sha256

        # The trace names an image by a hash of its pixels (or, in Message.canonical, of its PNG
        # bytes): remember the size under both, and the request's digest both ways.
        pixel_canonical = []
        for m in messages:
            parts = []
            for p in m.parts:
                if isinstance(p, str):
                    parts.append(p)
                    continue
                pil = p.to_pil()
                pixels = pixels_sha256(pil)
                self.sizes[pixels] = self.sizes[p.png_sha256()] = pil.size
                parts.append({"image_pixels_sha256": pixels})
            pixel_canonical.append({"role": m.role, "parts": parts})
        for canonical in (pixel_canonical, [m.canonical() for m in messages]):
            self.schemas[messages_digest(canonical)] = schema
        return self.reply(messages, schema)

    def size(self, part: dict) -> tuple[int, int]:
        key = next(v for k, v in part.items() if k.endswith("sha256"))
        return self.sizes[key]


async def traced_run(prompt: str):
    from orig_local.agent.agent import Agent
    from orig_local.agent.config import AgentConfig
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel
    from orig_local.llm.simulated import SimulatedRetriever, orig_responder

    recorder = Recorder(orig_responder())
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="sim"), replies=[recorder], cycle=True)
    agent = Agent(chat, SimulatedRetriever.from_demo_corpus(), AgentConfig(trace_messages=True))
    result = await agent.run(prompt)
    if result.error:
        raise SystemExit(f"traced run failed: {result.error}")
    return result, recorder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompt", default="The Veltrane Harbor Lighthouse at dusk")
    parser.add_argument("--preset", default="qwen2.5-vl-7b", help="backbone preset (its max_pixels)")
    parser.add_argument("--image-side", type=int, default=1024, help="web image size for the projection")
    parser.add_argument("--tokenizer-dir", default=None, help="folder with a Qwen2.5-VL tokenizer.json")
    args = parser.parse_args()

    from orig_local.llm.base import SCHEMA_NOTE, schema_json
    from orig_local.llm.tokens import DEFAULT_MAX_PIXELS, count_request, image_tokens, load_counter
    from orig_local.presets import load_preset

    preset = load_preset(args.preset)
    max_pixels = int(((preset.serve.mm_processor_kwargs if preset.serve else {}) or {}).get("max_pixels",
                                                                                            DEFAULT_MAX_PIXELS))
    counter = load_counter(args.tokenizer_dir)
    header("Input tokens per prompt by stage (one traced run; counts are deterministic, no spread)", prompt=repr(args.prompt), preset=args.preset,
           max_pixels=max_pixels, text_counter=counter.name)
    if not counter.exact:
        print("  ** ESTIMATE: no Qwen2 tokenizer available here; text counts are approximate **")

    c0, w0 = time.process_time(), time.perf_counter()
    result, rec = asyncio.run(traced_run(args.prompt))
    run_s, run_cpu = time.perf_counter() - w0, time.process_time() - c0
    web_side = (args.image_side, args.image_side * 3 // 4)
    per_web_image = image_tokens(*web_side, max_pixels=max_pixels) + 2
    # A web-sized picture is downscaled to the stage's pixel bound (agent.images) before it is
    # sent; the demo's small pictures are under every bound, so the projection applies it.
    from orig_local.agent.config import AgentConfig

    bounds = AgentConfig().images
    step_bound = {"image_filter": bounds.image_filter, "text_features": bounds.text_features,
                  "visual_features": bounds.visual_features, "write_prompt": bounds.extension}

    def web_image_tokens(step: str) -> int:
        bound = step_bound.get(step)
        return image_tokens(*web_side, max_pixels=min(bound, max_pixels) if bound else max_pixels) + 2

    rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    missing_sizes = 0
    c1 = time.process_time()
    for r in result.trace.records:
        if not r.messages:
            continue

        try:
            got = count_request(r.messages, counter, image_size=rec.size, max_pixels=max_pixels)
        except (KeyError, StopIteration):
            missing_sizes += 1
            continue
        row = rows[r.stage]
        row["calls"] += max(1, r.attempts)
        row["text"] += got.text
        row["image"] += got.image
        row["images"] += got.images
        row["web"] += got.text + got.images * web_image_tokens(r.step)
        schema = rec.schemas.get(r.messages_sha256)
        if schema is not None:
            note = SCHEMA_NOTE.format(schema=json.dumps(schema_json(schema), ensure_ascii=False))
            row["schema"] += counter.count(note)
    count_cpu = time.process_time() - c1

    unit = "" if counter.exact else " (est.)"
    print(f"\nrun: {len(result.trace.records)} trace records, {run_s:.2f}s wall, {run_cpu:.2f}s CPU; "
          f"counting took {count_cpu * 1000:.0f} ms CPU")
    print(f"images: demo corpus pictures as sent; projection: each image {web_side[0]}x{web_side[1]} = "
          f"{per_web_image} tokens at max_pixels {max_pixels:,}, or fewer at the stage's agent.images bound\n")
    print(f"| stage | calls | text{unit} | images (n) | image tokens | total | total, web-sized images "
          f"| + schema in prompt | paper Table 6 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    totals = defaultdict(float)
    for stage, row in rows.items():
        total = row["text"] + row["image"]
        for k in ("calls", "text", "image", "images", "web", "schema"):
            totals[k] += row[k]
        paper = PAPER.get(stage)
        print(f"| {stage} | {row['calls']:.0f} | {row['text']:,.0f} | {row['images']:.0f} | {row['image']:,.0f} | "
              f"{total:,.0f} | {row['web']:,.0f} | {row['web'] + row['schema']:,.0f} | "
              f"{f'{paper:,}' if paper else '(no row)'} |")
    total = totals["text"] + totals["image"]
    print(f"| **all** | {totals['calls']:.0f} | {totals['text']:,.0f} | {totals['images']:.0f} | "
          f"{totals['image']:,.0f} | {total:,.0f} | {totals['web']:,.0f} | {totals['web'] + totals['schema']:,.0f} | "
          f"{sum(PAPER.values()):,} |")
    if missing_sizes:
        print(f"\nnote: {missing_sizes} request(s) had images of unknown size and were not counted")
    print("\nThe paper's table has no rows for page selection (retrieval) or the sufficiency check; "
          "here they are their own stages.")
    footer()


if __name__ == "__main__":
    main()
