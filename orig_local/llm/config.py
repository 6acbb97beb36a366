"""Config section for a chat model (the agent's backbone, or the judge)."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, SecretStr

from orig_local.configbase import StrictModel

LOCAL_VLLM_URL = "http://127.0.0.1:8000/v1"


def _default_base_url() -> str:
    # Like the OpenAI client: OPENAI_BASE_URL when the config names no server. Read when the
    # config is built, so the saved config.yaml records the server actually used.
    return os.environ.get("OPENAI_BASE_URL") or LOCAL_VLLM_URL


class ChatConfig(StrictModel):
    """Which chat model to talk to and how.

    ``preset`` names a model preset (``orig models``, e.g. ``qwen2.5-vl-7b``); when set, it fills
    ``model`` (and, for the ``transformers`` backend, the weights path), ``revision`` and
    ``max_images`` unless given here. Without a preset, ``model`` is the served name (openai) or a
    hub id / folder (transformers) of any model.

    The API key is a secret: it is read from the environment variable ``api_key_env`` when the
    request is sent and is never written to a run folder (``api_key`` given in a config or
    override is accepted but excluded from every saved config).
    """

    backend: str = "openai"  # openai | transformers | scripted (see orig_local.llm.BACKENDS)
    preset: str | None = None
    model: str | None = None  # served model name (openai) or local path / hub id (transformers)
    # Hub revision (branch, tag or commit sha). transformers: passed to from_pretrained; openai:
    # recorded only - the server loaded what it was started with (`orig serve` passes --revision).
    revision: str | None = None
    base_url: str = Field(default_factory=_default_base_url)  # default: $OPENAI_BASE_URL, else a local `vllm serve`
    # Where the key comes from: this environment variable (unset -> "EMPTY": a local vLLM
    # accepts anything unless started with --api-key). Set e.g. judge.api_key_env=JUDGE_API_KEY.
    api_key_env: str = "OPENAI_API_KEY"
    api_key: SecretStr | None = Field(None, exclude=True)  # prefer api_key_env; never saved
    # Images one request may carry (vLLM's --limit-mm-per-prompt). None: the preset's serve limit
    # (openai backend), else no limit. Callers that show a variable number of images (the
    # retrieval-accuracy judge) send at most this many; more raises before anything is sent.
    max_images: int | None = Field(None, ge=0)
    # Paper, App. A: backbone temperature <= 0.2. 0 makes calls deterministic and cacheable.
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(1024, ge=1)
    # The server's context window in tokens (prompt + reply; vLLM's --max-model-len). None: the
    # preset's serve.max_model_len (openai backend), else unknown. A structured-output retry
    # that would not fit leaves the invalid reply out of the conversation.
    context_tokens: int | None = Field(None, ge=1)
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

    def resolved_api_key(self) -> str:
        """The key to send: ``api_key`` if given, else ``$<api_key_env>``, else ``EMPTY``."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        return os.environ.get(self.api_key_env) or "EMPTY"
