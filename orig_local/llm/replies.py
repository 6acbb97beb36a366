"""What a chat call gives back: the raw :class:`Completion` of one backend request, the validated
:class:`ChatReply`, token :class:`Usage`, and the :class:`ChatError` tree (transport failures,
refused requests, replies that never validated). Part of the chat-model protocol
(:mod:`orig_local.llm.base`, which re-exports every name here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel


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
    return bool(error) and str(error).startswith(tuple(f"{c.__name__}:" for c in _transport_classes()))


def _transport_classes() -> list[type[ChatError]]:
    """TRANSPORT_ERRORS and their subclasses (a scripted backbone out of replies, defined in
    llm/scripted.py), less NOT_TRANSPORT: a record's text names the class that was raised. The
    text is classified in the process that raised it, where that subclass is imported."""
    found: list[type[ChatError]] = []
    todo: list[type[ChatError]] = list(TRANSPORT_ERRORS)
    while todo:
        cls = todo.pop()
        if cls not in found and not issubclass(cls, NOT_TRANSPORT):
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return found


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


