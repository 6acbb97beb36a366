"""`orig serve`: start vLLM for a chat preset, wait until healthy, print the base URL.

Any other `vllm serve` flag goes after ``--`` and is passed through verbatim (last, so it wins
over the preset's): ``orig serve --preset qwen2.5-vl-7b -- --max-num-seqs 64 --enforce-eager``.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from typing import Any

HELP = "serve a chat model preset with vLLM (OpenAI-compatible API)"

# Flags orig serve itself must know (readiness check, the printed base URL): not passed through.
OWN_FLAGS = ("--host", "--port", "--revision", "--api-key")


def add_arguments(parser) -> None:
    parser.add_argument("--preset", help="chat preset (`orig models --role backbone`), e.g. qwen2.5-vl-7b")
    parser.add_argument("--model", default=None,
                        help="hub id (or folder) to serve instead of the preset's; alone: default serve flags")
    parser.add_argument("--revision", default=None,
                        help="hub revision (branch, tag, commit sha); default: the preset's")
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
    parser.add_argument("--api-key", default=None, metavar="KEY",
                        help="require this API key (vLLM's --api-key; prefer --api-key-env: a key typed here "
                             "stays in your shell history)")
    parser.add_argument("--api-key-env", default=None, metavar="VAR",
                        help="require the API key held in this environment variable (e.g. OPENAI_API_KEY); "
                             "it reaches vLLM as $VLLM_API_KEY, never on a command line or in a log")
    parser.add_argument("--role", choices=["backbone", "judge"], default=None,
                        help="which config section the printed hint sets (default: from the preset's roles)")
    parser.add_argument("vllm_args", nargs="*", metavar="-- VLLM_FLAGS",
                        help="any other `vllm serve` flags, after `--`")


def _fail(message: str) -> int:
    print(f"orig serve: {message}", file=sys.stderr)
    return 2


def own_flag(arg: str) -> str | None:
    """The flag of :data:`OWN_FLAGS` that vLLM's parser would read ``arg`` as, else None.

    vLLM's ``FlexibleArgumentParser`` turns ``_`` into ``-`` in a flag's name (``--api_key``)
    and, being argparse, accepts ``--flag=value`` and any unambiguous prefix (``--api-k``); a
    prefix that is ambiguous makes vLLM exit, so refusing it here loses nothing."""
    if not arg.startswith("--") or len(arg) <= 2:
        return None
    name = "--" + arg[2:].split("=", 1)[0].replace("_", "-")
    return next((f for f in OWN_FLAGS if f.startswith(name)), None)


def _last_value(args: list[str], flag: str) -> str | None:
    """The value vLLM will use for ``flag`` in ``args`` (its parser keeps the last one)."""
    value = None
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
    return value


def run(args) -> int:
    from orig_local.llm.local_server import ServerProcess
    from orig_local.llm.serve import VLLMNotFound, find_vllm, hub_preset, server_env, vllm_command
    from orig_local.presets import load_preset

    if not args.preset and not args.model:
        return _fail("name what to serve: --preset <preset> (see `orig models`) or --model <hub id>")
    for arg in args.vllm_args:
        own = own_flag(arg)
        if own:
            return _fail(f"give {own} to orig serve itself (before `--`), not to vLLM: "
                         "orig serve needs it to check readiness and print the URL")
    preset = load_preset(args.preset) if args.preset else hub_preset(args.model)
    if preset.serve is None:
        return _fail(f"preset {preset.name!r} is not a chat model (no `serve` section)")
    preset = _with_overrides(preset, args)
    api_key = args.api_key
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            return _fail(f"--api-key-env {args.api_key_env}: that environment variable is not set")
    extra = list(args.vllm_args)
    if args.dry_run:
        print(shlex.join(vllm_command(preset, vllm_bin=args.vllm_bin or "vllm", host=args.host, port=args.port,
                                      extra_args=extra)))
        return 0
    try:
        vllm_bin = find_vllm(args.vllm_bin)
    except VLLMNotFound as exc:
        print(f"orig serve: {exc}", file=sys.stderr)
        return 1
    if preset.is_tiny:
        preset.ensure_path()  # a tiny model is built on first use (seconds)
    command = vllm_command(preset, vllm_bin=vllm_bin, host=args.host, port=args.port, extra_args=extra)
    model = _last_value(command, "--served-model-name") or preset.path
    server = ServerProcess(command, host=args.host, port=args.port, model=model,
                           startup_timeout_s=args.startup_timeout, log_path=args.log_file,
                           env=server_env(api_key))
    print(f"starting: {shlex.join(command)}\nlog: {server.log_path}", flush=True)
    return _serve(server, args, preset)


def _with_overrides(preset, args):
    """The preset with what the command line changes: the model (``--model``), the revision and
    the serve settings given as flags."""
    update: dict[str, Any] = {}
    if args.model:
        update.update(hf_id=args.model, revision=None)
    if args.revision:
        update["revision"] = args.revision
    overrides = {k: getattr(args, k) for k in ("tensor_parallel_size", "max_model_len", "gpu_memory_utilization")
                 if getattr(args, k) is not None}
    if overrides:
        update["serve"] = preset.serve.model_copy(update=overrides)
    return preset.model_copy(update=update) if update else preset


def _serve(server, args, preset) -> int:
    """Start vLLM, say how to use it and wait until it exits (1: it died or never became ready)
    or the user stops it (0); the server is stopped on every way out."""
    from orig_local.llm.local_server import ServerStartError

    # SIGTERM (e.g. from a job scheduler) must also take vLLM down: turn it into a clean exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        server.start()
        print(f"ready: base_url={server.base_url} model={server.model}\n"
              f"use it with: {_usage_hint(args, preset, server)}\n"
              f"Ctrl-C stops the server.", flush=True)
        process = server.process
        assert process is not None  # start() returned: the process runs
        process.wait()
        print(f"orig serve: vLLM exited with code {process.returncode}; see {server.log_path}",
              file=sys.stderr)
        return 1
    except ServerStartError as exc:
        print(f"orig serve: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


def _usage_hint(args, preset, server) -> str:
    """The overrides that point a run at this server: the judge section for a judge-only preset."""
    role = args.role or ("backbone" if "backbone" in preset.role else "judge")
    hint = f"-s {role}.base_url={server.base_url}"
    if args.preset and not args.model:
        hint += f" -s {role}.preset={preset.name}"
    else:
        hint += f" -s {role}.model={server.model}"
    if args.api_key_env:
        hint += f" -s {role}.api_key_env={args.api_key_env}"
    elif args.api_key:
        hint += f" -s {role}.api_key_env=<a variable holding the key>"
    if "judge" in preset.role and role == "backbone":
        hint += "  (as the judge: the same with judge.*)"
    return hint
