"""The generator protocol the agent and the benchmark runner call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class GenerationRequest:
    prompt: str
    references: list[Any] = field(default_factory=list)  # PIL images, in order of importance
    seed: int = 0
    width: int | None = None  # None -> the preset's default
    height: int | None = None
    steps: int | None = None
    guidance: float | None = None
    negative_prompt: str | None = None


@dataclass
class GenerationResult:
    image: Any  # PIL.Image.Image
    seed: int
    seconds: float
    references_used: int  # how many references actually reached the pipeline
    notes: list[str] = field(default_factory=list)  # e.g. "text-only generator: 2 references ignored"
    params: dict[str, Any] = field(default_factory=dict)  # resolved call parameters


@runtime_checkable
class Generator(Protocol):
    name: str
    max_references: int  # reference images it receives: 0 text-only, 1 edit models, N multi-image
    prompt_max_tokens: int  # text-encoder tokens of the prompt it reads (longer prompts are cut)

    def generate(self, request: GenerationRequest) -> GenerationResult: ...

    def generate_batch(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]: ...

    def unload(self) -> None: ...
