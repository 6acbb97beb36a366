"""Shared fixtures. Network: loopback only — any other address fails the test loudly."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

# A shell without job control starts background jobs (`make test &`, `nohup pytest ... &`) with
# SIGINT ignored, and every process the tests start inherits that: the Ctrl-C tests' children
# then never see their SIGINT and time out. Give the test process what a foreground one has.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


class ForbiddenNetwork(RuntimeError):
    pass


def _is_loopback(address) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX paths
        return True
    host = address[0]
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a hostname other than localhost would need DNS: not allowed


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
        raise ForbiddenNetwork(f"tests may only reach loopback, not {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
        raise ForbiddenNetwork(f"tests may only reach loopback, not {address!r}")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (present in CI); tests that need it skip with a reason otherwise."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def chat_config():
    from orig_local.llm.config import ChatConfig

    return ChatConfig(backend="scripted", model="scripted")


@pytest.fixture(scope="session")
def tiny_dir() -> Path:
    """The tiny-model folder (built on demand; reused across runs via the marker files)."""
    from orig_local.paths import tiny_models_dir

    return tiny_models_dir()


def tiny_model(name: str) -> Path:
    """Build (if needed) and return tiny model ``name``."""
    from orig_local.paths import tiny_models_dir
    from orig_local.tiny.build import build_one

    return build_one(name, tiny_models_dir())


# --------------------------------------------------------------------------- model servers
# Real OpenAI-compatible servers (`transformers serve`) over tiny local models, started once per
# session and only when a test asks for them. Each yields a handle with `.base_url` (".../v1")
# and `.model` (the served model name); `.chat_config(**overrides)` gives a matching ChatConfig
# (`structured_mode="prompt"`: transformers serve has no guided decoding).


class _ServerHandle:
    def __init__(self, process):
        self.process = process
        self.base_url = process.base_url
        self.model = process.model

    def chat_config(self, **overrides):
        from orig_local.llm.config import ChatConfig

        settings = {"backend": "openai", "base_url": self.base_url, "model": self.model,
                    "structured_mode": "prompt", "connect_retries": 1, "backoff_s": 0.1,
                    "timeout_s": 60.0}
        settings.update(overrides)
        return ChatConfig(**settings)


def _serve_tiny(name: str):
    from orig_local.llm.local_server import transformers_server

    process = transformers_server(tiny_model(name))
    process.start()
    try:
        yield _ServerHandle(process)
    finally:
        process.stop()


@pytest.fixture(scope="session")
def tiny_qwen_server():
    """`transformers serve` of the tiny random Qwen2.5-VL (replies are noise)."""
    yield from _serve_tiny("qwen2_5_vl")


@pytest.fixture(scope="session")
def tiny_judge_server():
    """`transformers serve` of the tiny judge: answers `true` for red images, `false` for blue."""
    yield from _serve_tiny("judge")
