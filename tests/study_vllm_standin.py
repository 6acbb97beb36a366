#!/usr/bin/env python
"""A stand-in for the `vllm` executable (tests): takes `vllm serve MODEL --host H --port P ...`
like vLLM does, logs the start to $STANDIN_LOG, and serves MODEL (a tiny local model folder)
with the real OpenAI-compatible `transformers serve`. STANDIN_FAIL=1 makes it exit at once with
status 3, like a vLLM that cannot load its model."""

import argparse
import json
import os
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(prog="vllm")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    args, _rest = parser.parse_known_args()
    if os.environ.get("STANDIN_LOG"):
        with open(os.environ["STANDIN_LOG"], "a") as f:
            f.write(json.dumps({"model": args.model, "port": args.port, "pid": os.getpid(),
                                "tp": args.tensor_parallel_size, "at": time.time(),
                                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}) + "\n")
    if os.environ.get("STANDIN_FAIL"):
        print(f"stand-in vllm: cannot load {args.model} (STANDIN_FAIL)", file=sys.stderr)
        sys.exit(3)
    from orig_local.llm.local_server import offline_env, transformers_serve_command

    cmd = transformers_serve_command(args.model, host=args.host, port=args.port)
    os.execve(cmd[0], cmd, offline_env())


if __name__ == "__main__":
    main()
