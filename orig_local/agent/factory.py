"""Build an :class:`~orig_local.agent.agent.Agent` from a root :class:`~orig_local.config.Config`,
and the one-call API :func:`run_agent` (what ``orig generate`` does, from Python).

Every part can be passed in ready-made (tests, the benchmark runner sharing one backbone and
one generator across conditions); what is not passed is built from the config.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from orig_local.agent.agent import Agent, AgentResult, OracleEvidence
    from orig_local.agent.budget import TokenCounter
    from orig_local.agent.stages.base import Deduper, RetrieverLike
    from orig_local.agent.trace import Listener
    from orig_local.config import Config
    from orig_local.embeddings.clip import OpenClipEmbedder
    from orig_local.generation.base import Generator
    from orig_local.llm.base import BaseChatModel
    from orig_local.resolved import ResolvedModels

log = logging.getLogger(__name__)


def build_agent(config: Config | None = None, *, chat: BaseChatModel | None = None,
                retriever: RetrieverLike | None = None, generator: Generator | Literal[False] | None = None,
                dedup: Deduper | Literal[False] | None = None, embedder: OpenClipEmbedder | None = None,
                models: ResolvedModels | None = None) -> Agent:
    """An Agent for ``config`` (default: the default Config). Parts not given are built:

    * ``chat``: :func:`orig_local.llm.make_chat_model` of ``config.backbone``;
    * ``retriever``: ``Retriever.from_config(config.retrieval)``, only for retrieval conditions;
    * ``generator``: ``make_generator(config.generator)`` when ``generator.preset`` or ``.model`` is set;
    * ``dedup``: CLIP near-duplicate removal (``agent.dedup``), only for retrieval conditions;
      its embedder is shared with the local search backend.
    Pass ``generator=False`` / ``dedup=False`` to force them off. ``models``: the run's models
    already resolved (default: :meth:`ResolvedModels.from_config <orig_local.resolved.ResolvedModels.from_config>`,
    one preset read per model), the source of every budget the Agent gets.

    Example (offline: the labelled ``simulated`` backbone over the bundled demo corpus)::

        >>> import asyncio
        >>> from orig_local import load_config
        >>> from orig_local.agent.factory import build_agent
        >>> config = load_config(["offline"], ["backbone.backend=simulated", "generator.preset=null"])
        >>> async def enrich(prompt):
        ...     agent = build_agent(config)
        ...     try:
        ...         return await agent.run(prompt)
        ...     finally:
        ...         await agent.aclose()
        >>> result = asyncio.run(enrich("The Veltrane Harbor Lighthouse at dusk"))
        >>> result.status, result.condition
        ('ok', 'orig')
    """
    from orig_local.agent.agent import Agent
    from orig_local.config import Config
    from orig_local.resolved import ResolvedModels

    config = config or Config()
    cache_dir = config.resolved_cache_dir()
    acfg = config.agent
    if chat is None:
        from orig_local.llm import make_chat_model

        chat = make_chat_model(config.backbone, cache_dir=cache_dir)
    if acfg.retrieves:
        if dedup is None and acfg.dedup:
            embedder = embedder or _embedder(config, cache_dir)
            dedup = _make_dedup(config, embedder)
        if retriever is None:
            from orig_local.retrieval.retriever import Retriever

            retriever = Retriever.from_config(config.retrieval, cache_dir=cache_dir,
                                              embedder=embedder or config.embed)
    if generator is None and (config.generator.preset or config.generator.model):
        from orig_local.generation import make_generator

        generator = make_generator(config.generator, progress=config.progress)
    return Agent(chat=chat, retriever=retriever, config=acfg, generator=generator or None,
                 dedup=dedup or None, prompts=config.prompts_dir,
                 **_model_budgets(models or ResolvedModels.from_config(config), built_generator=bool(generator)))


class _Budgets(TypedDict):
    """The Agent's keyword arguments that come from the run's models."""

    reference_capacity: int | None
    prompt_max_tokens: int | None
    prompt_tokens: TokenCounter | None
    tokens: TokenCounter
    context_tokens: int | None
    image_tokens: int | None


def _model_budgets(models: ResolvedModels, built_generator: bool) -> _Budgets:
    """The Agent's budget arguments, all from the one resolved record. What the configured
    generator takes is known from its resolved pipeline even when it is not built here (the
    benchmark's agent phase passes generator=False and generates later); a built generator
    says it itself. The study keys shared agent phases on this same record (agent/inputs.py)."""
    from orig_local.agent.budget import EstimatedTokens, make_token_counter
    from orig_local.agent.inputs import GeneratorView, prompt_token_counter

    view = GeneratorView() if built_generator else GeneratorView.of(models.generator)
    backbone = models.backbone
    return _Budgets(
        reference_capacity=view.reference_capacity, prompt_max_tokens=view.prompt_max_tokens,
        prompt_tokens=prompt_token_counter(models.generator),
        # the backbone's own tokenizer when it loads offline, else an estimate (stand-ins have none)
        tokens=EstimatedTokens() if backbone is None else make_token_counter(backbone.path),
        context_tokens=backbone.context_window if backbone else None,
        image_tokens=backbone.image_tokens if backbone else None,
    )


def _embedder(config: Config, cache_dir: Path | None) -> OpenClipEmbedder:
    from orig_local.embeddings.clip import OpenClipEmbedder

    return OpenClipEmbedder.from_config(config.embed, cache_dir=cache_dir)


def _make_dedup(config: Config, embedder: OpenClipEmbedder | None) -> Deduper:
    from orig_local.embeddings.dedup import ImageDeduplicator

    # sha256, then guarded dHash (resized / recompressed copies, also against K), then CLIP
    # (crops); one dHash setting for the retriever, the fetch-time check and this deduper.
    return ImageDeduplicator(embedder, threshold=config.agent.dedup_threshold,
                             dhash_max_bits=config.retrieval.fetch.dhash_max_distance)


async def arun_agent(prompt: str, config: Config | None = None, out_dir: str | Path | None = None, *,
                     oracle: OracleEvidence | None = None, item: Any = None, agent: Agent | None = None,
                     progress: Listener | None = None) -> AgentResult:
    """Run one prompt; with ``out_dir``, write the output folder (image, prompt.txt, references,
    trace.json, config.yaml, trace.html). ``agent``: reuse a built agent (it is not closed).
    ``progress``: called as stages run (:attr:`Trace.listener`)."""
    from orig_local.config import Config

    config = config or Config()
    own = agent is None
    agent = agent or build_agent(config)
    if progress is not None:
        agent.progress = progress
    try:
        result = await agent.run(prompt, item=item, oracle=oracle)
    finally:
        if own:
            await agent.aclose()
    if out_dir is not None:
        result.save(out_dir, config=config)
    return result


def run_agent(prompt: str, config: Config | str | Path | None = None, out_dir: str | Path | None = None,
              **kwargs: Any) -> AgentResult:
    """Synchronous :func:`arun_agent` (for scripts and notebooks without an event loop).

    ``config``: a Config, or a packaged config name / YAML path (e.g. ``"offline"``).

    Example (offline: the labelled ``simulated`` backbone, bundled demo corpus, no generator;
    give ``generator.preset=<preset>`` and ``out_dir`` to get the image and the trace)::

        >>> from orig_local import load_config, run_agent
        >>> config = load_config(["offline"], ["backbone.backend=simulated", "generator.preset=null"])
        >>> result = run_agent("The Veltrane Harbor Lighthouse at dusk", config)
        >>> result.status, result.stop_reason
        ('ok', 'sufficient')
        >>> "teal and orange" in result.final_prompt   # a fact only the corpus knows
        True
    """
    if isinstance(config, (str, Path)):
        from orig_local.config import load_config

        config = load_config(config)
    return asyncio.run(arun_agent(prompt, config, out_dir, **kwargs))
