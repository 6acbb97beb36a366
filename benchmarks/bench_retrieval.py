"""Page-extraction and image fetch/decode throughput on a fixed set served on loopback.

    python benchmarks/bench_retrieval.py [--pages 60] [--images 60] [--concurrency 8]

Prints, for pages: end-to-end reads/s (HTTP + decode + trafilatura markdown + checks) and
extraction-only pages/s; for images: end-to-end fetches/s (HTTP + verify + decode + EXIF +
RGB + downscale + hashes) and decode-only images/s. The set is generated deterministically
(seeded), so numbers are comparable across machines and commits.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

WORDS = ("lighthouse harbour spiral teal orange lantern hexagonal basalt tower keeper gallery "
         "beetle violet stripes crescent horn tram cream headlight pantograph football sash crest "
         "kestrel stadium museum visitors history century painted built light flashes green").split()


def make_pages(n: int, rng: random.Random) -> list[bytes]:
    from orig_local.retrieval.testserver import article_html

    pages = []
    for i in range(n):
        paras = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))).capitalize() + "."
                 for _ in range(rng.randint(8, 25))]
        html = article_html(f"Article {i}", paras)
        # realistic weight: scripts, menus and sidebars around the article
        junk = "".join(f"<div class='sidebar'><a href='/l{j}'>Link {j}</a></div>" for j in range(120))
        script = "<script>var x = '" + "a" * 8000 + "';</script>"
        pages.append(html.replace("<footer>", junk + script + "<footer>").encode())
    return pages


def make_images(n: int, rng: random.Random) -> list[tuple[bytes, str]]:
    from orig_local.retrieval.testserver import image_bytes

    out = []
    for i in range(n):
        w, h = rng.choice([(1600, 1200), (1024, 768), (800, 600), (2048, 1365)])
        fmt = "JPEG" if i % 2 == 0 else "PNG"
        color = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        out.append((image_bytes(w, h, color=color, fmt=fmt, pattern=i), f"image/{fmt.lower()}"))
    return out


async def bench(args) -> None:
    from orig_local.retrieval.config import FetchConfig, ReaderConfig
    from orig_local.retrieval.httpfetch import HttpSession
    from orig_local.retrieval.images import WebImageFetcher, decode_image
    from orig_local.retrieval.reader import WebPageReader
    from orig_local.retrieval.testserver import LoopbackServer, respond

    rng = random.Random(0)
    pages, images = make_pages(args.pages, rng), make_images(args.images, rng)
    routes = {f"/p{i}": respond(body) for i, body in enumerate(pages)}
    routes.update({f"/i{i}": respond(body, ctype) for i, (body, ctype) in enumerate(images)})
    fetch_cfg = FetchConfig(allow_loopback=True, per_host_interval_s=0, per_host_concurrency=args.concurrency,
                            max_side=1024)
    with LoopbackServer(routes) as server:
        session = HttpSession(fetch_cfg)
        reader = WebPageReader(ReaderConfig(), session)
        fetcher = WebImageFetcher(fetch_cfg, session)
        sem = asyncio.Semaphore(args.concurrency)

        async def limited(coro):
            async with sem:
                return await coro

        reader.extractor  # load trafilatura before timing  # noqa: B018
        start = time.perf_counter()
        results = await asyncio.gather(*(limited(reader.read(server.url(f"/p{i}"))) for i in range(len(pages))))
        read_s = time.perf_counter() - start
        ok = sum(1 for r in results if hasattr(r, "text"))

        raws = [await session.get(server.url(f"/p{i}"), max_bytes=10**7, max_redirects=0, timeout_s=30)
                for i in range(len(pages))]
        start = time.perf_counter()
        for raw in raws:
            reader.parse(raw)
        parse_s = time.perf_counter() - start

        start = time.perf_counter()
        fetched = await asyncio.gather(*(limited(fetcher.fetch(server.url(f"/i{i}"))) for i in range(len(images))))
        fetch_s = time.perf_counter() - start
        got = sum(1 for f in fetched if hasattr(f, "bytes_sha256"))

        start = time.perf_counter()
        for i, (body, ctype) in enumerate(images):
            decode_image(body, f"/i{i}", fetch_cfg, None, ctype)
        decode_s = time.perf_counter() - start
        await session.aclose()

    mb_pages = sum(map(len, pages)) / 1e6
    mb_images = sum(len(b) for b, _ in images) / 1e6
    print(f"pages : {len(pages)} pages, {mb_pages:.1f} MB, {ok} read OK")
    print(f"        end-to-end (HTTP+extract, concurrency {args.concurrency}): {len(pages) / read_s:7.1f} pages/s")
    print(f"        extraction only (decode+trafilatura+checks, 1 thread): {len(pages) / parse_s:7.1f} pages/s")
    print(f"images: {len(images)} images, {mb_images:.1f} MB, {got} fetched OK")
    print(f"        end-to-end (HTTP+verify+decode+downscale+hash, concurrency {args.concurrency}): "
          f"{len(images) / fetch_s:7.1f} images/s")
    print(f"        decode only (1 thread): {len(images) / decode_s:7.1f} images/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--images", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=8)
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
