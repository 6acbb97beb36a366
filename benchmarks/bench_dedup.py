"""Image-dedup throughput, and the VLM calls that embedding dedup saves.

    python benchmarks/bench_dedup.py [--model ViT-B-32] [--images 64] [--device cpu] [--tiny]

1. Embedding throughput (images/s) of an open_clip model with random weights (no download;
   the architecture, not the weights, sets the cost) at batch sizes 1, 8 and 32, on a fixed
   seeded set of 224-px pictures, cache off; then the same dedup again with the cache warm.
2. VLM calls needed to remove near-duplicates from n candidates: asking a VLM about each pair is
   n(n-1)/2 image-pair comparisons; with embedding dedup it is 0 comparisons, and the VLM sees
   the de-duplicated set once, in a single selection call.
"""

from __future__ import annotations

import argparse
import time


def make_images(n: int, size: int = 224):
    import numpy as np
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(0)
    images = []
    for _ in range(n):
        im = Image.new("RGB", (size, size), tuple(int(x) for x in rng.integers(0, 256, 3)))
        draw = ImageDraw.Draw(im)
        for _ in range(6):
            x, y = (int(v) for v in rng.integers(0, size, 2))
            r = int(rng.integers(10, size // 3))
            draw.ellipse([x, y, x + r, y + r], fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
        images.append(im)
    return images


def throughput(model: str, images, batch_sizes, device: str) -> list[tuple[int, float]]:
    from orig_local.embeddings.clip import OpenClipEmbedder

    rows = []
    for bs in batch_sizes:
        emb = OpenClipEmbedder(model, pretrained=None, device=device, batch_size=bs)
        emb.embed_images(images[:bs])  # warm-up: first-call allocations, thread pools
        emb._memory.clear()
        emb.images_embedded = 0
        start = time.perf_counter()
        emb.embed_images(images)
        seconds = time.perf_counter() - start
        assert emb.images_embedded == len(images)
        rows.append((bs, len(images) / seconds))
    return rows


def cached_dedup_rate(model: str, images, device: str) -> tuple[float, float]:
    from orig_local.embeddings.clip import OpenClipEmbedder
    from orig_local.embeddings.dedup import ImageDeduplicator

    dedup = ImageDeduplicator(OpenClipEmbedder(model, pretrained=None, device=device, batch_size=32))
    start = time.perf_counter()
    dedup.dedup(images)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    result = dedup.dedup(images)
    warm = time.perf_counter() - start
    assert result.embedded == 0
    return len(images) / cold, len(images) / warm


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="ViT-B-32", help="open_clip architecture (random weights)")
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-sizes", default="1,8,32")
    parser.add_argument("--tiny", action="store_true", help="use the tiny local CLIP instead (seconds)")
    args = parser.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.ERROR)  # open_clip warns on purpose about random weights

    model = args.model
    if args.tiny:
        from orig_local.paths import tiny_models_dir
        from orig_local.tiny.build import build_one

        model = "local-dir:" + str(build_one("clip", tiny_models_dir()))
    import torch

    images = make_images(args.images)
    name = "tiny-clip" if args.tiny else args.model
    print(f"## Embedding throughput: {name}, random weights, {args.device}, "
          f"{args.images} images of 224x224, torch threads {torch.get_num_threads()}\n")
    print("| batch size | images/s |\n|---:|---:|")
    for bs, rate in throughput(model, images, [int(b) for b in args.batch_sizes.split(",")], args.device):
        print(f"| {bs} | {rate:.1f} |")
    cold, warm = cached_dedup_rate(model, images, args.device)
    print(f"\nFull dedup (hash + embed + greedy cosine), batch 32: {cold:.1f} images/s cold, "
          f"{warm:.0f} images/s with every embedding cached (0 re-embedded).\n")

    print("## VLM calls to remove near-duplicates among n candidate images\n")
    print("| n | pairwise VLM comparisons | embedding dedup: comparisons | + selection call | calls saved |")
    print("|---:|---:|---:|---:|---:|")
    for n in (5, 10, 20):
        pairwise = n * (n - 1) // 2
        print(f"| {n} | {pairwise} | 0 | 1 | {pairwise - 1} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
