"""orig_local: open-weight, local ORIG (retrieval-augmented factual image generation).

Importing this package is cheap on purpose: torch, transformers, diffusers, vllm and ddgs are
imported only inside the constructors that need them. The public entry points below are
resolved lazily.
"""

from __future__ import annotations

from orig_local._lazy import lazy_getattr

__version__ = "0.1.0"

# name -> "module:attribute"; resolved on first access so `import orig_local` stays light.
_LAZY = {
    "Config": "orig_local.config:Config",
    "load_config": "orig_local.config:load_config",
    "make_chat_model": "orig_local.llm:make_chat_model",
    "run_agent": "orig_local.agent:run_agent",
    "Agent": "orig_local.agent:Agent",
    "load_benchmark": "orig_local.evaluation:load_benchmark",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = list(_LAZY) + ["__version__"]
