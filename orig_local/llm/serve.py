"""Serve a chat preset with vLLM: the command line from the preset's ``serve`` section.

vLLM is not a dependency of this package: its wheels pin their own torch/transformers and are
CUDA-only, so it lives in its own environment and we only run its ``vllm`` executable, found as
``--vllm-bin``, ``$ORIG_VLLM_BIN``, or ``vllm`` on ``PATH``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from orig_local.errors import OrigError, UsageError
from orig_local.llm.local_server import ServerProcess
from orig_local.presets import Preset, ServeSpec, load_preset

INSTALL_HINT = (
    "vLLM is not installed (or not found). Install it in its own environment, because its wheels "
    "pin their own torch and transformers versions (GPU machine with CUDA):\n"
    "    python -m venv ~/vllm-env && ~/vllm-env/bin/pip install vllm\n"
    "then point orig at it with `--vllm-bin ~/vllm-env/bin/vllm` or "
    "`export ORIG_VLLM_BIN=~/vllm-env/bin/vllm`."
)


class VLLMNotFound(OrigError, RuntimeError):
    """No ``vllm`` executable: the message says how to install one."""


def find_vllm(explicit: str | None = None) -> str:
    """The ``vllm`` executable to run, or :class:`VLLMNotFound` with install instructions."""
    candidate = explicit or os.environ.get("ORIG_VLLM_BIN") or "vllm"
    path = Path(candidate).expanduser()
    if path.parent != Path(".") or path.is_absolute():  # a path was given: it must exist
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise VLLMNotFound(f"{candidate} is not an executable file.\n{INSTALL_HINT}")
    found = shutil.which(candidate)
    if not found:
        raise VLLMNotFound(INSTALL_HINT)
    return found


def hub_preset(model: str, revision: str | None = None) -> Preset:
    """A chat preset for a model given by hub id (or folder) alone: the default serve flags."""
    return Preset(name=model, hf_id=model, revision=revision, role=["backbone", "judge"], serve=ServeSpec(),
                  notes="hub id without a preset: default serve flags")


def vllm_command(preset: Preset, *, vllm_bin: str = "vllm", host: str = "127.0.0.1", port: int = 8000,
                 extra_args: Sequence[str] = ()) -> list[str]:
    """``vllm serve`` argv for a chat preset (flags from its ``serve`` section).

    ``extra_args`` (``orig serve ... -- <flags>``) come last: vLLM's parser keeps the last value
    of a repeated flag, so they override the preset's."""
    spec = preset.serve
    if spec is None:
        raise UsageError(f"preset {preset.name!r} has no `serve` section (not a chat model?)")
    cmd = [
        vllm_bin, "serve", preset.path,
        "--host", host, "--port", str(port),
        # the preset's dtype unless the serve section says otherwise: vLLM's own choice would
        # turn the float32 tiny models into bf16
        "--dtype", spec.dtype or preset.dtype,
        "--tensor-parallel-size", str(spec.tensor_parallel_size),
        "--max-model-len", str(spec.max_model_len),
        "--gpu-memory-utilization", f"{spec.gpu_memory_utilization:g}",
        "--limit-mm-per-prompt", json.dumps(spec.limit_mm_per_prompt, separators=(",", ":")),
    ]
    if spec.mm_processor_kwargs:
        cmd += ["--mm-processor-kwargs", json.dumps(spec.mm_processor_kwargs, separators=(",", ":"))]
    cmd.append("--enable-prefix-caching" if spec.enable_prefix_caching else "--no-enable-prefix-caching")
    if spec.enable_prefix_caching:  # usage then says how many prompt tokens the cache served
        cmd.append("--enable-prompt-tokens-details")
    if spec.structured_outputs:
        cmd += ["--structured-outputs-config", json.dumps(spec.structured_outputs, separators=(",", ":"))]
    if preset.revision and not preset.is_tiny:
        cmd += ["--revision", preset.revision]
    if spec.served_model_name:
        cmd += ["--served-model-name", spec.served_model_name]
    return cmd + list(spec.extra_args) + list(extra_args)


def served_model_name(preset: Preset) -> str:
    """The name clients must send as ``model``."""
    return (preset.serve and preset.serve.served_model_name) or preset.path


def vllm_server(
    preset_name: str,
    *,
    vllm_bin: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    startup_timeout_s: float = 1800.0,  # first start downloads and compiles: minutes for 72B
    log_path: str | Path | None = None,
    extra_args: Sequence[str] = (),
    api_key: str | None = None,
    env: dict[str, str] | None = None,
) -> ServerProcess:
    """A (not yet started) vLLM server for ``preset_name``. ``api_key`` reaches vLLM as
    ``$VLLM_API_KEY``, never on its command line (``ps`` and vLLM's start-up log show that)."""
    preset = load_preset(preset_name)
    command = vllm_command(preset, vllm_bin=find_vllm(vllm_bin), host=host, port=port, extra_args=extra_args)
    return ServerProcess(command, host=host, port=port, model=served_model_name(preset),
                         startup_timeout_s=startup_timeout_s, log_path=log_path,
                         env=server_env(api_key, env))


def server_env(api_key: str | None, base: dict[str, str] | None = None) -> dict[str, str] | None:
    """The server's environment: ``base`` (default: ours) plus ``VLLM_API_KEY`` when a key is set."""
    if api_key is None:
        return base
    return {**(base if base is not None else os.environ), "VLLM_API_KEY": api_key}
