"""Helpers shared by tests/test_agent_*.py: a scripted backbone that answers by schema name,
the demo-corpus retriever, and a generator stand-in that records what it was given."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from orig_local.agent.agent import Agent
from orig_local.agent.config import AgentConfig
from orig_local.generation.base import GenerationRequest, GenerationResult
from orig_local.llm.config import ChatConfig
from orig_local.llm.scripted import ScriptedChatModel
from orig_local.llm.simulated import SimulatedRetriever, orig_responder

PROMPT = "The Veltrane Harbor Lighthouse at dusk"


def backbone(overrides: dict[str, Callable] | None = None, **kw) -> ScriptedChatModel:
    """ScriptedChatModel answering every schema via orig_responder; ``overrides`` maps a schema
    name to its own ``(messages, schema) -> str``."""
    base = orig_responder(**kw)
    overrides = overrides or {}

    def reply(messages, schema):
        fn = overrides.get(getattr(schema, "__name__", ""))
        return fn(messages, schema) if fn else base(messages, schema)

    return ScriptedChatModel(ChatConfig(backend="scripted", model="scripted", schema_retries=1),
                             replies=[reply], cycle=True)


@dataclass
class RecordingGenerator:
    name: str = "recording"
    max_references: int = 4
    requests: list[GenerationRequest] = field(default_factory=list)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        from PIL import Image

        self.requests.append(request)
        return GenerationResult(image=Image.new("RGB", (32, 32), "teal"), seed=request.seed, seconds=0.0,
                                references_used=len(request.references))

    def generate_batch(self, requests):
        return [self.generate(r) for r in requests]

    def unload(self) -> None:
        pass


_CORPUS: SimulatedRetriever | None = None


def corpus(**kw) -> SimulatedRetriever:
    """The demo corpus (loaded once per session) with fresh switches."""
    global _CORPUS
    if _CORPUS is None:
        _CORPUS = SimulatedRetriever.from_demo_corpus()
    return SimulatedRetriever(_CORPUS.docs, _CORPUS.images, **kw)


def make_agent(chat=None, retriever=None, generator=None, **config) -> Agent:
    return Agent(chat=chat or backbone(), retriever=retriever if retriever is not None else corpus(),
                 config=AgentConfig(**config), generator=generator)


def keep_only(*numbers: int) -> Callable:
    """A RefinedText reply that keeps the given image numbers (and all K facts)."""
    import re

    def reply(messages, schema):
        text = messages[-1].text
        facts = re.findall(r"^\[T\d+\] (.*?)(?: \(source: [^)]*\))?$", text, re.M)
        return json.dumps({"features": facts[:8], "keep_images": list(numbers)})

    return reply
