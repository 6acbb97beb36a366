"""Chat backend for any OpenAI-compatible server: by default a local ``vllm serve``.

One request per :meth:`_complete`, over ``httpx.AsyncClient``. Images travel inline as data URIs
(``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``), so the server
needs no file access: a PNG, JPEG or WebP file as it is, anything else encoded once as PNG.

How a pydantic schema is sent (``ChatConfig.structured_mode``):

- ``json_schema`` (default) — the OpenAI field, which vLLM turns into guided decoding::

      "response_format": {"type": "json_schema",
                          "json_schema": {"name": "<Schema>", "schema": {...}, "strict": true}}

- ``structured_outputs`` — vLLM's own request field (vLLM >= 0.12; it replaced the removed
  ``guided_json`` / ``guided_regex`` / ``guided_choice`` / ``guided_grammar`` fields, now
  ``structured_outputs.json`` / ``.regex`` / ``.choice`` / ``.grammar``). With the ``openai``
  Python client it is ``extra_body={"structured_outputs": {"json": schema}}``; on the wire it
  is a top-level body field, which is what we send.
- ``prompt`` — no server-side constraint: the schema is appended to the last user turn. For
  servers without guided decoding, e.g. ``transformers serve`` (it ignores ``response_format``
  and rejects unknown fields such as ``structured_outputs`` with HTTP 422).

In every mode the reply is validated by :class:`~orig_local.llm.base.BaseChatModel` with a
bounded retry. Connection errors, HTTP 5xx and 429 are retried ``connect_retries`` times with
exponential backoff and jitter, then raise :class:`ChatConnectionError`; HTTP 400/413/422 raise
:class:`~orig_local.llm.base.ChatRequestRefused` (the request's fault: the server is up), any
other HTTP error :class:`ChatHTTPError` with the server's message. A reply cut at ``max_tokens``
(``finish_reason: length``) is recorded on the reply; a cut structured reply raises
:class:`~orig_local.llm.base.ReplyTruncatedError` instead of a JSON parse error.

Server and key: ``base_url`` defaults to ``$OPENAI_BASE_URL`` (else a local vLLM), the key to
``$OPENAI_API_KEY`` (``api_key_env`` names another variable); the key is never saved.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import mmap
import random
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
from pydantic import BaseModel

from orig_local.llm.base import (
    BaseChatModel,
    ChatConnectionError,
    ChatError,
    ChatHTTPError,
    ChatRequestRefused,
    Completion,
    ImageRef,
    Message,
    Usage,
    schema_json,
    with_schema_instruction,
)
from orig_local.llm.config import ChatConfig

log = logging.getLogger(__name__)

RETRY_STATUS = {429, 500, 502, 503, 504}
# The request's fault (vLLM: 400 for a prompt past --max-model-len or a bad schema, 413 too
# large, 422 invalid fields): the server is healthy. 401/403/404 stay server errors - wrong
# key or model name, which every request would get.
REFUSED_STATUS = {400, 413, 422}
MAX_BACKOFF_S = 60.0
CONNECTIONS_PER_CLIENT = 16
STREAM_SLICE = 256 * 1024  # bytes of a request body handed to the socket at once
# Fields of a /v1/models entry that name what is served (not "created", which is the time of
# the reply, nor vLLM's per-reply permission ids).
SERVED_FIELDS = ("id", "root", "parent", "max_model_len", "owned_by")


def message_to_openai(message: Message, image_url: Callable[[ImageRef], str] | None = None) -> dict[str, Any]:
    """One :class:`Message` in OpenAI chat format (text-only turns as a plain string).
    ``image_url`` gives each image's URL (default: its data URI)."""
    if not message.images:
        return {"role": message.role, "content": message.text}
    url_of = image_url or ImageRef.data_uri
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, str):
            content.append({"type": "text", "text": part})
        else:
            content.append({"type": "image_url", "image_url": {"url": url_of(part)}})
    return {"role": message.role, "content": content}


class StreamedBody:
    """A JSON request body whose images are not copied into it.

    The body is serialised with a placeholder per image, then sent as the pieces between them
    and each image's shared data URI bytes. Eight questions about one 3 MB picture would
    otherwise build, hold and copy eight 4 MB JSON strings (client CPU and memory that grow
    with the requests in flight); this way a request adds only its text."""

    def __init__(self, body: dict[str, Any], images: list[ImageRef], marker: str):
        text = json.dumps(body, ensure_ascii=False)
        pieces = text.split(marker)
        self.chunks: list[bytes | mmap.mmap] = [pieces[0].encode()]
        for piece in pieces[1:]:
            k, rest = piece.split("@@", 1)
            # a data URI is base64 ASCII: nothing in it needs JSON escaping
            self.chunks += [*images[int(k)].data_uri_parts(), rest.encode()]
        self.length = sum(len(c) for c in self.chunks)

    async def stream(self) -> AsyncIterator[bytes]:
        # In slices: the socket layer copies whatever it cannot send at once into its buffer,
        # so a whole 4 MB image per request in flight would be copied again.
        for chunk in self.chunks:
            view = memoryview(chunk)
            for start in range(0, len(view), STREAM_SLICE):
                yield view[start:start + STREAM_SLICE]  # type: ignore[misc]

    def json(self) -> dict[str, Any]:
        """The whole body as a dict (tests, debugging)."""
        return json.loads(b"".join(self.chunks))


def parse_top_logprobs(choice: dict[str, Any]) -> dict[str, float] | None:
    """First generated token's alternatives ``{token: logprob}`` from a chat choice, if any."""
    content = (choice.get("logprobs") or {}).get("content") or []
    if not content:
        return None
    first = content[0]
    alternatives = first.get("top_logprobs") or [first]
    return {alt["token"]: float(alt["logprob"]) for alt in alternatives}


def _is_local(url: str) -> bool:
    import ipaddress

    host = httpx.URL(url).host
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAIChatModel(BaseChatModel):
    """Chat over an OpenAI-compatible ``/chat/completions`` endpoint (vLLM, transformers serve, ...).

    ``transport`` (an ``httpx.AsyncBaseTransport``) lets a caller route requests elsewhere, e.g.
    to an in-process ASGI app; normally requests go over TCP to ``config.base_url``.
    """

    backend = "openai"
    sends_encoded_images = True

    def __init__(self, config: ChatConfig, cache=None, transport: httpx.AsyncBaseTransport | None = None):
        super().__init__(config, cache=cache)
        if not config.model:
            raise ChatError(
                "the openai backend needs the served model name: set `model` (or `preset`) in "
                "this chat section, e.g. backbone.preset=qwen2.5-vl-7b"
            )
        self.base_url = config.base_url.rstrip("/")
        self._transport = transport
        # An AsyncClient's pool belongs to the event loop that first used it; a new loop (each
        # asyncio.run, each async test) gets new clients.
        self._clients: list[httpx.AsyncClient] = []
        self._clients_loop: asyncio.AbstractEventLoop | None = None
        self._next_client = 0
        self._served: asyncio.Future | None = None  # served_identity(), asked once

    # ------------------------------------------------------------------ request body

    def build_request(
        self,
        messages: list[Message],
        *,
        schema: type[BaseModel] | None,
        temperature: float,
        max_tokens: int,
        logprobs: int | None,
        image_url: Callable[[ImageRef], str] | None = None,
    ) -> dict[str, Any]:
        """The JSON body of one ``/chat/completions`` request (``image_url``: see
        :func:`message_to_openai`)."""
        mode = self.config.structured_mode
        if schema is not None and mode == "prompt":
            messages = with_schema_instruction(messages, schema)
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [message_to_openai(m, image_url) for m in messages],
            "temperature": temperature,
            "top_p": self.config.top_p,
            "max_tokens": max_tokens,
        }
        if self.config.seed is not None:
            body["seed"] = self.config.seed
        if logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = logprobs
        if schema is not None and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema_json(schema), "strict": True},
            }
        elif schema is not None and mode == "structured_outputs":
            body["structured_outputs"] = {"json": schema_json(schema)}
        return body

    # ------------------------------------------------------------------ identity

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "server": self.base_url}

    async def served_identity(self) -> dict[str, Any] | None:
        """The stable fields of this model's ``GET /v1/models`` entry (vLLM: the weights path
        or hub id it loaded as ``root``, ``max_model_len``), asked once per model object. None
        when the server cannot list its models or does not answer (then nothing is checked)."""
        loop = asyncio.get_running_loop()
        # one request however many calls wait for it; asked again only if an earlier event
        # loop ended before the answer came
        if self._served is None or (not self._served.done() and self._served.get_loop() is not loop):
            self._served = loop.create_task(self._fetch_served())
        return await asyncio.shield(self._served)

    async def _fetch_served(self) -> dict[str, Any] | None:
        try:
            response = await self._http().get("/models", timeout=min(10.0, self.config.timeout_s))
            data = response.json().get("data") if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            log.debug("%s/models: %s; cache hits are not checked against the server", self.base_url, exc)
            return None
        for entry in data if isinstance(data, list) else []:
            if isinstance(entry, dict) and entry.get("id") == self.config.model:
                return {k: entry.get(k) for k in SERVED_FIELDS if entry.get(k) is not None}
        return None

    # ------------------------------------------------------------------ transport

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if not self._clients or self._clients_loop is not loop:
            # httpcore's pool does O(connections^2) bookkeeping per request: past a few dozen
            # connections the client, not the server, limits throughput. Several small pools,
            # used in turn, keep the cost flat (bench_chat, 64 in flight: 7.7x -> 1.3-1.6x ideal).
            n_clients = max(1, math.ceil(self.config.concurrency / CONNECTIONS_PER_CLIENT))
            per_client = math.ceil(self.config.concurrency / n_clients)
            timeout = httpx.Timeout(self.config.timeout_s, connect=min(10.0, self.config.timeout_s))
            self._clients = [
                httpx.AsyncClient(
                    base_url=self.base_url, timeout=timeout, transport=self._transport,
                    limits=httpx.Limits(max_connections=per_client, max_keepalive_connections=per_client),
                    headers={"Authorization": f"Bearer {self.config.resolved_api_key()}"},
                    # proxy variables apply to remote APIs, never to a server on this machine
                    trust_env=not _is_local(self.base_url),
                )
                for _ in range(n_clients)
            ]
            self._clients_loop = loop
        self._next_client = (self._next_client + 1) % len(self._clients)
        return self._clients[self._next_client]

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        delay = self.config.backoff_s * (2 ** attempt) * random.uniform(0.5, 1.5)
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:  # an HTTP date: keep our own backoff
                pass
        return min(delay, MAX_BACKOFF_S)

    async def _send(self, path: str, body: dict[str, Any] | StreamedBody) -> httpx.Response:
        if isinstance(body, StreamedBody):
            headers = {"Content-Type": "application/json", "Content-Length": str(body.length)}
            return await self._http().post(path, content=body.stream(), headers=headers)
        return await self._http().post(path, json=body)

    async def post(self, path: str, body: dict[str, Any] | StreamedBody) -> dict[str, Any]:
        """POST with bounded retries on connection errors, 5xx and 429."""
        retries = self.config.connect_retries
        last = ""
        for attempt in range(retries + 1):
            retry_after = None
            try:
                response = await self._send(path, body)
            except httpx.TransportError as exc:  # refused, reset, timed out, bad protocol
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise ChatError(f"{self.base_url}{path}: reply is not JSON: {response.text[:300]!r}") from exc
                code = response.status_code
                if code in REFUSED_STATUS:
                    raise ChatRequestRefused(
                        f"{self.base_url}{path} refused this request (HTTP {code}; the server is up, the "
                        f"request is at fault, e.g. longer than its context window): {response.text[:1000]}",
                        status=code)
                if code not in RETRY_STATUS:
                    raise ChatHTTPError(f"{self.base_url}{path} answered HTTP {code}: {response.text[:1000]}",
                                        status=code)
                last = f"HTTP {response.status_code}: {response.text[:300]}"
                retry_after = response.headers.get("retry-after")
            if attempt < retries:
                delay = self._backoff(attempt, retry_after)
                log.warning("%s%s failed (%s); retry %d/%d in %.1fs",
                            self.base_url, path, last, attempt + 1, retries, delay)
                await asyncio.sleep(delay)
        raise ChatConnectionError(f"{self.base_url}{path}: gave up after {retries + 1} attempt(s); last: {last}")

    # ------------------------------------------------------------------ protocol

    async def _complete(self, messages, *, schema, temperature, max_tokens, logprobs) -> Completion:
        images: list[ImageRef] = []
        marker = f"@@orig-image-{secrets.token_hex(8)}-"

        def placeholder(image: ImageRef) -> str:
            images.append(image)
            return f"{marker}{len(images) - 1}@@"

        body = self.build_request(messages, schema=schema, temperature=temperature,
                                  max_tokens=max_tokens, logprobs=logprobs, image_url=placeholder)
        data = await self.post("/chat/completions", StreamedBody(body, images, marker) if images else body)
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ChatError(f"unexpected chat reply from {self.base_url}: {str(data)[:300]}") from exc
        if text is None:
            raise ChatError(f"the server returned no text (finish_reason={choice.get('finish_reason')!r})")
        usage = data.get("usage") or {}
        if not usage:
            log.warning("%s returned no token usage; recording 0", self.base_url)
        return Completion(
            text=text,
            usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                        _cached_tokens(usage)),
            top_logprobs=parse_top_logprobs(choice) if logprobs else None,
            finish_reason=choice.get("finish_reason"),
        )

    async def aclose(self) -> None:
        clients, self._clients = self._clients, []
        for client in clients:
            try:
                await client.aclose()
            except RuntimeError:  # its event loop is already closed: nothing left to release
                pass


def _cached_tokens(usage: dict) -> int | None:
    """Prompt tokens the server served from its prefix cache; None when it does not say."""
    details = usage.get("prompt_tokens_details")
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return int(value) if isinstance(value, (int, float)) else None
