"""What every stage shares: the run context and one traced backbone call (:meth:`ask`).

A stage is an ``async def`` taking a :class:`StageContext` plus its inputs and returning a typed
(pydantic) result. It never raises for model or web trouble: a failed call is recorded in the
trace (``error``, raw invalid replies) and the stage returns a result that says what is missing,
so the loop can degrade instead of collapse. What a stage is (name, templates, schemas,
switch, the data it may read, its simulated reply) is declared once, in its module's ``SPEC``
(:mod:`orig_local.agent.registry`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from orig_local.agent.budget import Budget, EstimatedTokens, truncate_to_tokens
from orig_local.agent.config import AgentConfig
from orig_local.agent.economy import PrefixTracker, downscale
from orig_local.agent.knowledge import KnowledgeBase, SummaryFact
from orig_local.agent.prompting import PromptLibrary
from orig_local.agent.registry import check_reads
from orig_local.agent.trace import Stage, StageRecord, Trace, messages_digest
from orig_local.agent.untrusted import delimit, list_block, list_line
from orig_local.imagehash import pixels_sha256
from orig_local.llm.base import BaseChatModel, ChatError, ImageRef, Message, StructuredOutputError, system, user

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


class RetrieverLike(Protocol):
    """The parts of :class:`orig_local.retrieval.retriever.Retriever` the agent uses."""

    async def search_text(self, query: str, k: int = 10) -> Any: ...  # SearchOutcome

    async def search_images(self, query: str, k: int = 10) -> Any: ...  # SearchOutcome

    async def read_page(self, url: str, query: str | None = None) -> Any: ...  # Page | FetchFailure

    # dedup=False: skip the retriever's shared duplicate check (the agent's is per run)
    async def fetch_image(self, url: str, page_url: str | None = None, *, dedup: bool = True) -> Any: ...


class Deduper(Protocol):
    """Near-duplicate image removal (exact hash, then embedding similarity): the indices of
    the images to keep, in input order. :class:`orig_local.embeddings.dedup.ImageDeduplicator`
    also offers ``dedup(images, existing)`` with a reason per image, which the agent prefers."""

    def keep(self, images: Sequence[Any]) -> list[int]: ...


@dataclass
class StageContext:
    """Everything a stage may touch during one run (one prompt)."""

    chat: BaseChatModel
    retriever: RetrieverLike | None
    config: AgentConfig
    prompts: PromptLibrary
    trace: Trace
    prompt: str  # the user's prompt P
    knowledge: KnowledgeBase
    dedup: Deduper | None = None
    round: int = 0
    read_urls: set[str] = field(default_factory=set)  # pages read in this run (never twice)
    asked_queries: set[str] = field(default_factory=set)  # queries already searched in this run
    seen_images: dict[str, Any] = field(default_factory=dict)  # bytes_sha256 -> imagehash.Fingerprint, this run
    search_failures: int = 0  # searches that failed outright (no hits, failures reported)
    searches: int = 0
    budget: Budget = field(default_factory=lambda: Budget(EstimatedTokens()))
    reference_capacity: int = 3  # references the generator can take (min with max_references)
    prompt_max_tokens: int | None = None  # the generator's text-encoder limit, when known
    prompt_counter: Any = None  # TokenCounter for the generator's text encoder
    focus: list[str] = field(default_factory=list)  # what the last sufficiency check found missing
    sub_questions: list[str] = field(default_factory=list)  # this round's plan (passage ranking)
    prefixes: PrefixTracker | None = None  # cacheable-prefix accounting (shared across prompts)
    _refs: dict[tuple[int, int | None], tuple[Any, ImageRef]] = field(default_factory=dict, repr=False)
    _hashes: dict[int, str] = field(default_factory=dict, repr=False)

    async def ask(
        self,
        *,
        stage: Stage,
        step: str,
        template: str,
        schema: type[T],
        variables: dict[str, Any],
        images: Sequence[Any] = (),
        evidence_ids: Sequence[str] = (),
        fit: Sequence[tuple[str, Callable[[int], str]]] = (),
        reply_tokens: int | None = None,
        max_pixels: int | None = None,
    ) -> tuple[T | None, StageRecord]:
        """Render ``template``, ask the backbone for a ``schema`` reply, record it in the trace.

        Images are appended after the text, each announced by its 1-based label ("Image 2:"),
        so the text that is fixed across requests stays a shared prefix. ``max_pixels``: each
        image is downscaled (aspect kept) to at most this many pixels before it is sent (None:
        as it is, the backbone applies its own bound; 0: not sent at all).
        ``fit``: (variable, filler) pairs filled in order, each filler getting the tokens left
        once the system prompt, the rest of the template, the images and the reply are reserved.
        ``reply_tokens``: a call whose reply needs more than the backbone's ``max_tokens`` (the
        consolidated summary) says how much; it is sent as the call's ``max_tokens`` and reserved
        in the window. Returns ``(parsed or None, record)``; on failure ``record.error`` says why."""
        system_text = self.prompts.render("system")
        images = [] if max_pixels == 0 else list(images)
        budget_note = None
        if fit:
            variables, budget_note = self._fit(stage, step, template, variables, fit, system_text,
                                               len(images), reply_tokens)
        text = self.prompts.render(template, prompt=self.prompt, **variables)
        check_reads(template, text, stage)  # only the data its stage declares (registry: Call.reads)
        messages = await self._messages(system_text, text, images, max_pixels)
        canonical = [self._canonical(m) for m in messages]
        notes = [budget_note] if budget_note else []
        if reply_tokens is not None:
            notes.append(f"reply limit {reply_tokens} tokens (max_tokens sent with this call)")
        started_s = self.trace.elapsed()
        cacheable = (0 if self.prefixes is None else
                     self.prefixes.cacheable(step, system_text, text, self.budget.counter))
        parsed, outcome = await self._call(messages, schema, reply_tokens)
        # made once with its outcome: a pydantic field assignment costs ~3 us, and a call
        # set eleven of them (issue 22, 128 prompts in flight)
        record = StageRecord(
            stage=stage, step=step, round=self.round, template=template,
            messages_sha256=messages_digest(canonical),
            messages=canonical if self.config.trace_messages else None,
            evidence_ids=list(evidence_ids), started_s=started_s, cacheable_tokens=cacheable, notes=notes,
            **outcome,
        )
        if record.error:
            log.warning("%s/%s (round %d) failed: %s", stage, step, self.round, record.error[:300])
        self.trace.add(record)
        return parsed, record

    def _fit(self, stage: Stage, step: str, template: str, variables: dict[str, Any],
             fit: Sequence[tuple[str, Callable[[int], str]]], system_text: str, n_images: int,
             reply_tokens: int | None) -> tuple[dict[str, Any], str | None]:
        """``variables`` with each ``fit`` variable filled, in order, into the tokens left once
        everything else of the call is reserved, and a note when nothing was left."""
        variables = dict(variables)
        budget_note = None
        fixed = self.prompts.render(template, prompt=self.prompt, **variables, **{n: "" for n, _ in fit})
        left = self.budget.available(system_text + fixed, images=n_images, reply_tokens=reply_tokens)
        if left <= 0:
            budget_note = (f"no room for evidence: template, {n_images} image(s) and the reply fill the "
                           f"{self.budget.context_tokens}-token window")
            log.warning("%s/%s: %s", stage, step, budget_note)
        for name, fill in fit:
            variables[name] = fill(left)
            left = max(left - self.budget.count(variables[name]), 0)
        return variables, budget_note

    async def _messages(self, system_text: str, text: str, images: Sequence[Any],
                        max_pixels: int | None) -> list[Message]:
        """The system and user messages: the text first, then each image after its label, so
        the text fixed across requests stays a shared prefix."""
        parts: list[Any] = [text]
        refs = self._prepared(images, max_pixels)
        if refs is None:  # resizing and hashing pictures is CPU work: off the event loop
            refs = await asyncio.to_thread(self._prepare, images, max_pixels)
        for i, ref in enumerate(refs, 1):
            parts += [f"\nImage {i}:", ref]
        return [system(system_text), user(*parts)]

    async def _call(self, messages: list[Message], schema: type[T],
                    reply_tokens: int | None) -> tuple[T | None, dict[str, Any]]:
        """Send the call: (parsed reply or None, the record's outcome fields: reply or error,
        tokens, attempts, latency); a model failure is recorded, never raised, so the stage
        can degrade."""
        start = time.perf_counter()
        parsed: T | None = None
        try:
            reply = await self.chat.chat(messages, schema=schema, max_tokens=reply_tokens)
        except StructuredOutputError as exc:
            outcome: dict[str, Any] = dict(
                error=f"StructuredOutputError: {exc}", invalid_replies=list(exc.raw_texts),
                attempts=len(exc.raw_texts), prompt_tokens=exc.usage.prompt_tokens,
                completion_tokens=exc.usage.completion_tokens, cache_hit_tokens=exc.usage.cached_tokens,
                finish_reason=exc.finish_reason, truncated=exc.finish_reason == "length")
        except ChatError as exc:
            outcome = dict(error=f"{type(exc).__name__}: {exc}", attempts=1)
        else:
            parsed = reply.parsed  # type: ignore[assignment]
            outcome = dict(
                output=parsed.model_dump(mode="json") if parsed is not None else reply.text,
                prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens,
                cache_hit_tokens=reply.usage.cached_tokens, attempts=reply.attempts,
                invalid_replies=list(reply.invalid_replies), cached=reply.cached,
                finish_reason=reply.finish_reason, truncated=reply.truncated)
        outcome["latency_s"] = time.perf_counter() - start
        return parsed, outcome

    def _image_ref(self, image: Any, max_pixels: int | None = None) -> ImageRef:
        """One ImageRef per picture and size per run, so its PNG bytes and hash are computed
        once even though the picture is sent in several requests."""
        key = (id(image), max_pixels)
        known = self._refs.get(key)
        if known is None or known[0] is not image:  # ids of dead objects are reused
            sized = downscale(image, max_pixels)
            # a picture already within this bound is the same picture at every bound: one ref,
            # hashed once (the filter's and the features' requests send it unchanged)
            ref = self._image_ref(image) if sized is image and max_pixels is not None else ImageRef(sized)
            known = self._refs[key] = (image, ref)
        return known[1]

    def _prepared(self, images: Sequence[Any], max_pixels: int | None) -> list[ImageRef] | None:
        """The pictures' ImageRefs when each is already sized and hashed in this run, else None."""
        from PIL import Image

        refs = []
        for image in images:
            known = self._refs.get((id(image), max_pixels))
            if (known is None or known[0] is not image) and isinstance(image, Image.Image) and (
                    max_pixels is None or image.width * image.height <= max_pixels):
                known = (image, self._image_ref(image, max_pixels))  # within the bound: no resize
            if known is None or known[0] is not image or id(known[1]) not in self._hashes:
                return None
            refs.append(known[1])
        return refs

    def _prepare(self, images: Sequence[Any], max_pixels: int | None) -> list[ImageRef]:
        """Size and pixel-hash each picture (once per run; runs in a worker thread)."""
        refs = [self._image_ref(image, max_pixels) for image in images]
        for ref in refs:
            if id(ref) not in self._hashes:
                self._hashes[id(ref)] = pixels_sha256(ref.to_pil() if not hasattr(ref.source, "tobytes") else ref.source)
        return refs

    def _canonical(self, message: Message) -> dict[str, Any]:
        """The message as JSON for the trace, images as a hash of their pixels (cheaper than
        the PNG encoding ``Message.canonical`` hashes; computed once per picture per run)."""
        parts: list[Any] = []
        for p in message.parts:
            if isinstance(p, str):
                parts.append(p)
                continue
            digest = self._hashes.get(id(p))
            if digest is None:
                digest = self._hashes[id(p)] = pixels_sha256(p.to_pil() if not hasattr(p.source, "tobytes") else p.source)
            parts.append({"image_pixels_sha256": digest})
        return {"role": message.role, "parts": parts}

    def knowledge_image(self, eid: str) -> Any:
        """The pixels of image ``eid`` in K."""
        for v in self.knowledge.images:
            if v.id == eid:
                return v.image
        raise KeyError(f"no image {eid!r} in the knowledge base")

    def note(self, stage: Stage, step: str, message: str, **fields: Any) -> StageRecord:
        """A record without a backbone call (a skipped stage, a fallback taken)."""
        record = StageRecord(stage=stage, step=step, round=self.round, started_s=self.trace.elapsed(),
                             notes=[message], **fields)
        return self.trace.add(record)

    # ------------------------------------------------------------------ K within a budget

    def knowledge_filler(self, stage: Stage, cap: int | None = None) -> Callable[[int], str]:
        """A ``fit`` filler rendering K's text (:meth:`render_knowledge`) into what is left."""
        limit = self.config.knowledge_tokens if cap is None else cap
        return lambda left: self.render_knowledge(min(left, limit), stage)

    def render_knowledge(self, max_tokens: int, stage: Stage) -> str:
        """K's text as data blocks within ``max_tokens``.

        Normally that is the consolidated summary (plus entries not folded in yet). When it does
        not fit, statements are cut least useful first: those repeating another statement
        (older first), then those sharing fewest words with the prompt and what is missing
        (older first on ties). Raw passages (the accumulation ablation) are each truncated to
        an equal share instead, so that every passage is seen. Every cut goes into the trace."""
        entries = self.knowledge.text_entries()
        if not entries:
            return ""
        counter = self.budget.counter
        kinds = {t.id: t.kind for t in self.knowledge.texts}
        passages = any(kinds.get(e.evidence[0]) == "passage" for e in entries)
        if passages:  # whole passages keep their line breaks: a block each
            blocks = [delimit(",".join(e.evidence), e.text) for e in entries]
            if sum(counter.count(b) + 1 for b in blocks) <= max_tokens:
                return "\n".join(blocks)
        blocks = [_block(e) for e in entries]
        total = LIST_TOKENS + sum(counter.count(b) + 1 for b in blocks)
        if total <= max_tokens and not passages:
            return list_block(blocks)
        if passages:
            # Water-filling: short entries keep their length, the long ones share the rest.
            costs = [counter.count(e.text) for e in entries]
            remaining = max(max_tokens - 16 * len(entries), 0)  # 16: a block's id and delimiters
            shares: dict[int, int] = {}
            for k, i in enumerate(sorted(range(len(entries)), key=lambda i: costs[i])):
                shares[i] = min(costs[i], remaining // (len(entries) - k))
                remaining -= shares[i]
            share = max(shares.values())
            out, cut = [], []
            for i, e in enumerate(entries):
                text, was_cut = truncate_to_tokens(e.text, shares[i], counter)
                if was_cut:
                    cut.append(e.evidence[0])
                if text:
                    out.append(delimit(",".join(e.evidence), text))
            self.note(stage, "knowledge_cut", f"{len(cut)} passage(s) truncated to ~{share} tokens each to fit "
                      f"{max_tokens} tokens ({counter.label})", evidence_ids=cut,
                      output={"budget_tokens": max_tokens, "truncated": cut, "counter": counter.label})
            return "\n".join(out)
        order = _cut_order(entries, self.prompt + " " + " ".join(self.focus))
        keep = set(range(len(entries)))
        cost = [counter.count(b) + 1 for b in blocks]
        cut_entries = []
        for i in order:
            if total <= max_tokens:
                break
            keep.discard(i)
            total -= cost[i]
            cut_entries.append(entries[i])
        self.note(stage, "knowledge_cut",
                  f"{len(cut_entries)} statement(s) of K left out to fit {max_tokens} tokens ({counter.label})",
                  evidence_ids=[eid for e in cut_entries for eid in e.evidence],
                  output={"budget_tokens": max_tokens, "counter": counter.label,
                          "cut": [{"evidence": e.evidence, "round": e.round, "text": e.text[:200]} for e in cut_entries]})
        return list_block([blocks[i] for i in sorted(keep)])


LIST_TOKENS = 8  # a list block's own delimiters


def _block(entry: SummaryFact) -> str:
    return list_line(",".join(entry.evidence), entry.text)


def _words(text: str) -> set[str]:
    import re

    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def _cut_order(entries: list[SummaryFact], focus: str) -> list[int]:
    """Indices in the order they should be cut: redundant statements first (the older of two
    that mostly say the same), then by relevance to ``focus`` (fewest shared words first, older
    first on ties)."""
    words = [_words(e.text) for e in entries]
    redundant = []
    for i, w in enumerate(words):
        if not w:
            redundant.append(i)
            continue
        for j in range(len(entries)):
            if j != i and words[j] and len(w & words[j]) / len(w) >= 0.8 and (
                    len(words[j]) > len(w) or (len(words[j]) == len(w) and j > i)):
                redundant.append(i)
                break
    want = _words(focus)
    rest = sorted((i for i in range(len(entries)) if i not in set(redundant)),
                  key=lambda i: (len(words[i] & want), entries[i].round, i))
    return sorted(redundant, key=lambda i: (entries[i].round, i)) + rest
