"""`orig search "query"`: run the configured search chain and print the hits."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "search the web or the local corpus (the configured fallback chain)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from orig_local.cli import add_config_arguments
    from orig_local.retrieval import BACKENDS

    parser.add_argument("query", help="what to search for")
    parser.add_argument("--images", action="store_true", help="image search instead of text search")
    parser.add_argument("--backend", "-b", help=f"use only this backend ({', '.join(BACKENDS)})")
    parser.add_argument("-k", type=int, default=10, help="number of hits (default 10)")
    parser.add_argument("--json", action="store_true", help="print the SearchOutcome as JSON")
    parser.add_argument("--record", metavar="DIR", help="record the evidence into this snapshot folder")
    parser.add_argument("--replay", metavar="DIR", help="answer from this snapshot folder (offline)")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from orig_local.cli import config_from_args
    from orig_local.retrieval.retriever import Retriever

    config = config_from_args(args)
    retrieval = config.retrieval
    update = {}
    if args.backend:
        update["search"] = retrieval.search.model_copy(update={"chain": [args.backend]})
    if args.record:
        update["record"] = args.record
    if args.replay:
        update["replay"] = args.replay
    retrieval = retrieval.model_copy(update=update)

    async def go():
        async with Retriever.from_config(retrieval, cache_dir=config.resolved_cache_dir(), embedder=config.embed) as r:
            return await (r.search_images if args.images else r.search_text)(args.query, k=args.k)

    try:
        outcome = asyncio.run(go())
    except (FileNotFoundError, ImportError) as exc:
        print(f"orig search: {exc}\n(tiny models: python scripts/make_tiny_models.py)", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(outcome.model_dump(mode="json"), indent=1, ensure_ascii=False))
    else:
        for failure in outcome.failures:
            print(f"! {failure.backend}: {failure.kind} (attempt {failure.attempt}) {failure.detail}", file=sys.stderr)
        for hit in outcome.hits:
            if args.images:
                size = f"{hit.width}x{hit.height}" if hit.width else "?"
                print(f"{hit.rank:>3}  {hit.backend:10s} {size:>10s}  {hit.image_url}\n     {hit.title[:90]}  <{hit.page_url}>")
            else:
                print(f"{hit.rank:>3}  {hit.backend:10s} {hit.title[:70]}\n     {hit.url}")
    return 0 if outcome.hits else 1
