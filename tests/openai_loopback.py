"""A small OpenAI-compatible chat server on 127.0.0.1 (stdlib http.server) that tests can start,
kill and restart on the same port: ``GET /v1/models`` and ``POST /v1/chat/completions``.

Replies come from ``reply(body) -> str`` (default: the simulated ORIG backbone answering by the
requested schema's name). ``die_after=N``: after answering N chat requests the server closes
its socket, as a crashed server would (later requests: connection refused). A request for a
model it does not serve gets HTTP 404, as vLLM answers.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def simulated_reply(body: dict) -> str:
    """The simulated backbone's answer to an OpenAI chat request (text parts only)."""
    from orig_local.llm.base import Message
    from orig_local.llm.simulated import orig_responder

    messages = []
    for m in body["messages"]:
        content = m["content"]
        text = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in content if p.get("type") == "text")
        messages.append(Message(m["role"], [text]))
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
    return orig_responder()(messages, type(name, (), {}))


class OpenAILoopback:
    def __init__(self, model: str = "loopback-model", reply: Callable[[dict], str] = simulated_reply,
                 die_after: int | None = None, port: int = 0):
        self.model, self.reply, self.die_after, self.port = model, reply, die_after, port
        self.chat_requests = 0
        self.max_model_len = 4096  # reported by GET /v1/models
        self.prompts: list[str] = []  # last user text of every answered chat request
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> OpenAILoopback:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": owner.model, "object": "model", "owned_by": "loopback", "max_model_len": owner.max_model_len}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                with owner._lock:
                    dead = owner.die_after is not None and owner.chat_requests >= owner.die_after
                if dead:  # crashed: the connection drops without a reply, the socket closes
                    self.close_connection = True
                    threading.Thread(target=owner.stop, daemon=True).start()
                    return
                if body.get("model") != owner.model:
                    return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                text = owner.reply(body)
                with owner._lock:
                    owner.chat_requests += 1
                    owner.prompts.append(str(body["messages"][-1]["content"])[:2000])
                self._send(200, {"id": "x", "object": "chat.completion", "model": owner.model,
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> OpenAILoopback:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
