"""Knowledge consolidation (paper §3.2.1, Table 6: what accumulation hands on stays compact).

After each round's coarse filtering, the statements of K not yet consolidated are merged into
the running summary by one backbone call: repeats merged, each statement short and
self-contained, every statement citing the K entries (``T3``) it rests on. Later stages
(planning, sufficiency, the filters, refinement) read this summary instead of K's raw entries.

The call may merge but never lose evidence: a new entry or earlier statement that no returned
statement cites is carried over as is (and the trace says so), statements citing nothing in K
or reading like instructions are dropped (traced), and if the call fails the new entries are
appended unmerged. Size is bounded where K is rendered (``StageContext.render_knowledge``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from orig_local.agent.knowledge import SummaryFact
from orig_local.agent.stages.base import StageContext
from orig_local.agent.untrusted import delimit, looks_like_instruction, sanitize


class ConsolidatedStatement(BaseModel):
    evidence: list[str] = Field(description="ids of the knowledge entries it rests on, e.g. T3")
    text: str = Field(description="one short, self-contained statement")


class Consolidation(BaseModel):
    reason: str = Field("", description="briefly, what was merged")
    statements: list[ConsolidatedStatement] = Field(default_factory=list, max_length=400)


class ConsolidationResult(BaseModel):
    consolidated: list[str] = Field(default_factory=list)  # K ids folded in by this call
    statements: int = 0  # size of the summary afterwards
    carried: list[str] = Field(default_factory=list)  # ids no statement cited: kept as is
    dropped: list[str] = Field(default_factory=list)  # statements refused (why in the trace)
    failed: bool = False


# A summary of N tokens comes back as JSON: evidence id lists, keys and quotes add ~40%, and a
# model asked for "about N" writes up to ~1.3 N. Twice the target plus a fixed part for the
# reason and the scaffolding covers both; the limit is sent with the call (max_tokens), so the
# reply is never cut at a backbone default written for short replies (1,024).
REPLY_PER_TARGET_TOKEN = 2
REPLY_FIXED_TOKENS = 256


def reply_plan(ctx: StageContext) -> tuple[int, int]:
    """(summary tokens asked for, reply limit sent). The target is ``knowledge_tokens``, lowered
    only when the backbone's window could not hold a reply that long beside the evidence (at
    most a quarter of the window goes to the reply); the limit is at least the backbone's own
    ``max_tokens``."""
    base = int(getattr(getattr(ctx.chat, "config", None), "max_tokens", 0) or 0)
    room = max(ctx.budget.context_tokens // 4, base)
    target = max(min(ctx.config.knowledge_tokens, (room - REPLY_FIXED_TOKENS) // REPLY_PER_TARGET_TOKEN), 64)
    return target, max(base, REPLY_PER_TARGET_TOKEN * target + REPLY_FIXED_TOKENS)


async def consolidate(ctx: StageContext) -> ConsolidationResult:
    """Fold every pending entry into the summary, in as many calls as the window needs."""
    total = ConsolidationResult()
    while ctx.knowledge.pending_texts():
        part = await _consolidate_once(ctx)
        total.consolidated += part.consolidated
        total.carried += part.carried
        total.dropped += part.dropped
        total.failed = total.failed or part.failed
    total.statements = len(ctx.knowledge.summary)
    return total


async def _consolidate_once(ctx: StageContext) -> ConsolidationResult:
    kb = ctx.knowledge
    previous = list(kb.summary)
    chunk: list = []  # the pending entries this call folds in: as many as fit, oldest first
    pending = kb.pending_texts()

    shown_previous: list[SummaryFact] = []

    def render_previous(left: int) -> str:
        # At most half the room: the newest statements (most likely about what the new entries
        # add to); older ones not shown stay in the summary unchanged.
        newest = previous[::-1]
        lines = [delimit(",".join(e.evidence), e.text) for e in newest]
        shown_previous[:] = newest[: ctx.budget.fitting(lines, left // 2)]
        return "\n".join(reversed(lines[: len(shown_previous)]))

    def render_new(left: int) -> str:
        lines = [delimit(t.id, t.text) for t in pending]
        chunk[:] = pending[: ctx.budget.fitting(lines, left, at_least_one=True)]
        return "\n".join(lines[: len(chunk)])

    target, reply_limit = reply_plan(ctx)
    out, record = await ctx.ask(
        stage="accumulation", step="consolidate", template="consolidate", schema=Consolidation,
        variables={"target_tokens": target},
        fit=[("summary", render_previous), ("new_entries", render_new)], reply_tokens=reply_limit,
    )
    record.evidence_ids = [t.id for t in chunk]
    if len(chunk) < len(pending):
        record.notes.append(f"{len(pending) - len(chunk)} pending entries left for the next call (window)")
    result = ConsolidationResult(consolidated=[t.id for t in chunk])
    new_entries = [SummaryFact(text=t.text, evidence=[t.id], round=t.source.round) for t in chunk]
    if out is None:
        record.notes.append(f"consolidation failed: {len(new_entries)} new entries appended unmerged "
                            "(later stages read them raw; K may be cut to fit)")
        kb.summary = previous + new_entries
        result.failed = True
    else:
        # only ids this call showed may be cited (a guessed id of an entry not shown is not)
        shown = {i for e in shown_previous for i in e.evidence} | {t.id for t in chunk}
        known = {t.id: t for t in kb.texts if t.id in shown}
        merged: list[SummaryFact] = []
        for st in out.statements:
            text = " ".join(sanitize(st.text).split())
            ids = [i for i in dict.fromkeys(e.strip() for e in st.evidence) if i in known]
            if not text or not ids:
                result.dropped.append(text[:200])
                record.notes.append(f"statement without evidence in K dropped: {text[:120]!r}")
                continue
            if looks_like_instruction(text):
                result.dropped.append(text[:200])
                record.notes.append(f"instruction-like statement dropped: {text[:120]!r}")
                continue
            merged.append(SummaryFact(text=text, evidence=ids, round=max(known[i].source.round for i in ids)))
        cited = {i for f in merged for i in f.evidence}
        unseen = [e for e in previous if not any(e is p for p in shown_previous)]
        if unseen:
            record.notes.append(f"{len(unseen)} earlier statement(s) not shown (window): kept unchanged")
        merged = unseen + merged
        for entry in [e for e in previous if e not in unseen] + new_entries:
            if not cited.intersection(entry.evidence):  # merge, never lose: uncited evidence stays
                merged.append(entry)
                result.carried += entry.evidence
        if result.carried:
            record.notes.append(f"not cited by any statement, kept as is: {', '.join(result.carried)}")
        kb.summary = merged
    kb.consolidated.update(result.consolidated)
    result.statements = len(kb.summary)
    record.output = {"reply": record.output, "summary_statements": result.statements,
                     "carried": result.carried, "dropped": result.dropped}
    return result
