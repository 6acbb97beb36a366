"""Shared fixtures. Network: loopback only — any other address fails the test loudly."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

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
