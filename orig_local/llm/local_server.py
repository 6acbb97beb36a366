"""Start and stop a real OpenAI-compatible server as a child process.

:class:`ServerProcess` runs any server command, waits (bounded) for ``GET /health`` and shuts it
down cleanly; :func:`transformers_server` builds one for ``transformers serve`` — the server for
CPU users and tests (no vLLM needed)::

    with transformers_server("~/.cache/orig_local/tiny-models/qwen2_5_vl") as server:
        config = ChatConfig(backend="openai", base_url=server.base_url, model=server.model,
                            structured_mode="prompt")

``transformers serve`` has no guided decoding (it ignores ``response_format``), so clients of it
use ``structured_mode: prompt``. It serves the model under the path it was started with.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from orig_local.errors import OrigError

log = logging.getLogger(__name__)


class ServerStartError(OrigError, RuntimeError):
    """The server process exited or did not become healthy in time (message has its log tail)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def offline_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The current environment with the hub switched off (tiny local models need no network)."""
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1"})
    env.update(extra or {})
    return env


class ServerProcess:
    """A server child process with a health check. Use as a context manager or start()/stop().

    ``base_url`` is the OpenAI base (``http://host:port/v1``); ``model`` the served model name.
    stdout/stderr go to ``log_path`` (a temp file unless given) so a full pipe never blocks it.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        host: str,
        port: int,
        model: str,
        env: dict[str, str] | None = None,
        startup_timeout_s: float = 180.0,
        log_path: str | Path | None = None,
    ):
        self.command = [str(c) for c in command]
        self.host, self.port, self.model = host, port, model
        self.env = env
        self.startup_timeout_s = startup_timeout_s
        self.log_path = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="orig-server-", suffix=".log")[1])
        self.process: subprocess.Popen | None = None

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def start(self) -> ServerProcess:
        log.info("starting server: %s", " ".join(self.command))
        with open(self.log_path, "ab") as out:
            # Own session: stop() can signal the server and any workers it forks, and only them.
            self.process = subprocess.Popen(
                self.command, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                start_new_session=True,
            )
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        log.info("server ready at %s (model %s)", self.base_url, self.model)
        return self

    def wait_healthy(self) -> None:
        import httpx

        assert self.process is not None, "start() first"
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerStartError(
                    f"server exited with code {self.process.returncode} before becoming healthy:\n"
                    f"{' '.join(self.command)}\n--- log tail ({self.log_path}) ---\n{self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.root_url}/health", timeout=2.0, trust_env=False).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        raise ServerStartError(
            f"server not healthy after {self.startup_timeout_s:.0f}s: {' '.join(self.command)}\n"
            f"--- log tail ({self.log_path}) ---\n{self.log_tail()}"
        )

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the server's process group, then SIGKILL after ``grace_s``. Idempotent."""
        proc, self.process = self.process, None
        if proc is not None:
            stop_process_group(proc, ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)))

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def transformers_serve_command(model_dir: str | Path, *, host: str, port: int, device: str = "cpu") -> list[str]:
    return [
        sys.executable, "-m", "transformers.cli.transformers", "serve", str(model_dir),
        "--device", device, "--host", host, "--port", str(port), "--log-level", "warning",
    ]


def transformers_server(
    model_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    device: str = "cpu",
    startup_timeout_s: float = 180.0,
    log_path: str | Path | None = None,
) -> ServerProcess:
    """A (not yet started) ``transformers serve`` of a local model folder, offline, on a free
    port; it serves the model under ``str(model_dir)``. Needs ``pip install 'orig-local[serve]'``."""
    from orig_local._lazy import require

    require("fastapi", "serve")  # transformers[serving]: fail here, not in a child process log
    require("uvicorn", "serve")
    model_dir = str(Path(model_dir).expanduser())
    port = port or free_port(host)
    return ServerProcess(
        transformers_serve_command(model_dir, host=host, port=port, device=device),
        host=host, port=port, model=model_dir, env=offline_env(),
        startup_timeout_s=startup_timeout_s, log_path=log_path,
    )


def stop_process_group(proc: subprocess.Popen, steps: Sequence[tuple[int, float]]) -> None:
    """Send each signal of ``steps`` to ``proc``'s process group, waiting its seconds for the
    process to exit before the next one (e.g. SIGTERM, then SIGKILL). Returns once it exited."""
    for sig, wait in steps:
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
