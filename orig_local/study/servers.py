"""One vLLM server for one chat preset, as a study needs it: started with the preset's flags
(through the serve helper), on the plan's GPUs, health-checked, and known to serve the model
the phases will ask for; stopped (SIGTERM to its process group, then SIGKILL) however the
study ends."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from orig_local.errors import PreflightError
from orig_local.study.plan import Plan

if TYPE_CHECKING:
    from orig_local.llm.local_server import ServerProcess

log = logging.getLogger(__name__)


def server_env(plan: Plan) -> dict[str, str]:
    """The environment a server starts in: the plan's server GPUs, and the study's pid so the
    guard can tell whether the study is still alive."""
    from orig_local.study.guard import PARENT_ENV

    env = dict(os.environ)
    env[PARENT_ENV] = str(os.getpid())
    if plan.gpus.devices:
        n = plan.gpus.server_gpus or len(plan.gpus.devices)
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(d) for d in plan.gpus.devices[:n])
    return env


def tensor_parallel(plan: Plan, preset_name: str) -> int:
    from orig_local.presets import load_preset

    preset = load_preset(preset_name)
    return plan.gpus.tensor_parallel.get(preset_name, preset.serve.tensor_parallel_size if preset.serve else 1)


def server_gpus(plan: Plan) -> str:
    if not plan.gpus.devices:
        return "all visible GPUs"
    n = plan.gpus.server_gpus or len(plan.gpus.devices)
    return "GPUs " + ",".join(str(d) for d in plan.gpus.devices[:n])


def preflight(plan: Plan) -> None:
    """Before anything runs: the vLLM executable exists (not found hours in, at the judge)."""
    from orig_local.llm.serve import VLLMNotFound, find_vllm

    try:
        find_vllm(plan.vllm_bin)
    except VLLMNotFound as exc:
        raise PreflightError(f"the study needs vLLM servers: {str(exc).splitlines()[0]}",
                             hint="install vLLM and set ORIG_VLLM_BIN, or `serve: false` in the plan") from None


class StudyServer:
    """A vLLM server for ``preset_name`` (not started until :meth:`start`)."""

    def __init__(self, plan: Plan, preset_name: str, role: str, log_path: Path):
        self.plan, self.preset_name, self.role, self.log_path = plan, preset_name, role, log_path
        self.process: ServerProcess | None = None  # once started

    def _started(self) -> ServerProcess:
        if self.process is None:
            raise RuntimeError(f"the {self.role} server for {self.preset_name} has not been started")
        return self.process

    @property
    def base_url(self) -> str:
        return self._started().base_url

    def command(self) -> list[str]:
        from orig_local.llm.local_server import free_port
        from orig_local.llm.serve import VLLMNotFound, find_vllm, vllm_command
        from orig_local.presets import load_preset

        preset = load_preset(self.preset_name)
        if preset.serve is None:  # check_presets refuses such a plan; a direct caller gets this
            raise PreflightError(f"preset {self.preset_name!r} has no `serve` section: it cannot be served by vLLM")
        tp = tensor_parallel(self.plan, self.preset_name)
        if tp != preset.serve.tensor_parallel_size:
            preset = preset.model_copy(update={"serve": preset.serve.model_copy(update={"tensor_parallel_size": tp})})
        if preset.is_tiny:
            preset.ensure_path()  # built on first use, like everywhere else
        try:
            vllm_bin = find_vllm(self.plan.vllm_bin)
        except VLLMNotFound as exc:
            raise PreflightError(f"cannot start the {self.role} server for {self.preset_name}: "
                                 f"{str(exc).splitlines()[0]}", hint="install vLLM and set ORIG_VLLM_BIN") from None
        self._preset = preset
        self._port = free_port(self.plan.host)
        return vllm_command(preset, vllm_bin=vllm_bin, host=self.plan.host, port=self._port)

    def start(self) -> StudyServer:
        from orig_local.llm.local_server import ServerProcess, ServerStartError
        from orig_local.llm.serve import served_model_name

        command = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # Through the guard: the server dies with the study even if the study is SIGKILLed.
        guarded = [sys.executable, "-m", "orig_local.study.guard", *command]
        process = self.process = ServerProcess(guarded, host=self.plan.host, port=self._port,
                                               model=served_model_name(self._preset), env=server_env(self.plan),
                                               startup_timeout_s=self.plan.startup_timeout_s, log_path=self.log_path)
        try:
            process.start()
            self.check_model()
        except ServerStartError as exc:
            self.stop()
            first = str(exc).splitlines()[0]
            raise PreflightError(f"the {self.role} server for {self.preset_name} did not start: {first}",
                                 hint=f"see {self.log_path}") from None
        except BaseException:
            self.stop()
            raise
        return self

    def check_model(self) -> None:
        """GET /v1/models must list the model name the phases will send."""
        import httpx

        process = self._started()
        try:
            reply = httpx.get(f"{process.base_url}/models", timeout=10.0, trust_env=False)
            reply.raise_for_status()
            served = [m.get("id") for m in reply.json().get("data", [])]
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            raise PreflightError(f"the {self.role} server for {self.preset_name} answers /health but not "
                                 f"/v1/models ({type(exc).__name__}: {exc})", hint=f"see {self.log_path}") from None
        if process.model not in served:
            raise PreflightError(f"the {self.role} server for {self.preset_name} serves {served}, "
                                 f"not {process.model!r}", hint=f"see {self.log_path}")

    def alive(self) -> bool:
        return self.process is not None and self.process.process is not None and self.process.process.poll() is None

    def exit_code(self) -> int | None:
        if self.process is None or self.process.process is None:
            return None
        return self.process.process.poll()

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL after a grace period; idempotent."""
        if self.process is not None:
            self.process.stop(grace_s=30.0)  # vLLM frees its workers and NCCL state on SIGTERM
