"""`orig serve`: start vLLM for a chat preset, wait until healthy, print the base URL."""

from __future__ import annotations

import shlex
import signal
import sys

HELP = "serve a chat model preset with vLLM (OpenAI-compatible API)"


def add_arguments(parser) -> None:
    parser.add_argument("--preset", required=True, help="chat preset in models/, e.g. qwen2.5-vl-7b")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="listen port (default 8000)")
    parser.add_argument("--vllm-bin", default=None,
                        help="path of the vllm executable (default: $ORIG_VLLM_BIN, else `vllm` on PATH)")
    parser.add_argument("--dry-run", action="store_true", help="print the vllm command line and exit")
    parser.add_argument("--startup-timeout", type=float, default=1800.0,
                        help="seconds to wait for /health (default 1800: first starts download weights)")
    parser.add_argument("--log-file", default=None, help="vLLM's output goes here (default: a temp file)")
    parser.add_argument("--tensor-parallel-size", type=int, default=None, help="override the preset's value")
    parser.add_argument("--max-model-len", type=int, default=None, help="override the preset's value")
    parser.add_argument("--gpu-memory-utilization", type=float, default=None, help="override the preset's value")


def run(args) -> int:
    from orig_local.llm.serve import VLLMNotFound, find_vllm, served_model_name, vllm_command
    from orig_local.llm.local_server import ServerProcess, ServerStartError
    from orig_local.presets import load_preset

    preset = load_preset(args.preset)
    if preset.serve is None:
        print(f"orig serve: preset {preset.name!r} is not a chat model (no `serve` section)", file=sys.stderr)
        return 2
    overrides = {k: getattr(args, k) for k in ("tensor_parallel_size", "max_model_len", "gpu_memory_utilization")
                 if getattr(args, k) is not None}
    if overrides:
        preset = preset.model_copy(update={"serve": preset.serve.model_copy(update=overrides)})
    if args.dry_run:
        print(shlex.join(vllm_command(preset, vllm_bin=args.vllm_bin or "vllm", host=args.host, port=args.port)))
        return 0
    try:
        vllm_bin = find_vllm(args.vllm_bin)
    except VLLMNotFound as exc:
        print(f"orig serve: {exc}", file=sys.stderr)
        return 1
    command = vllm_command(preset, vllm_bin=vllm_bin, host=args.host, port=args.port)
    server = ServerProcess(command, host=args.host, port=args.port, model=served_model_name(preset),
                           startup_timeout_s=args.startup_timeout, log_path=args.log_file)
    print(f"starting: {shlex.join(command)}\nlog: {server.log_path}", flush=True)
    # SIGTERM (e.g. from a job scheduler) must also take vLLM down: turn it into a clean exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        server.start()
        print(f"ready: base_url={server.base_url} model={server.model}\n"
              f"use it with: -s backbone.base_url={server.base_url} -s backbone.preset={preset.name}\n"
              f"Ctrl-C stops the server.", flush=True)
        server.process.wait()
        print(f"orig serve: vLLM exited with code {server.process.returncode}; see {server.log_path}",
              file=sys.stderr)
        return 1
    except ServerStartError as exc:
        print(f"orig serve: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
