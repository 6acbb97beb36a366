"""API keys are secrets: a run that used one (given in an override or read from the
environment) leaves it in no file of its run folder or cache, yet the server received it."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from orig_local.cli import main

pytestmark = pytest.mark.timeout(300)

TYPED_KEY = "sk-typed-3d9a61f0c2"
ENV_KEY = "sk-env-77b2e5a4d8"
MINI = Path(__file__).resolve().parents[1] / "orig_local" / "evaluation" / "data" / "mini.jsonl"


class KeyCheckingServer:
    """An OpenAI-compatible loopback server that records the Authorization header of every
    request and answers chat calls with a reply no stage can use (the run records the failure)."""

    def __init__(self):
        self.auth: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, payload):
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # /v1/models, for a preflight
                outer.auth.append(self.headers.get("Authorization", ""))
                self._send({"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.auth.append(self.headers.get("Authorization", ""))
                self._send({"id": "x", "object": "chat.completion", "model": "m",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": "not json"}}],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def key_server():
    server = KeyCheckingServer()
    yield server
    server.close()


def _files_containing(root: Path, secret: str) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and secret.encode() in path.read_bytes():
            hits.append(str(path.relative_to(root)))
    return hits


@pytest.mark.parametrize("how", ["override", "environment"])
def test_no_api_key_in_the_run_folder_or_cache(tmp_path, key_server, monkeypatch, how):
    secret = TYPED_KEY if how == "override" else ENV_KEY
    monkeypatch.setenv("RUN_TEST_KEY", ENV_KEY)
    key_args = (["-s", f"backbone.api_key={TYPED_KEY}", "-s", f"judge.api_key={TYPED_KEY}"] if how == "override"
                else ["-s", "backbone.api_key_env=RUN_TEST_KEY", "-s", "judge.api_key_env=RUN_TEST_KEY"])
    out, cache = tmp_path / "run", tmp_path / "cache"
    main(["-q", "eval", "--offline", "--benchmark", "jsonl", "--data", str(MINI), "--condition", "orig",
          "--phase", "agent", "--limit", "1", "--out", str(out),
          "-s", "backbone.backend=openai", "-s", f"backbone.base_url={key_server.base_url}",
          "-s", "backbone.model=m", "-s", "backbone.preset=null", "-s", "backbone.connect_retries=0",
          "-s", "backbone.schema_retries=0", "-s", f"cache_dir={cache}", *key_args])
    assert key_server.auth and all(a == f"Bearer {secret}" for a in key_server.auth)  # the key was used...
    saved = (out / "config.yaml").read_text()
    assert "backbone" in saved
    assert _files_containing(tmp_path, secret) == []  # ...and written nowhere
