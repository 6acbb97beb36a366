"""Config section for a chat model (the agent's backbone, or the judge)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from orig_local.configbase import StrictModel


class ChatConfig(StrictModel):
    """Which chat model to talk to and how.

    ``preset`` names a YAML file in ``models/`` (e.g. ``qwen2.5-vl-7b``); when set, it fills
    ``model`` (and, for the ``transformers`` backend, the weights path) unless given here.
    """

    backend: str = "openai"  # openai | transformers | scripted (see orig_local.llm.BACKENDS)
    preset: str | None = None
    model: str | None = None  # served model name (openai) or local path / hub id (transformers)
    base_url: str = "http://127.0.0.1:8000/v1"  # default: a local `vllm serve`
    api_key: str = "EMPTY"  # vLLM accepts anything unless started with --api-key
    # Paper, App. A: backbone temperature <= 0.2. 0 makes calls deterministic and cacheable.
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(1024, ge=1)
    seed: int | None = 0
    timeout_s: float = Field(120.0, gt=0)
    connect_retries: int = Field(4, ge=0)  # retries on connection errors / HTTP 5xx / 429
    backoff_s: float = Field(1.0, ge=0)  # first backoff; doubles each retry, with jitter
    schema_retries: int = Field(2, ge=0)  # extra attempts when a structured reply does not validate
    concurrency: int = Field(32, ge=1)  # requests in flight to this model at once
    # How a pydantic schema is sent: json_schema = OpenAI `response_format` (vLLM >= 0.12 turns
    # it into guided decoding); structured_outputs = vLLM's `extra_body.structured_outputs`;
    # prompt = schema described in the prompt only (servers without guided decoding).
    structured_mode: Literal["json_schema", "structured_outputs", "prompt"] = "json_schema"
    cache: bool = True  # temperature-0 calls are cached on disk; sampling is never cached
    # transformers backend
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    dtype: str = "auto"  # auto (bf16 on GPU, float32 on CPU) | bfloat16 | float16 | float32
    max_pixels: int | None = None  # cap on image pixels given to the processor
    # scripted backend: a JSONL/YAML file of canned replies (tests, dry runs)
    script: str | None = None
