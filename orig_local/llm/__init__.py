"""Chat models: one protocol (:class:`BaseChatModel`), one backend per file, picked by name."""

from __future__ import annotations

from pathlib import Path

from orig_local._lazy import resolve
from orig_local.llm.base import (
    BaseChatModel,
    ChatConnectionError,
    ChatError,
    ChatHTTPError,
    ChatReply,
    ChatRequestRefused,
    Completion,
    ImageRef,
    Message,
    ReplyTruncatedError,
    StructuredOutputError,
    TooManyImagesError,
    Usage,
    assistant,
    system,
    user,
)
from orig_local.llm.config import ChatConfig

BACKENDS = {
    "openai": "orig_local.llm.openai_backend:OpenAIChatModel",
    "transformers": "orig_local.llm.transformers_backend:TransformersChatModel",
    "scripted": "orig_local.llm.scripted:ScriptedChatModel",
    # answers every ORIG agent stage from the evidence in the request (demos, dry runs)
    "simulated": "orig_local.llm.simulated:SimulatedBackbone",
}


def make_chat_model(config: ChatConfig, cache_dir: str | Path | None = None, **kwargs) -> BaseChatModel:
    """Build the chat backend named by ``config.backend`` (presets resolved first).

    ``cache_dir``: folder of the on-disk call cache (``chat.sqlite``); None disables caching.
    Extra keyword arguments go to the backend's constructor (e.g. ``replies=`` for scripted).
    """
    from orig_local.presets import resolve_chat_preset

    config = resolve_chat_preset(config)
    cache = None
    if cache_dir is not None and config.cache:
        from orig_local.cache import DiskCache

        cache = DiskCache(Path(cache_dir) / "chat.sqlite", namespace="chat")
    cls = resolve("chat", BACKENDS, config.backend)
    return cls(config, cache=cache, **kwargs)


__all__ = [
    "BACKENDS", "BaseChatModel", "ChatConfig", "ChatConnectionError", "ChatError", "ChatHTTPError", "ChatReply", "ChatRequestRefused",
    "Completion", "ImageRef", "Message", "ReplyTruncatedError", "StructuredOutputError",
    "TooManyImagesError", "Usage", "assistant",
    "make_chat_model", "system", "user",
]
