"""The chat-model protocol: messages with text and images in, a typed reply out.

Every backend subclasses :class:`BaseChatModel` and implements one method, ``_complete``
(one raw request/response). Caching, the concurrency limit, structured-output validation and
its bounded retry live here once, so all backends behave the same.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import logging
import mmap
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from orig_local.llm.config import ChatConfig

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- messages


# Formats sent as they came (no decode, no re-encode): the ones the OpenAI chat API documents
# for image_url data URIs. vLLM and transformers serve decode with PIL and take all three.
# Anything else (BMP, TIFF, a PIL image in memory) is encoded once as PNG.
WIRE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


class _Encoded:
    """The wire form of one picture, shared by every :class:`ImageRef` over it: computed once
    (under a lock, so two threads never encode the same picture twice)."""

    __slots__ = ("data_uri", "lock", "mime", "nbytes", "sha256", "size")

    def __init__(self):
        self.lock = threading.Lock()
        # the base64 of the bytes sent (ASCII): bytes, or an anonymous memory map (llm/wire.py)
        self.data_uri: bytes | mmap.mmap | None = None
        self.sha256: str | None = None
        self.mime: str | None = None
        self.nbytes = 0
        self.size: tuple[int, int] | None = None


class ImageRef:
    """An image inside a chat message: a PIL image, a file path or encoded bytes.

    Nothing is decoded up front. :meth:`prepare` turns the picture into what goes on the wire
    once: a PNG/JPEG/WebP file or byte string is sent as it came (only its header is read), any
    other source is encoded as PNG. Wrapping an ImageRef in another shares that work, so a
    picture sent in eight requests is read and encoded once. :meth:`sha256` (cache keys) hashes
    the bytes sent.
    """

    label: str | None
    _enc: _Encoded

    def __init__(self, source: Any, label: str | None = None):
        if isinstance(source, ImageRef):
            self.source: Any = source.source
            self.label = label or source.label
            self._enc = source._enc
            return
        if isinstance(source, str):
            source = Path(source)
        self.source = source
        self.label = label
        self._enc = _Encoded()

    def to_pil(self):
        from PIL import Image

        if isinstance(self.source, Path):
            with Image.open(self.source) as im:
                return im.convert("RGB")
        if isinstance(self.source, (bytes, bytearray)):
            with Image.open(io.BytesIO(self.source)) as im:
                return im.convert("RGB")
        return self.source.convert("RGB")

    @property
    def prepared(self) -> bool:
        return self._enc.data_uri is not None

    def prepare(self) -> ImageRef:
        """Compute the wire form (blocking: file read, maybe a PNG encode, hash, base64). Call
        it in a worker thread from async code; :meth:`BaseChatModel.chat` does."""
        enc = self._enc
        if enc.data_uri is not None:
            return self
        with enc.lock:
            if enc.data_uri is None:
                b64, enc.sha256, enc.nbytes, enc.mime, enc.size = self._wire_bytes()
                enc.data_uri = b64  # last: a reader outside the lock sees it only when all is set
        return self

    def _wire_bytes(self) -> tuple[bytes | mmap.mmap, str, int, str, tuple[int, int]]:
        """What goes on the wire: (its base64, sha256 and length of the bytes sent, mime, size).
        A PNG/JPEG/WebP file is sent as it came, read in pieces straight into its base64
        (llm/wire.py: its bytes are never held beside it); bytes in such a format likewise;
        anything else is encoded once as PNG. Only the base64 is kept."""
        from PIL import Image

        if isinstance(self.source, Path):
            with Image.open(self.source) as im:  # reads the header only
                mime = WIRE_FORMATS.get(im.format or "")
                if mime is not None and getattr(im, "n_frames", 1) == 1:
                    from orig_local.llm.wire import file_base64

                    return (*file_base64(self.source), mime, tuple(im.size))  # type: ignore[return-value]
        elif isinstance(self.source, (bytes, bytearray)):
            raw = bytes(self.source)
            with Image.open(io.BytesIO(raw)) as im:  # reads the header only
                mime = WIRE_FORMATS.get(im.format or "")
                if mime is not None and getattr(im, "n_frames", 1) == 1:
                    return (base64.b64encode(raw), hashlib.sha256(raw).hexdigest(), len(raw), mime,
                            tuple(im.size))  # type: ignore[return-value]
        picture = self.to_pil()
        buf = io.BytesIO()
        picture.save(buf, format="PNG")
        data = buf.getvalue()
        return base64.b64encode(data), hashlib.sha256(data).hexdigest(), len(data), "image/png", tuple(picture.size)  # type: ignore[return-value]

    def data_uri_parts(self) -> tuple[bytes, bytes | mmap.mmap]:
        """``(b"data:<mime>;base64,", base64 bytes)``: the data URI in two pieces, the second
        one shared object (bytes-like), so a request body can stream it without copying."""
        enc = self.prepare()._enc
        return f"data:{enc.mime};base64,".encode("ascii"), enc.data_uri  # type: ignore[return-value]

    def data_uri(self) -> str:
        """``data:<mime>;base64,...`` of the bytes sent, as a string (a copy)."""
        prefix, b64 = self.data_uri_parts()
        return (prefix + b64).decode("ascii")

    def sha256(self) -> str:
        """SHA-256 of the bytes sent (the file's own bytes, or the PNG encoding)."""
        return self.prepare()._enc.sha256  # type: ignore[return-value]

    png_sha256 = sha256  # the earlier name, from when every image was re-encoded as PNG

    @property
    def mime(self) -> str:
        return self.prepare()._enc.mime  # type: ignore[return-value]

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) without decoding the pixels."""
        if self._enc.size is not None:
            return self._enc.size
        if hasattr(self.source, "size") and not callable(self.source.size):
            return tuple(self.source.size)  # type: ignore[return-value]
        from PIL import Image

        opened = Image.open(self.source if isinstance(self.source, Path) else io.BytesIO(self.source))
        with opened as im:
            return tuple(im.size)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"ImageRef({self.label or type(self.source).__name__})"


def prepare_images(messages: Sequence[Message]) -> None:
    """Compute the wire form of every image in ``messages`` (blocking; see ImageRef.prepare)."""
    for m in messages:
        for image in m.images:
            image.prepare()


Part = str | ImageRef


@dataclass
class Message:
    """One chat turn. ``parts`` mixes text and images in order."""

    role: str  # system | user | assistant
    parts: list[Part]

    def __post_init__(self):
        if self.role not in ("system", "user", "assistant"):
            raise ValueError(f"unknown role {self.role!r}")
        # An ImageRef is kept as is, so its encoded PNG (and hash) is computed once even when
        # the same picture goes into many requests.
        self.parts = [p if isinstance(p, (str, ImageRef)) else ImageRef(p) for p in self.parts]

    @property
    def images(self) -> list[ImageRef]:
        return [p for p in self.parts if isinstance(p, ImageRef)]

    @property
    def text(self) -> str:
        return "".join(p for p in self.parts if isinstance(p, str))

    def canonical(self) -> dict[str, Any]:
        """JSON-able form with images replaced by their content hash (cache keys, traces)."""
        return {
            "role": self.role,
            "parts": [p if isinstance(p, str) else {"image_sha256": p.sha256()} for p in self.parts],
        }


def system(text: str) -> Message:
    return Message("system", [text])


def user(*parts: Any) -> Message:
    return Message("user", list(parts))


def assistant(text: str) -> Message:
    return Message("assistant", [text])


# --------------------------------------------------------------------------- replies


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # of prompt_tokens, those the server served from its prefix cache (vLLM reports them with
    # --enable-prompt-tokens-details); None when the server says nothing (unknown, not zero)
    cached_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        known = [c for c in (self.cached_tokens, other.cached_tokens) if c is not None]
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            sum(known) if known else None,
        )


@dataclass
class Completion:
    """What one backend request returns, before any validation."""

    text: str
    usage: Usage = field(default_factory=Usage)
    # first generated token's top alternatives: {token_text: logprob}; None if not asked/served
    top_logprobs: dict[str, float] | None = None
    # why generation stopped: "stop" (end of reply), "length" (cut at max_tokens), None if unknown
    finish_reason: str | None = None


@dataclass
class ChatReply:
    """A chat reply. ``parsed`` is set (and validated) when a schema was asked for."""

    text: str
    parsed: BaseModel | None
    usage: Usage
    latency_s: float
    model: str
    cached: bool = False
    attempts: int = 1
    invalid_replies: list[str] = field(default_factory=list)  # raw texts that failed validation
    top_logprobs: dict[str, float] | None = None
    finish_reason: str | None = None  # "length": the text was cut at max_tokens

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class ChatError(RuntimeError):
    """A chat call that could not be completed."""


class ChatConnectionError(ChatError):
    """The server could not be reached or kept failing (after bounded retries)."""


class ChatHTTPError(ChatError):
    """The server answered with an HTTP error that a retry does not fix and that every request
    would get (wrong model name, auth). Like :class:`ChatConnectionError`, a transport/server
    failure: the server (or how it is reached) needs fixing."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class ChatRequestRefused(ChatHTTPError):
    """A healthy server refused this one request (HTTP 400/413/422: too long for the context
    window, a schema it cannot compile, ...). The request's fault, not the server's: the item
    records the error, and the circuit breaker, which stops a phase whose server is down, does
    not count it."""


# A reply that never came for a transport/server reason (not a reply that was invalid): what
# makes a benchmark item *failed* rather than *degraded*. Stage records and verdicts keep the
# error as "<ClassName>: message", so the names identify it there too.
TRANSPORT_ERRORS: tuple[type[ChatError], ...] = (ChatConnectionError, ChatHTTPError)
NOT_TRANSPORT: tuple[type[ChatError], ...] = (ChatRequestRefused,)


def is_transport_error(error: BaseException | str | None) -> bool:
    """True for a transport/server failure, given the exception or its "<ClassName>: ..." text.
    A refused request (:class:`ChatRequestRefused`) is not one: its server answered."""
    if isinstance(error, BaseException):
        return isinstance(error, TRANSPORT_ERRORS) and not isinstance(error, NOT_TRANSPORT)
    return bool(error) and str(error).startswith(tuple(f"{c.__name__}:" for c in TRANSPORT_ERRORS))


class StructuredOutputError(ChatError):
    """Every attempt at a structured reply failed validation. Carries the raw texts."""

    def __init__(self, schema: str, raw_texts: list[str], errors: list[str], usage: Usage):
        self.schema = schema
        self.raw_texts = raw_texts
        self.errors = errors
        self.usage = usage
        self.finish_reason: str | None = None  # of the last attempt, when it says more than "stop"
        last = raw_texts[-1][:200] if raw_texts else ""
        super().__init__(
            f"no valid {schema} after {len(raw_texts)} attempt(s); last error: "
            f"{errors[-1] if errors else '?'}; last reply: {last!r}"
        )


class ReplyTruncatedError(StructuredOutputError):
    """The last attempt at a structured reply was cut at ``max_tokens`` (``finish_reason:
    length``) before its JSON was complete. With guided decoding this is often runaway
    whitespace, which serving with xgrammar's ``disable_any_whitespace`` prevents."""

    def __init__(self, schema: str, raw_texts: list[str], errors: list[str], usage: Usage, max_tokens: int):
        super().__init__(schema, raw_texts, errors, usage)
        self.max_tokens = max_tokens
        self.finish_reason = "length"
        tail = raw_texts[-1][-80:] if raw_texts else ""
        self.args = (
            f"{schema} reply cut at max_tokens={max_tokens} (finish_reason=length) before its JSON "
            f"was complete; raise max_tokens for this model, or if the reply is runaway whitespace "
            f"serve it with --structured-outputs-config "
            f"'{{\"backend\":\"xgrammar\",\"disable_any_whitespace\":true}}' (orig serve does); "
            f"reply ends: {tail!r}",
        )


class TooManyImagesError(ChatError, ValueError):
    """A request with more images than the model accepts per prompt (``ChatConfig.max_images``,
    vLLM's ``--limit-mm-per-prompt``): refused before sending instead of an HTTP 400."""


# --------------------------------------------------------------------------- parsing


def parse_structured(text: str, schema: type[BaseModel]) -> BaseModel:
    """Validate a reply as ``schema``. Accepts bare JSON or one fenced ```json block``` (models
    prompted without guided decoding often fence their JSON); nothing else is scraped."""
    body = text.strip()
    if body.startswith("```"):
        first_nl = body.find("\n")
        end = body.rfind("```")
        if first_nl != -1 and end > first_nl:
            body = body[first_nl + 1 : end].strip()
    return schema.model_validate_json(body)


def schema_json(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


RETRY_NOTE = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only one JSON object that matches the required schema."
)

SCHEMA_NOTE = "\n\nReply with only one JSON value (no prose, no code fence) that matches this JSON schema:\n{schema}"


def with_schema_instruction(messages: Sequence[Message], schema: type[BaseModel]) -> list[Message]:
    """Append the JSON schema to the last user turn: how a schema is sent to a model that has no
    guided decoding (the in-process transformers backend, ``structured_mode: prompt``)."""
    messages = list(messages)
    note = SCHEMA_NOTE.format(schema=json.dumps(schema_json(schema), ensure_ascii=False))
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            messages[i] = Message("user", list(messages[i].parts) + [note])
            return messages
    return messages + [user(note.lstrip())]


# --------------------------------------------------------------------------- base class


class BaseChatModel:
    """Shared behaviour of all chat backends. Subclasses implement :meth:`_complete`."""

    backend = "base"
    # True: requests carry each image's encoded bytes (ImageRef.prepare), not its pixels
    sends_encoded_images = False

    def __init__(self, config: ChatConfig, cache: Any | None = None):
        self.config = config
        self.cache = cache  # orig_local.cache.DiskCache or None
        self._semaphore: asyncio.Semaphore | None = None
        self.calls = 0  # backend requests actually sent (cache hits excluded)
        self.cache_hits = 0  # replies served from the cache

    @property
    def model_name(self) -> str:
        return self.config.model or self.backend

    @property
    def max_images_per_prompt(self) -> int | None:
        """Images one request may carry (None: no known limit). Callers showing a variable
        number of images send at most this many."""
        return self.config.max_images

    def _check_images(self, messages: Sequence[Message]) -> None:
        limit = self.config.max_images
        n = sum(len(m.images) for m in messages)  # vLLM counts the whole conversation
        if limit is not None and n > limit:
            raise TooManyImagesError(
                f"request carries {n} images but {self.model_name} accepts at most {limit} per prompt "
                f"(max_images, from the preset's limit_mm_per_prompt): send fewer, or serve with a "
                f"higher limit and set max_images accordingly")

    def _limit(self) -> asyncio.Semaphore:
        # Created lazily so the model can be built outside a running event loop, and again for
        # each new loop: a semaphore binds to the loop that first waits on it, and one model is
        # reused across asyncio.run() calls (e.g. the benchmark's judge and retrieval phases).
        loop = asyncio.get_running_loop()
        if self._semaphore is None or getattr(self, "_semaphore_loop", None) is not loop:
            self._semaphore = asyncio.Semaphore(self.config.concurrency)
            self._semaphore_loop = loop
        return self._semaphore

    async def _complete(
        self,
        messages: list[Message],
        *,
        schema: type[BaseModel] | None,
        temperature: float,
        max_tokens: int,
        logprobs: int | None,
    ) -> Completion:
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:
        """What names the model answering, for cache keys: its preset (and so hub id), revision
        and, for a served model, the server. A re-served checkpoint under the same name must
        not get the old one's replies."""
        return {"preset": self.config.preset, "revision": self.config.revision}

    async def served_identity(self) -> dict[str, Any] | None:
        """What the server itself reports about the model (``/v1/models``), or None where
        there is no server or it cannot say. Checked against a cache hit's."""
        return None

    def cache_key(self, messages: Sequence[Message], schema, temperature, max_tokens, logprobs) -> str:
        request = {
            "backend": self.backend,
            "model": self.model_name,
            "identity": self.identity(),
            "messages": [m.canonical() for m in messages],
            "schema": schema_json(schema) if schema else None,
            "temperature": temperature,
            "top_p": self.config.top_p,
            "max_tokens": max_tokens,
            "seed": self.config.seed,
            "logprobs": logprobs,
            "structured_mode": self.config.structured_mode if schema else None,
        }
        blob = json.dumps(request, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        logprobs: int | None = None,
    ) -> ChatReply:
        """Send ``messages``; with ``schema``, validate the reply (bounded retries) or raise
        :class:`StructuredOutputError`. Temperature-0 calls are served from the cache."""
        messages = list(messages)
        self._check_images(messages)
        temperature = self.config.temperature if temperature is None else temperature
        max_tokens = max_tokens or self.config.max_tokens
        use_cache = self.cache is not None and self.config.cache and temperature == 0.0
        if (use_cache or self.sends_encoded_images) and any(not i.prepared for m in messages for i in m.images):
            # reading, encoding and hashing images is CPU work: keep it off the event loop
            await asyncio.to_thread(prepare_images, messages)
        key = self.cache_key(messages, schema, temperature, max_tokens, logprobs) if use_cache else None
        served = await self.served_identity() if key is not None else None
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            # Served by a server that now reports another model under the same name (another
            # checkpoint, context length): not its reply. Unknown now (server down): the key's
            # identity (name, revision, server) decides, so a finished run replays offline.
            if hit is not None and (served is None or hit.get("served") == served):
                self.cache_hits += 1
                return self._from_cache(hit, schema)

        start = time.perf_counter()
        usage = Usage()
        invalid: list[str] = []
        errors: list[str] = []
        convo = list(messages)
        async with self._limit():
            for attempt in range(1, self.config.schema_retries + 2 if schema else 2):
                completion = await self._complete(
                    convo, schema=schema, temperature=temperature,
                    max_tokens=max_tokens, logprobs=logprobs,
                )
                self.calls += 1
                usage = usage + completion.usage
                if schema is None:
                    parsed = None
                    break
                try:
                    parsed = parse_structured(completion.text, schema)
                    break
                except (ValidationError, ValueError) as exc:
                    error = _short_error(exc)
                    if completion.finish_reason == "length":  # say so, to the model and in the error
                        error = f"the reply was cut at max_tokens={max_tokens} before it was complete ({error})"
                    log.debug("invalid %s reply (attempt %d): %s", schema.__name__, attempt, error)
                    invalid.append(completion.text)
                    errors.append(error)
                    convo = self._retry_conversation(messages, completion, error, max_tokens)
            else:
                assert schema is not None  # without a schema the first reply is taken
                if completion.finish_reason == "length":
                    raise ReplyTruncatedError(schema.__name__, invalid, errors, usage, max_tokens)
                raise StructuredOutputError(schema.__name__, invalid, errors, usage)

        reply = ChatReply(
            text=completion.text, parsed=parsed, usage=usage,
            latency_s=time.perf_counter() - start, model=self.model_name,
            attempts=len(invalid) + 1, invalid_replies=invalid,
            top_logprobs=completion.top_logprobs, finish_reason=completion.finish_reason,
        )
        if reply.truncated:
            log.info("%s: reply cut at max_tokens=%d (finish_reason=length)", self.model_name, max_tokens)
        if key is not None and self.cache is not None:
            await self.cache.aset(key, {
                "text": reply.text, "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens, "attempts": reply.attempts,
                "invalid_replies": invalid, "top_logprobs": reply.top_logprobs,
                "finish_reason": reply.finish_reason, "served": served,
            })
        return reply

    def _retry_conversation(self, messages: list[Message], completion: Completion, error: str,
                            max_tokens: int) -> list[Message]:
        """The next attempt after an invalid reply. A temperature-0 retry of the same request
        returns the same text, so the retry shows the model its reply and the error. But not a
        reply cut at ``max_tokens``, and not when the known context window
        (``context_tokens``) has no room for it: a prompt that already fills its budget plus a
        whole reply overflows the window, which the server refuses (HTTP 400) - the retry
        then says what went wrong without quoting the reply."""
        note = user(RETRY_NOTE.format(error=error))
        if completion.finish_reason == "length":
            return list(messages) + [note]
        window = self.config.context_tokens
        prompt = completion.usage.prompt_tokens
        if window and prompt:
            # what the next request holds: this prompt, the reply, the note (~4 chars/token,
            # rounded up generously) and room for a whole new reply
            needed = prompt + completion.usage.completion_tokens + len(note.text) // 3 + 16 + max_tokens
            if needed > window:
                return list(messages) + [note]
        return list(messages) + [assistant(completion.text), note]

    def _from_cache(self, hit: dict[str, Any], schema: type[BaseModel] | None) -> ChatReply:
        parsed = parse_structured(hit["text"], schema) if schema else None
        return ChatReply(
            text=hit["text"], parsed=parsed,
            usage=Usage(hit["prompt_tokens"], hit["completion_tokens"]),
            latency_s=0.0, model=self.model_name, cached=True, attempts=hit["attempts"],
            invalid_replies=hit["invalid_replies"], top_logprobs=hit.get("top_logprobs"),
            finish_reason=hit.get("finish_reason"),
        )

    async def aclose(self) -> None:
        """Release connections / memory. Safe to call twice."""


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()[:3]]
        return "; ".join(parts)
    return str(exc)[:300]
