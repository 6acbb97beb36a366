"""`orig chat`: one round trip through the configured chat model (backbone or judge)."""

from __future__ import annotations

import json

HELP = "send one message (text + optional images) to the configured chat model and print the reply"


def add_arguments(parser) -> None:
    from orig_local.cli import add_config_arguments

    parser.add_argument("text", help="the user message")
    parser.add_argument("--image", action="append", default=[], metavar="PATH", help="attach an image (repeatable)")
    parser.add_argument("--system", default=None, help="optional system message")
    parser.add_argument("--role", choices=["backbone", "judge"], default="backbone",
                        help="which configured chat model to talk to (default backbone)")
    parser.add_argument("--temperature", type=float, default=None, help="override the configured temperature")
    parser.add_argument("--logprobs", type=int, default=None, metavar="K", help="show the first token's top-K logprobs")
    parser.add_argument("--json", action="store_true", help="print the reply as one JSON object")
    add_config_arguments(parser)


async def _chat(args, config):
    from pathlib import Path

    from orig_local.llm import make_chat_model, system, user

    images = [Path(p) for p in args.image]  # a str part would be text, a Path is an image
    chat_config = getattr(config, args.role)
    model = make_chat_model(chat_config, cache_dir=config.resolved_cache_dir())
    try:
        messages = ([system(args.system)] if args.system else []) + [user(*images, args.text)]
        return await model.chat(messages, temperature=args.temperature, logprobs=args.logprobs)
    finally:
        await model.aclose()


def run(args) -> int:
    import asyncio
    import logging
    import os
    import sys

    from orig_local.cli import config_from_args
    from orig_local.llm import ChatError

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request is noise here
    config = config_from_args(args)
    missing = [p for p in args.image if not os.path.isfile(p)]
    if missing:
        print(f"orig chat: no such image file: {', '.join(missing)}", file=sys.stderr)
        return 2
    from orig_local.evaluation.preflight import check_chat_server

    # A server that is down fails here in seconds with the fix named, not after every retry.
    check_chat_server(args.role, getattr(config, args.role))
    try:
        reply = asyncio.run(_chat(args, config))
    except ChatError as exc:
        print(f"orig chat: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({
            "text": reply.text, "model": reply.model, "cached": reply.cached,
            "prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens,
            "latency_s": round(reply.latency_s, 4), "top_logprobs": reply.top_logprobs,
            "finish_reason": reply.finish_reason, "truncated": reply.truncated,
        }, ensure_ascii=False))
        return 0
    print(reply.text)
    print(f"[{reply.model} | prompt {reply.usage.prompt_tokens} + completion {reply.usage.completion_tokens} "
          f"tokens | {reply.latency_s:.2f}s{' | cached' if reply.cached else ''}"
          f"{' | CUT at max_tokens (finish_reason=length)' if reply.truncated else ''}]", file=sys.stderr)
    if reply.top_logprobs:
        print(f"[first-token logprobs: {reply.top_logprobs}]", file=sys.stderr)
    return 0
