"""Image dedup through the agent's real path, and CLIP image-embedding throughput.

    python benchmarks/bench_dedup.py [--model ViT-B-32] [--repeats 3] [--tiny]

1. **Which stage catches each duplicate, and what reaches the VLM.** A candidate set of
   structured pictures drawn with PIL (distinct scenes, and for two of them: an exact copy at
   another URL, a PNG re-encode, a 50 % resize, a JPEG recompression, 5 % crops at a corner and
   around the centre, a mirror flip) is served over HTTP on 127.0.0.1. The search service is
   the one part faked (it returns those image URLs); everything else is the agent as
   ``orig_local.agent.factory.build_agent`` builds it: the real Retriever (HTTP fetch, verify,
   decode, hashes), the agent's fetch-time duplicate check, the CLIP deduplicator, and a
   scripted backbone that counts every real VLM call and the images in it. The stage of each
   candidate is read from the run's trace (fetch-time ``duplicate`` failures, the
   ``dedup_images`` record), so the table follows whatever those stages do today.
   CLIP runs with random weights (no weights offline): its near-duplicate verdicts on crops and
   flips are not evidence of what real weights do, and are labelled so.
2. **Per transformation** (a held-out set: the structured scenes, flat logos and text pages,
   each with a 40 % thumbnail, JPEG q50, a watermark, crops of 8 and 15 %, rotations of 5 and
   10 degrees and a letterbox): which check catches each copy (sha256 of the bytes, dHash alone
   within ``retrieval.fetch.dhash_max_distance``, the guarded dHash the agent uses, CLIP at the
   agent's threshold), what each merges wrongly among the distinct pictures, and which copy of
   each group is kept (first arrived, as before, vs ``imagehash.best_copy``).
3. **Timing of that path** (scripted latencies 0: fetch + decode + hashes + CLIP + agent CPU),
   cold CLIP cache per round, after a warm-up run.
4. **ViT-B/32 image embedding throughput** (random weights: the architecture, not the weights,
   sets the cost) in fp32 (reference embeddings) and bf16 (the ``auto`` default where native), with 2 and 1
   torch threads and two batch sizes: images per wall second (goal >= 25 on 2 cores) and per
   CPU second (what a busy shared machine still measures fairly).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
from collections import Counter
from typing import Any

import _bench  # noqa: F401  (puts this checkout on sys.path)
from _bench import cores, figure, footer, header, measure, print_timing

GOAL_IMAGES_PER_S = 25.0  # ViT-B/32 on 2 cores (issue 13)


# --------------------------------------------------------------------------- candidate set


def scene(kind: int, size=(800, 600)):
    """A structured picture (shapes, stripes, text), one per ``kind``; no noise."""
    from PIL import Image, ImageDraw

    w, h = size
    palette = [(30, 60, 120), (200, 80, 40), (40, 140, 70), (230, 200, 60), (120, 40, 140), (20, 20, 20),
               (240, 240, 235), (90, 170, 210)]
    bg = palette[kind % len(palette)]
    im = Image.new("RGB", size, bg)
    d = ImageDraw.Draw(im)
    for y in range(h):  # sky-like vertical gradient
        t = y / h
        d.line([(0, y), (w, y)], fill=tuple(int(c * (1 - 0.5 * t) + 255 * 0.2 * t) for c in bg))
    if kind == 0:  # striped tower (a lighthouse) on rocks
        d.polygon([(0, h), (w * 0.3, h * 0.75), (w * 0.7, h * 0.8), (w, h)], fill=(70, 60, 50))
        for i in range(6):
            d.rectangle([w * 0.45, h * (0.2 + 0.09 * i), w * 0.55, h * (0.29 + 0.09 * i)],
                        fill=(240, 240, 240) if i % 2 else (200, 30, 30))
        d.polygon([(w * 0.43, h * 0.2), (w * 0.5, h * 0.1), (w * 0.57, h * 0.2)], fill=(20, 20, 20))
    elif kind == 1:  # beetle: ellipse body, stripes, legs
        d.ellipse([w * 0.3, h * 0.25, w * 0.7, h * 0.8], fill=(60, 30, 120))
        for i in range(5):
            d.line([(w * 0.32, h * (0.35 + 0.08 * i)), (w * 0.68, h * (0.35 + 0.08 * i))], fill=(220, 200, 40), width=6)
        for s in (-1, 1):
            for i in range(3):
                d.line([(w * 0.5 + s * w * 0.18, h * (0.4 + 0.12 * i)), (w * 0.5 + s * w * 0.32, h * (0.35 + 0.15 * i))],
                       fill=(10, 10, 10), width=5)
    elif kind == 2:  # tram: box, windows, pantograph
        d.rectangle([w * 0.1, h * 0.4, w * 0.9, h * 0.75], fill=(240, 230, 200))
        for i in range(6):
            d.rectangle([w * (0.14 + 0.12 * i), h * 0.45, w * (0.22 + 0.12 * i), h * 0.58], fill=(40, 60, 80))
        d.line([(w * 0.5, h * 0.4), (w * 0.4, h * 0.25), (w * 0.6, h * 0.15)], fill=(30, 30, 30), width=4)
        d.line([(0, h * 0.8), (w, h * 0.8)], fill=(90, 90, 90), width=8)
    elif kind == 3:  # football crest: shield and ball
        d.polygon([(w * 0.3, h * 0.15), (w * 0.7, h * 0.15), (w * 0.7, h * 0.55), (w * 0.5, h * 0.85),
                   (w * 0.3, h * 0.55)], fill=(20, 90, 40), outline=(250, 250, 250), width=8)
        d.ellipse([w * 0.42, h * 0.3, w * 0.58, h * 0.52], fill=(250, 250, 250), outline=(0, 0, 0), width=4)
        d.text((w * 0.36, h * 0.6), "KESTRELS F.C.", fill=(250, 250, 250))
    elif kind == 4:  # tower: lattice of lines
        for i in range(12):
            d.line([(w * (0.3 + 0.0167 * i), h * 0.9), (w * 0.5, h * 0.1)], fill=(80, 60, 40), width=3)
            d.line([(w * (0.7 - 0.0167 * i), h * 0.9), (w * 0.5, h * 0.1)], fill=(80, 60, 40), width=3)
        for i in range(4):
            d.line([(w * (0.35 + 0.03 * i), h * (0.75 - 0.15 * i)), (w * (0.65 - 0.03 * i), h * (0.75 - 0.15 * i))],
                   fill=(60, 40, 30), width=6)
    elif kind == 5:  # concentric rings off centre, with a label
        for r in range(10, 0, -1):
            d.ellipse([w * 0.65 - r * 25, h * 0.4 - r * 25, w * 0.65 + r * 25, h * 0.4 + r * 25],
                      fill=palette[(kind + r) % len(palette)])
        d.text((20, 20), f"SCENE {kind}", fill=(0, 0, 0))
    elif kind == 6:  # diagonal stripes (a flag)
        for i in range(-h, w, 60):
            d.polygon([(i, h), (i + 30, h), (i + 30 + h, 0), (i + h, 0)], fill=(250, 250, 250))
    elif kind == 8:  # mountain range under a sun
        d.polygon([(0, h), (w * 0.2, h * 0.35), (w * 0.4, h * 0.7), (w * 0.6, h * 0.25), (w * 0.85, h * 0.6),
                   (w, h * 0.45), (w, h)], fill=(70, 90, 110))
        d.polygon([(w * 0.55, h * 0.33), (w * 0.6, h * 0.25), (w * 0.65, h * 0.33)], fill=(250, 250, 250))
    elif kind == 9:  # a bar chart
        for i, v in enumerate((0.3, 0.7, 0.5, 0.9, 0.2, 0.6)):
            d.rectangle([w * (0.1 + 0.13 * i), h * (0.9 - 0.7 * v), w * (0.2 + 0.13 * i), h * 0.9],
                        fill=palette[(i + 2) % len(palette)])
        d.line([(w * 0.08, h * 0.9), (w * 0.95, h * 0.9)], fill=(0, 0, 0), width=4)
    else:  # a grid of windows (a building front)
        for i in range(6):
            for j in range(4):
                d.rectangle([w * (0.1 + 0.14 * i), h * (0.15 + 0.18 * j), w * (0.18 + 0.14 * i), h * (0.27 + 0.18 * j)],
                            fill=palette[(i * j + kind) % len(palette)])
    # Something on one side only, so a mirror flip is a different picture (not a no-op).
    d.ellipse([w * 0.05, h * 0.05, w * 0.2, h * 0.25], fill=(255, 230, 120))
    d.rectangle([0, h * 0.85, w * 0.35, h], fill=(15, 15, 15))
    d.rectangle([w * 0.8, h * 0.3, w, h * 0.45], fill=palette[(kind + 3) % len(palette)])
    return im


def encode(im, fmt: str = "JPEG", quality: int = 92) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **({"quality": quality} if fmt == "JPEG" else {}))
    return buf.getvalue()


def candidates(n_distinct: int = 10, n_varied: int = 2) -> list[dict[str, Any]]:
    """[{name, kind, body, ctype}] in search-rank order: originals first, then their variants."""
    from PIL import ImageOps

    out = []
    originals = [scene(k) for k in range(n_distinct)]
    for k, im in enumerate(originals):
        out.append({"name": f"scene{k}", "kind": "distinct", "body": encode(im)})
    for k in range(n_varied):
        im = originals[k]
        w, h = im.size
        cw, ch = int(w * 0.05), int(h * 0.05)
        variants = {
            "exact copy": out[k]["body"],
            "PNG re-encode": encode(im, "PNG"),
            "resized 50%": encode(im.resize((w // 2, h // 2))),
            "JPEG q=40": encode(im, quality=40),
            "crop 5% corner": encode(im.crop((0, 0, w - cw, h - ch))),
            "crop 5% centre": encode(im.crop((cw // 2, ch // 2, w - cw // 2, h - ch // 2))),
            "mirror flip": encode(ImageOps.mirror(im)),
        }
        for kind, body in variants.items():
            out.append({"name": f"scene{k}/{kind}", "kind": kind, "body": body})
    for c in out:
        c["ctype"] = "image/png" if c["body"][:4] == b"\x89PNG" else "image/jpeg"
    return out


# --------------------------------------------------------------------------- the agent's path


class FakeImageSearch:
    """The search service: every image query returns the candidate URLs in rank order."""

    name = "fake-image-search"

    def __init__(self, urls: list[str]):
        self.urls = urls

    async def text(self, query: str, k: int = 10) -> list:
        return []

    async def images(self, query: str, k: int = 10) -> list:
        from orig_local.retrieval.base import ImageHit

        return [ImageHit(image_url=u, title=f"candidate {i}", rank=i, backend=self.name)
                for i, u in enumerate(self.urls[:k], 1)]


class CallCounter:
    """Wraps the scripted reply function: one entry per real backbone call (schema, images)."""

    def __init__(self, reply):
        self.reply = reply
        self.calls: list[tuple[str, list]] = []

    def __call__(self, messages, schema):
        request = next(m for m in messages if m.role == "user")
        self.calls.append((getattr(schema, "__name__", "text"), [ref.to_pil() for ref in request.images]))
        return self.reply(messages, schema)


def build(args, urls: list[str], embedder):
    from orig_local.agent.factory import build_agent
    from orig_local.config import Config
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel
    from orig_local.llm.simulated import orig_responder
    from orig_local.retrieval.config import FetchConfig
    from orig_local.retrieval.retriever import Retriever

    n = len(urls)
    agent_cfg = {"image_top_k": n, "images_per_query": min(n, 20), "fixed_rounds": 1, "dedup": True}
    if args.dedup_threshold is not None:
        agent_cfg["dedup_threshold"] = args.dedup_threshold
    config = Config.model_validate({"agent": agent_cfg})
    counter = CallCounter(orig_responder())
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="sim", concurrency=1000), replies=[counter],
                             cycle=True)
    fetch = FetchConfig(allow_loopback=True, per_host_interval_s=0, per_host_concurrency=32)
    retriever = Retriever(FakeImageSearch(urls), fetch_config=fetch)
    agent = build_agent(config, chat=chat, retriever=retriever, generator=False, embedder=embedder)
    return agent, counter


def stage_of_each(result, cands, url_of, counter) -> tuple[dict[str, str], dict[str, int]]:
    """Candidate name -> where it stopped (or 'VLM'), read from the trace and the counted calls."""
    from PIL import Image

    from orig_local.imagehash import pixels_sha256

    by_url = {url_of[c["name"]]: c["name"] for c in cands}
    fate: dict[str, str] = {}
    for r in result.trace.records:
        for f in r.failures or []:
            if isinstance(f, dict) and f.get("url") in by_url and f.get("kind") == "duplicate":
                fate[by_url[f["url"]]] = f"fetch-time check ({r.step}): {f.get('detail', '')}"[:90]
            elif isinstance(f, dict) and f.get("url") in by_url:
                fate[by_url[f["url"]]] = f"fetch failed: {f.get('kind')}"
        out = r.output if isinstance(r.output, dict) else {}
        for d in out.get("dropped", []) if isinstance(out.get("dropped"), list) else []:
            if isinstance(d, dict) and d.get("url") in by_url:
                sim = d.get("similarity")
                label = f"{r.step}: {d.get('reason', 'dropped')}" + (f" (sim {sim:.3f})" if sim is not None else "")
                if d.get("reason") == "near_duplicate":
                    label += " [CLIP, random weights]"
                fate.setdefault(by_url[d["url"]], label)
    # What the VLM saw in the image filter: match pixels of the images in each counted call.
    pixels: dict[str, list[str]] = {}
    for c in cands:
        with Image.open(io.BytesIO(c["body"])) as im:
            pixels.setdefault(pixels_sha256(im.convert("RGB")), []).append(c["name"])
    shown: Counter = Counter()
    for schema, images in counter.calls:
        if schema == "ImageFilter":
            for im in images:
                names = [n for n in pixels.get(pixels_sha256(im), []) if n not in fate]
                if names:
                    fate[names[0]] = "reached the VLM (image filter)"
                    shown["matched"] += 1
                else:
                    shown["unmatched"] += 1
    for c in cands:
        fate.setdefault(c["name"], "UNACCOUNTED (not fetched, dropped or shown?)")
    return fate, dict(shown)


def closeness(cands) -> dict[str, str]:
    """Each variant against its original, computed here independently of the agent: same
    bytes? same pixels? dHash distance in bits (<= 6 counts as a copy at fetch time)."""
    import hashlib

    from PIL import Image

    from orig_local.imagehash import dhash64, hamming, pixels_sha256

    def decoded(body):
        with Image.open(io.BytesIO(body)) as im:
            return im.convert("RGB")

    out = {}
    originals = {c["name"]: c for c in cands if c["kind"] == "distinct"}
    for c in cands:
        base = originals.get(c["name"].split("/")[0])
        if base is None or base is c:
            out[c["name"]] = ""
            continue
        a, b = decoded(base["body"]), decoded(c["body"])
        if hashlib.sha256(base["body"]).digest() == hashlib.sha256(c["body"]).digest():
            out[c["name"]] = "same bytes"
        elif a.size == b.size and pixels_sha256(a) == pixels_sha256(b):
            out[c["name"]] = "same pixels"
        else:
            out[c["name"]] = f"dHash {hamming(dhash64(a), dhash64(b))} bits"
    return out


async def run_once(args, cands, embedder, server) -> tuple[Any, CallCounter, dict[str, str], int]:
    urls = [server.url(f"/img/{i}") for i in range(len(cands))]
    agent, counter = build(args, urls, embedder)
    try:
        result = await agent.run(args.prompt)
    finally:
        await agent.aclose()
    if result.error:
        raise SystemExit(f"agent run failed: {result.error}")
    return result, counter, {c["name"]: u for c, u in zip(cands, urls, strict=True)}, agent.config.max_images_per_call


def path_section(args, embedder) -> None:
    from orig_local.retrieval.testserver import LoopbackServer, respond

    cands = candidates(args.distinct)
    routes = {f"/img/{i}": respond(c["body"], c["ctype"]) for i, c in enumerate(cands)}
    with LoopbackServer(routes) as server:
        forget = getattr(embedder, "forget", None)

        def one():
            if forget:
                forget()  # cold CLIP cache in every round
            return asyncio.run(run_once(args, cands, embedder, server))

        samples = measure(one, repeats=args.repeats, warmup=1)
    result, counter, url_of, per_call = samples.results[-1]
    fate, shown = stage_of_each(result, cands, url_of, counter)

    print(f"\n{len(cands)} candidates, one image query; backbone: scripted (counts real calls)\n")
    near = closeness(cands)
    print("| candidate | vs its original | caught by / outcome |\n|---|---|---|")
    for c in cands:
        print(f"| {c['name']} | {near[c['name']]} | {fate[c['name']]} |")
    by_schema = Counter(s for s, _ in counter.calls)
    filter_calls = [len(ims) for s, ims in counter.calls if s == "ImageFilter"]
    reached = sum(filter_calls)
    print("\nstage totals: " + ", ".join(f"{k}: {v}" for k, v in Counter(
        (f.split(":")[0] if not f.startswith("reached") else "VLM") for f in fate.values()).items()))
    if any("random weights" in f for f in fate.values()):
        print("  CLIP verdicts above come from random weights (no weights offline): they show the path "
              "runs, not what real CLIP would keep")
    print(f"candidates reaching the VLM image filter: {reached} of {len(cands)} "
          f"(in {len(filter_calls)} call(s) of {filter_calls} images; batches of {per_call})")
    if shown.get("unmatched"):
        print(f"  note: {shown['unmatched']} image(s) in the filter calls matched no candidate's pixels")
    print("VLM calls in the run, by request: " + ", ".join(f"{k} {v}" for k, v in sorted(by_schema.items()))
          + f"  (total {sum(by_schema.values())})")
    n = len(cands)
    print(f"for comparison: asking a VLM about every pair would be {n * (n - 1) // 2} comparisons")
    print()
    print_timing("agent run (fetch+hash+CLIP dedup+filter), cold cache", samples, items=n)


# --------------------------------------------------------------------------- per transformation


def logo(kind: int, size=(600, 400)):
    """A flat logo on white (the dHash thumbnail of such a picture has almost no set bits)."""
    from PIL import Image, ImageDraw

    im = Image.new("RGB", size, (255, 255, 255))
    d = ImageDraw.Draw(im)
    w, h = size
    colour = [(200, 30, 30), (30, 60, 200), (20, 140, 60), (240, 150, 0)][kind % 4]
    if kind == 0:
        d.ellipse([w * .4, h * .35, w * .6, h * .65], fill=colour)
    elif kind == 1:
        d.rectangle([w * .4, h * .35, w * .6, h * .65], fill=colour)
    elif kind == 2:
        d.polygon([(w * .5, h * .3), (w * .62, h * .68), (w * .38, h * .68)], fill=colour)
    else:
        d.text((w * .42, h * .45), "ACME", fill=colour)
    return im


def text_page(seed: int, size=(600, 800)):
    """A page of text (distinct pages share their layout: dHash sees only the layout)."""
    import random

    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor".split()
    im = Image.new("RGB", size, (255, 255, 255))
    d = ImageDraw.Draw(im)
    for row in range(40):
        d.text((40, 40 + row * 18), " ".join(rng.choice(words) for _ in range(12)), fill=(0, 0, 0))
    return im


def transformations() -> dict[str, Any]:
    from PIL import Image, ImageDraw

    def reopen(im, quality):
        return Image.open(io.BytesIO(encode(im, quality=quality))).convert("RGB")

    def crop(im, share):
        w, h = im.size
        dx, dy = int(w * share / 2), int(h * share / 2)
        return im.crop((dx, dy, w - dx, h - dy))

    def watermark(im):
        out = im.convert("RGBA")
        layer = Image.new("RGBA", out.size, (0, 0, 0, 0))
        d = ImageDraw.Draw(layer)
        for i in range(3):
            d.text((out.width * .55, out.height * (.8 + .05 * i)), "(c) stockphotos.invalid", fill=(128, 128, 128, 170))
        return Image.alpha_composite(out, layer).convert("RGB")

    def letterbox(im):
        out = Image.new("RGB", (im.width, int(im.height * 1.35)), (0, 0, 0))
        out.paste(im, (0, int(im.height * .175)))
        return out

    return {
        "thumbnail 40%": lambda im: im.resize((int(im.width * .4), int(im.height * .4)), Image.LANCZOS),
        "JPEG q50": lambda im: reopen(im, 50),
        "watermark": watermark,
        "crop 8%": lambda im: crop(im, .08),
        "crop 15%": lambda im: crop(im, .15),
        "rotation 5°": lambda im: im.rotate(5, resample=Image.BICUBIC, fillcolor=(0, 0, 0)),
        "rotation 10°": lambda im: im.rotate(10, resample=Image.BICUBIC, fillcolor=(0, 0, 0)),
        "letterbox": letterbox,
    }


def transform_section(args, embedder) -> None:
    import hashlib
    import itertools

    from orig_local.config import Config
    from orig_local.imagehash import best_copy, fingerprint, hamming, same_picture

    config = Config()
    bits = config.retrieval.fetch.dhash_max_distance
    threshold = args.dedup_threshold if args.dedup_threshold is not None else config.agent.dedup_threshold
    originals = {**{f"scene{k}": scene(k) for k in range(10)}, **{f"logo{k}": logo(k) for k in range(4)},
                 **{f"text{k}": text_page(k) for k in range(3)}}
    names = list(originals)
    variants = {t: {n: fn(im) for n, im in originals.items()} for t, fn in transformations().items()}
    fps = {n: fingerprint(im) for n, im in originals.items()}
    vecs = dict(zip(names, embedder.embed_images([originals[n] for n in names]), strict=True))

    def checks(a, b, fa, fb, va, vb):
        sha = hashlib.sha256(encode(a)).digest() == hashlib.sha256(encode(b)).digest()
        return {"sha256": sha, f"dHash <= {bits}": hamming(fa.dhash, fb.dhash) <= bits,
                "guarded dHash": same_picture(fa, fb, bits)[0], f"CLIP >= {threshold}": float(va @ vb) >= threshold}

    print(f"\n### Per transformation: {len(originals)} originals (10 scenes, 4 flat logos, 3 text pages); "
          f"CLIP {'tiny' if args.tiny else args.model} random weights (its column is not evidence of real CLIP)\n")
    cols = list(checks(originals[names[0]], originals[names[0]], fps[names[0]], fps[names[0]],
                       vecs[names[0]], vecs[names[0]]))
    print("| transformation | " + " | ".join(f"caught by {c}" for c in cols)
          + " | original kept: first arrived | original kept: best copy |")
    print("|---|" + "---:|" * (len(cols) + 2))
    for t, group in variants.items():
        vv = dict(zip(names, embedder.embed_images([group[n] for n in names]), strict=True))
        caught = Counter()
        for n in names:
            for c, hit in checks(group[n], originals[n], fingerprint(group[n]), fps[n], vv[n], vecs[n]).items():
                caught[c] += hit
        best = sum(best_copy([group[n], originals[n]]) == 1 for n in names)  # the copy arrived first
        print(f"| {t} | " + " | ".join(f"{caught[c]}/{len(names)}" for c in cols)
              + f" | 0/{len(names)} | {best}/{len(names)} |")
    all_group = sum(best_copy([variants["thumbnail 40%"][n], variants["watermark"][n], variants["JPEG q50"][n],
                               originals[n]]) == 3 for n in names)
    print(f"\ngroup of thumbnail + watermark + JPEG q50 arriving before the original: original kept "
          f"{all_group}/{len(names)} (first arrived: 0/{len(names)})")
    wrong = Counter()
    pairs = list(itertools.combinations(names, 2))
    for a, b in pairs:
        for c, hit in checks(originals[a], originals[b], fps[a], fps[b], vecs[a], vecs[b]).items():
            wrong[c] += hit
    print(f"wrongly merged among the {len(pairs)} pairs of distinct originals: "
          + ", ".join(f"{c}: {wrong[c]}" for c in cols))
    close = [(a, b, hamming(fps[a].dhash, fps[b].dhash)) for a, b in pairs if hamming(fps[a].dhash, fps[b].dhash) <= 10]
    print("  distinct pairs within 10 dHash bits: " + ", ".join(f"{a}~{b} {d} bits" for a, b, d in close))


def throughput_section(args, model: str, name: str) -> None:
    import torch

    from orig_local.embeddings.clip import OpenClipEmbedder

    images = [scene(k % 10, size=(640, 480)).rotate(7 * k) for k in range(args.images)]
    default_threads = torch.get_num_threads()
    print(f"\n### {name} image embedding, random weights, cpu, {len(images)} images of 640x480 per round "
          f"(preprocess included), cold cache")
    for precision in args.precisions.split(","):
        emb = OpenClipEmbedder(model, pretrained=None, device="cpu", precision=precision)
        for threads in (default_threads, 1):
            for bs in [int(b) for b in args.batch_sizes.split(",")]:
                emb.batch_size = bs
                torch.set_num_threads(threads)

                def run(emb=emb):
                    emb.forget()
                    before = emb.images_embedded
                    emb.embed_images(images)
                    assert emb.images_embedded - before == len(images)

                samples = measure(run, repeats=args.repeats, warmup=1)
                label = f"{precision}, {threads} thread(s), batch {bs}"
                goal = GOAL_IMAGES_PER_S if threads == 2 and cores() == 2 and name == "ViT-B-32" else None
                per_s = [len(images) / w for w in samples.wall]
                per_cpu = [len(images) / c for c in samples.cpu]
                figure(f"{label}: wall", per_s, "img/s", goal=goal)
                figure(f"{label}: per CPU-second", per_cpu, "img/CPU-s")
                if threads == 1 and name == "ViT-B-32":
                    figure(f"{label}: x2 cores, if idle (projection)", [2 * r for r in per_cpu], "img/s",
                           goal=GOAL_IMAGES_PER_S, note="2 x per-CPU-second: not a measurement")
                if threads == 1:
                    break  # batch size matters little single-threaded; one row is enough
    torch.set_num_threads(default_threads)
    if cores() != 2:
        print(f"  (the goal, {GOAL_IMAGES_PER_S} images/s, is stated for 2 cores; this machine gives {cores()})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="ViT-B-32", help="open_clip architecture (random weights)")
    parser.add_argument("--images", type=int, default=32, help="images per throughput round")
    parser.add_argument("--precisions", default="fp32,bf16", help="embedder precisions to time")
    parser.add_argument("--batch-sizes", default="32,8", help="batch sizes to time (multi-threaded)")
    parser.add_argument("--precision", default="auto", help="embedder precision in the agent-path section")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--distinct", type=int, default=10,
                        help="distinct scenes in the candidate set (> 8 shows the filter's batching)")
    parser.add_argument("--dedup-threshold", type=float, default=None,
                        help="CLIP cosine threshold (default: the agent's); random weights need ~0.999")
    parser.add_argument("--prompt", default="The Veltrane Harbor Lighthouse at dusk")
    parser.add_argument("--tiny", action="store_true", help="use the tiny local CLIP instead (seconds)")
    parser.add_argument("--sections", default="transform,path,throughput",
                        help="comma-separated subset of: transform, path, throughput")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)  # open_clip warns on purpose about random weights

    model, name = args.model, args.model
    if args.tiny:
        from orig_local.paths import tiny_models_dir
        from orig_local.tiny.build import build_one

        model, name = "local-dir:" + str(build_one("clip", tiny_models_dir())), "tiny-clip"
    from orig_local.embeddings.clip import OpenClipEmbedder

    header(f"Image dedup through the agent's path ({name} CLIP, random weights)", repeats=args.repeats,
           images=args.images)
    embedder = OpenClipEmbedder(model, pretrained=None, device="cpu", precision=args.precision)
    sections = set(args.sections.split(","))
    if "transform" in sections:
        transform_section(args, embedder)
    if "path" in sections:
        path_section(args, embedder)
    if "throughput" not in sections:
        footer()
        return 0
    throughput_section(args, model, name)
    footer()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
