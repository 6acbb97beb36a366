"""The chat-model protocol: messages with text and images in, a typed reply out.

Every backend subclasses :class:`BaseChatModel` and implements one method, ``_complete``
(one raw request/response). Caching, the concurrency limit, structured-output validation and
its bounded retry live here once, so all backends behave the same.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from orig_local.llm.config import ChatConfig

# Messages (messages.py) and replies/errors (replies.py) are defined beside this module and
# importable from here, as every backend and caller does.
from orig_local.llm.messages import WIRE_FORMATS, ImageRef, Message, Part, assistant, prepare_images, system, user
from orig_local.llm.replies import (
    NOT_TRANSPORT,
    TRANSPORT_ERRORS,
    ChatConnectionError,
    ChatError,
    ChatHTTPError,
    ChatReply,
    ChatRequestRefused,
    Completion,
    ReplyTruncatedError,
    StructuredOutputError,
    TooManyImagesError,
    Usage,
    is_transport_error,
)

log = logging.getLogger(__name__)


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
    """``schema``'s JSON schema, made once per class: generating it took 300-450 us for the
    agent's schemas, on the event loop, for every request a real backend sends (and again for
    its cache key). One dict shared by every caller: read it, never change it."""
    return _schema_json(schema)


@functools.lru_cache(maxsize=256)
def _schema_json(schema: type[BaseModel]) -> dict[str, Any]:
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
        if limit is None:
            return
        n = sum(len(m.images) for m in messages)  # vLLM counts the whole conversation
        if n > limit:
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

        reply = await self._validated(messages, schema, temperature, max_tokens, logprobs)
        if reply.truncated:
            log.info("%s: reply cut at max_tokens=%d (finish_reason=length)", self.model_name, max_tokens)
        if key is not None and self.cache is not None:
            await self.cache.aset(key, {
                "text": reply.text, "prompt_tokens": reply.usage.prompt_tokens,
                "completion_tokens": reply.usage.completion_tokens, "attempts": reply.attempts,
                "invalid_replies": reply.invalid_replies, "top_logprobs": reply.top_logprobs,
                "finish_reason": reply.finish_reason, "served": served,
            })
        return reply

    async def _validated(self, messages: list[Message], schema: type[BaseModel] | None, temperature: float,
                         max_tokens: int, logprobs: int | None) -> ChatReply:
        """One request (within the concurrency limit), repeated with the validation error until
        the reply matches ``schema`` or the retries run out (:class:`StructuredOutputError`)."""
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

        return ChatReply(
            text=completion.text, parsed=parsed, usage=usage,
            latency_s=time.perf_counter() - start, model=self.model_name,
            attempts=len(invalid) + 1, invalid_replies=invalid,
            top_logprobs=completion.top_logprobs, finish_reason=completion.finish_reason,
        )

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


__all__ = [
    "NOT_TRANSPORT", "RETRY_NOTE", "SCHEMA_NOTE", "TRANSPORT_ERRORS", "WIRE_FORMATS", "BaseChatModel",
    "ChatConnectionError", "ChatError", "ChatHTTPError", "ChatReply", "ChatRequestRefused", "Completion",
    "ImageRef", "Message", "Part", "ReplyTruncatedError", "StructuredOutputError", "TooManyImagesError", "Usage",
    "assistant", "is_transport_error", "parse_structured", "prepare_images", "schema_json", "system", "user",
    "with_schema_instruction",
]
