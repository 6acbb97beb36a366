"""The ORIG agent: one loop for every condition and ablation of the paper.

:meth:`Agent.run` reads as the paper's pipeline, in numbered steps; which steps run is decided
by :class:`~orig_local.agent.config.AgentConfig` only. Each step is a stage module in
``orig_local/agent/stages/``; every backbone call, search, read and fetch is a record in the
run's :class:`~orig_local.agent.trace.Trace`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orig_local.agent.budget import Budget, EstimatedTokens, TokenCounter
from orig_local.agent.config import AgentConfig
from orig_local.agent.economy import PrefixTracker
from orig_local.agent.knowledge import KnowledgeBase, Source
from orig_local.agent.prompting import PromptLibrary
from orig_local.agent.result import AgentResult, OracleEvidence, Status, StopReason
from orig_local.agent.stages.accumulation import accumulate
from orig_local.agent.stages.base import Deduper, RetrieverLike, StageContext
from orig_local.agent.stages.bootstrap import bootstrap
from orig_local.agent.stages.consolidation import consolidate
from orig_local.agent.stages.enhance import enhance_prompt
from orig_local.agent.stages.extension import ExtensionResult, assemble_prompt, extend_prompt
from orig_local.agent.stages.generation import generate
from orig_local.agent.stages.planning import fallback_queries, plan_queries
from orig_local.agent.stages.refinement import Reference, RefinementResult, describe_in_words, refine, unrefined
from orig_local.agent.stages.search import retrieve_round
from orig_local.agent.stages.sufficiency import evaluate_sufficiency
from orig_local.agent.status import assess
from orig_local.agent.trace import Listener, Trace
from orig_local.llm.base import BaseChatModel, ImageRef

if TYPE_CHECKING:
    from orig_local.generation.base import Generator

log = logging.getLogger(__name__)

# AgentResult, OracleEvidence, Status and StopReason live in agent/result.py; imported from here too.
__all__ = ["Agent", "AgentResult", "OracleEvidence", "Status", "StopReason"]


class Agent:
    """Runs ORIG (or one of its baselines/ablations) for one prompt at a time, or many at once.

    Dependencies are explicit: ``chat`` is the backbone, ``retriever`` the web (or a local
    corpus), ``generator`` an optional image generator, ``dedup`` an optional embedding-based
    near-duplicate filter, ``prompts`` a :class:`PromptLibrary` or a folder of templates.

    What the generator can take is known without loading it: ``reference_capacity`` (how many
    reference images; default the generator's ``max_references``, else the config's cap) and
    ``prompt_max_tokens`` (its text encoder's limit; default the generator's
    ``prompt_max_tokens``). ``tokens`` counts backbone tokens (default: an estimate) and
    ``context_tokens`` is the backbone's window and ``image_tokens`` its tokens per image
    (``config`` values win; defaults 32768 and 1280).
    """

    def __init__(
        self,
        chat: BaseChatModel,
        retriever: RetrieverLike | None = None,
        config: AgentConfig | None = None,
        generator: Generator | None = None,
        dedup: Deduper | None = None,
        prompts: PromptLibrary | str | Path | None = None,
        *,
        reference_capacity: int | None = None,
        prompt_max_tokens: int | None = None,
        prompt_tokens: TokenCounter | None = None,
        tokens: TokenCounter | None = None,
        context_tokens: int | None = None,
        image_tokens: int | None = None,
    ):
        self.chat = chat
        self.retriever = retriever
        self.config = config or AgentConfig()
        self.generator = generator
        self.dedup = dedup
        self.prompts = prompts if isinstance(prompts, PromptLibrary) else PromptLibrary(prompts)
        cfg = self.config
        if reference_capacity is None and generator is not None:
            reference_capacity = getattr(generator, "max_references", None)
        self.reference_capacity = cfg.max_references if reference_capacity is None else reference_capacity
        if prompt_max_tokens is None and generator is not None:
            prompt_max_tokens = getattr(generator, "prompt_max_tokens", None)
        self.prompt_max_tokens = prompt_max_tokens
        self.prompt_tokens = prompt_tokens
        self.budget = Budget(tokens or EstimatedTokens(), context_tokens=cfg.context_tokens or context_tokens or 32768,
                             reply_tokens=cfg.reply_tokens,
                             image_tokens=next(v for v in (cfg.image_tokens, image_tokens, 1280) if v is not None))
        self.text_only_warning: str | None = None
        if "image" in cfg.modalities and self.reference_capacity == 0:
            self.text_only_warning = (
                f"condition {cfg.condition!r} with a text-only generator: retrieved images are not passed, "
                "only described in the prompt (the paper fed Qwen-Image-Edit for ORIG and ORIG-Img; "
                "use an edit preset such as qwen-image-edit or qwen-image-edit-2509)")
            log.warning("%s", self.text_only_warning)
        self.progress: Listener | None = None  # live stage/round progress (Trace.listener)
        self._generate_lock: asyncio.Lock | None = None  # one pipeline: one image at a time
        self.prefixes = PrefixTracker()  # cacheable-token estimate across the prompts it runs
        temperature = getattr(getattr(chat, "config", None), "temperature", 0.0)
        if temperature > 0.2:  # paper App. A: backbone temperature <= 0.2
            log.warning("backbone temperature %.2f is above the paper's 0.2", temperature)
        if self.config.retrieves and retriever is None:
            raise ValueError(f"condition {self.config.condition!r} needs a retriever")

    # ------------------------------------------------------------------ one prompt

    async def run(self, prompt: str, item: Any = None, oracle: OracleEvidence | None = None) -> AgentResult:
        """Run the configured condition on ``prompt``.

        ``oracle`` (or an ``item`` with ``oracle_evidence()``) supplies the gold references for
        the Oracle condition. ``item`` may also carry an ``id``, kept in the result."""
        cfg = self.config
        ctx, result = self._start(prompt, item)
        start = time.perf_counter()

        # 1. Baselines without retrieval: Direct keeps P; Prompt Enhanced expands it from the
        #    backbone's own knowledge.
        if cfg.spec.enhances:
            result.final_prompt = (await enhance_prompt(ctx)).final_prompt

        # 2. Oracle: the benchmark's gold text and images take the place of retrieval.
        elif cfg.spec.needs_oracle:
            refined = await self._load_oracle(ctx, oracle if oracle is not None else _oracle_of(item))
            await self._construct(ctx, result, refined)

        elif cfg.retrieves:
            # 3. Bootstrapping retrieval: light text search on the prompt's rare entities.
            if cfg.bootstrap and "text" in cfg.modalities:
                await bootstrap(ctx)
                result.bootstrapped = True
            elif cfg.bootstrap:
                ctx.note("bootstrap", "skipped", "bootstrap searches text; skipped for image-only retrieval")

            # 4. The retrieval loop: plan -> search -> accumulate -> sufficient?
            result.stop_reason, result.rounds = await self._research(ctx)
            _note_search_outage(ctx, result)

            # 5. Fine-grained refinement and 6. prompt extension.
            refined = await self._refine(ctx)
            await self._construct(ctx, result, refined)

        # 7. Generation from P̂ and the ordered references, when a generator is configured.
        if self.generator is not None:
            await self._generate(ctx, result)

        result.seconds = time.perf_counter() - start
        assess(result)
        return result

    def _start(self, prompt: str, item: Any) -> tuple[StageContext, AgentResult]:
        """A fresh run context for ``prompt`` and its result, carrying the notes every result
        shows (stand-in models, a text-only generator, an estimated token bound)."""
        cfg = self.config
        prompt = " ".join(prompt.split())  # FIG-Eval prompts contain double spaces
        ctx = StageContext(chat=self.chat, retriever=self.retriever, config=cfg, prompts=self.prompts,
                           trace=_labelled_trace(self.chat, self.generator, cfg.condition),
                           prompt=prompt, knowledge=KnowledgeBase(), dedup=self.dedup,
                           budget=self.budget, reference_capacity=self.reference_capacity,
                           prompt_max_tokens=self.prompt_max_tokens, prompt_counter=self.prompt_tokens,
                           prefixes=self.prefixes)
        result = AgentResult(prompt=prompt, condition=cfg.condition, final_prompt=prompt,
                             knowledge=ctx.knowledge, trace=ctx.trace, item_id=_item_id(item))
        ctx.trace.listener = self.progress
        result.notes.extend(ctx.trace.labels)  # stand-ins say so wherever notes are shown (CLI, rows)
        if self.text_only_warning:
            result.notes.append(self.text_only_warning)
        if self.prompt_max_tokens and self.prompt_tokens is None and cfg.spec.uses_backbone:
            result.notes.append(f"P̂'s {self.prompt_max_tokens}-token bound is counted with an estimate "
                                "(no tokenizer of the generator's text encoder available offline)")
        return ctx, result

    async def _research(self, ctx: StageContext) -> tuple[StopReason, int]:
        """The loop of paper §3.2.1. Returns (stop reason, rounds run)."""
        cfg = ctx.config
        missing: list[str] = []
        for rnd in range(1, cfg.round_limit + 1):
            ctx.round = rnd
            plan = await plan_queries(ctx, missing)  # 4a. sub-questions and queries
            if plan.plan is None:
                return "error", rnd - 1
            if plan.queries == 0:  # the round still runs: sub-questions, gaps, prompt aspects
                fallback_queries(ctx, plan, missing)
                if plan.queries == 0:
                    ctx.note("planning", "stop", "no new query to search")
                    return "no_new_evidence", rnd - 1
            ctx.sub_questions = [q.question for q in plan.plan.sub_questions]  # ranks page passages
            raw = await retrieve_round(ctx, plan.text_queries, plan.image_queries)  # 4b. search
            added = await accumulate(ctx, raw)  # 4c. coarse filtering into K
            if cfg.accumulation_filter and cfg.consolidate:
                await consolidate(ctx)  # 4c'. K -> a compact, deduplicated summary
            if cfg.fixed_rounds is not None:  # Table 4: fixed length, no sufficiency check
                continue
            sub_questions = [q.question for q in plan.plan.sub_questions]
            if added.added == 0:
                if ctx.searches and ctx.search_failures == ctx.searches:
                    return "no_new_evidence", rnd  # the search service is down: more rounds cannot help
                # Nothing passed the filters: nothing to judge, so (as the paper's loop) search
                # again with new sub-queries until the round limit; the gaps carry over.
                ctx.note("sufficiency", "skipped", "the round added nothing to K: planning new sub-queries")
                missing = list(dict.fromkeys(missing + sub_questions))[:10]
                continue
            verdict = (await evaluate_sufficiency(ctx, sub_questions)).decision  # 4d. enough?
            if verdict is None:
                return "error", rnd
            if verdict.sufficient:
                return "sufficient", rnd
            missing = verdict.missing
        return "max_rounds", cfg.round_limit

    async def _refine(self, ctx: StageContext) -> RefinementResult:
        if not len(ctx.knowledge):
            ctx.note("refinement", "skipped", "knowledge base is empty: nothing to refine")
            return RefinementResult()
        if not ctx.config.refinement:
            ctx.note("refinement", "skipped", "refinement off: K passed on unrefined")
            return unrefined(ctx)
        return await refine(ctx)

    async def _construct(self, ctx: StageContext, result: AgentResult, refined: RefinementResult) -> None:
        """Prompt extension (or its template stand-in) and the result's reference list."""
        if ctx.config.prompt_extension:
            ext: ExtensionResult = await extend_prompt(ctx, refined)
        else:
            ext = assemble_prompt(ctx, refined)
        result.final_prompt = ext.final_prompt
        by_id = {v.id: v for v in ctx.knowledge.images}
        result.references = [by_id[i] for i in ext.references]
        result.reference_notes = list(refined.references)
        result.text_features = list(refined.text_features)

    async def _load_oracle(self, ctx: StageContext, oracle: OracleEvidence | None) -> RefinementResult:
        """Gold evidence goes into K as is and is used as the refined evidence: it is already
        curated, so neither filtering nor refinement may drop any of it. Gold images the
        generator does not take (all of them for a text-only generator) are described in
        words (F^v into F^t), as refinement does for retrieved images."""
        if oracle is None:
            raise ValueError("the oracle condition needs OracleEvidence (run(..., oracle=...))")
        src = Source(url=oracle.source, round=0, origin="oracle")
        for line in oracle.text:
            ctx.knowledge.add_text(line, src)
        for image in oracle.images:
            ref = ImageRef(image)
            ctx.knowledge.add_image(ref.to_pil(), ref.png_sha256(), src, description="gold reference")
        limit = min(ctx.config.max_references, ctx.reference_capacity)
        images = ctx.knowledge.images[:limit]
        rest = ctx.knowledge.images[len(images):]
        features = [t.text for t in ctx.knowledge.texts]
        if rest:
            words = await describe_in_words(ctx, rest, features)
            ctx.note("extension", "oracle_cap", f"{len(rest)} gold image(s) beyond what the generator takes "
                     f"({limit}) not passed; {len(words)} described in words in the prompt",
                     evidence_ids=[v.id for v in rest], output={"described": words})
            features += words
        return RefinementResult(
            text_features=features,
            references=[Reference(id=v.id, contributes=v.description) for v in images],
        )

    async def _generate(self, ctx: StageContext, result: AgentResult) -> None:
        assert self.generator is not None, "called only with a generator"
        if self._generate_lock is None:
            self._generate_lock = asyncio.Lock()
        await generate(ctx, self.generator, result, self._generate_lock)

    # ------------------------------------------------------------------ many prompts

    async def run_many(
        self,
        prompts: Sequence[str | tuple[str, Any]],
        concurrency: int | None = None,
        on_result: Callable[[AgentResult], Any] | None = None,
    ) -> list[AgentResult]:
        """Run many prompts with at most ``concurrency`` in flight (default
        ``config.concurrency``), so a vLLM server's continuous batching stays full.

        Each entry is a prompt or ``(prompt, item)``. A run that raises, or exceeds
        ``config.run_timeout_s``, is returned as a result with ``error`` set (and P as its
        prompt); the others go on. ``on_result`` is called as
        each run finishes (e.g. to append a JSONL row; it may be async). Results come back in input order."""
        limit = asyncio.Semaphore(concurrency or self.config.concurrency)

        async def one(entry) -> AgentResult:
            prompt, item = entry if isinstance(entry, tuple) else (entry, None)
            async with limit:
                try:
                    res = await asyncio.wait_for(self.run(prompt, item=item), self.config.run_timeout_s)
                except Exception as exc:  # one bad item (or a timeout) must not stop a benchmark run
                    log.exception("run failed for %r", str(prompt)[:80])
                    res = AgentResult(prompt=str(prompt), condition=self.config.condition,
                                      final_prompt=str(prompt), error=f"{type(exc).__name__}: {exc}",
                                      item_id=_item_id(item))
                    assess(res)
            if on_result is not None:
                done = on_result(res)
                if inspect.isawaitable(done):
                    await done
            return res

        return list(await asyncio.gather(*(one(e) for e in prompts)))

    async def aclose(self) -> None:
        """Close the backbone and the retriever (the generator is left to its owner); the
        retriever (HTTP session, parse workers) is closed even when the backbone's close fails."""
        try:
            await self.chat.aclose()
        finally:
            if self.retriever is not None and hasattr(self.retriever, "aclose"):
                await self.retriever.aclose()


def _item_id(item: Any) -> str | None:
    if item is None:
        return None
    value = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
    return None if value is None else str(value)


def _oracle_of(item: Any) -> OracleEvidence | None:
    """Gold evidence from a benchmark item: ``item.oracle_evidence()`` or an OracleEvidence."""
    if item is None or isinstance(item, OracleEvidence):
        return item
    getter = getattr(item, "oracle_evidence", None)
    return getter() if callable(getter) else None


def _labelled_trace(chat, generator, condition: str) -> Trace:
    """A trace that carries the run's stand-in labels (simulated backbone, tiny weights).
    A condition that never calls the backbone (Direct): its backbone says nothing about the output."""
    from orig_local.conditions import condition as spec_of
    from orig_local.labels import run_labels, tokens_estimated

    chat = chat if spec_of(condition).uses_backbone else None
    return Trace(labels=run_labels(chat, generator), tokens_estimated=tokens_estimated(chat))


def _note_search_outage(ctx: StageContext, result: AgentResult) -> None:
    """When every search failed, the prompt rests on the backbone alone: flag it on the result
    (a run without evidence must not look like one with it)."""
    if ctx.searches and ctx.search_failures == ctx.searches:
        result.parametric_only = True
        result.notes.append(
            f"search unavailable: all {ctx.searches} searches failed; the prompt rests on "
            "the backbone's own knowledge"
        )
