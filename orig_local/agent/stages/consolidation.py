"""Knowledge consolidation (paper §3.2.1, Table 6: what accumulation hands on stays compact).

After each round's coarse filtering, the statements of K not yet consolidated are merged into
the running summary by one backbone call: repeats merged, each statement short and
self-contained, every statement citing the K entries (``T3``) it rests on. Later stages
(planning, sufficiency, the filters, refinement) read this summary instead of K's raw entries.

The call may merge but never lose evidence. Coverage is checked per evidence id
(:mod:`orig_local.agent.support`): an entry the call was shown that no kept statement *covers*
(keeps most of its details) is carried over as is, even when a statement cites its id.
Statements citing nothing in K, reading like instructions, adding detail their evidence lacks
(unsupported) or citing many ids while keeping the details of few (vague) are dropped; all of it
is traced. If the call fails the new entries are appended unmerged. Size is bounded where K is rendered (``StageContext.render_knowledge``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from orig_local.agent.knowledge import SummaryFact
from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest, words
from orig_local.agent.stages.base import LIST_TOKENS, StageContext
from orig_local.agent.support import covers, detail_words, subject_words, unsupported, vague
from orig_local.agent.untrusted import list_block, list_line, looks_like_instruction, sanitize

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD_AT_END = re.compile(r"[A-Za-z0-9]+$")


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
    unsupported: list[str] = Field(default_factory=list)  # statements adding detail their evidence lacks
    vague: list[str] = Field(default_factory=list)  # statements citing many ids, covering few
    failed: bool = False


def _simulate(req: SimRequest) -> dict:
    entries = [([e.strip() for e in i.split(",")], b) for i, b in req.blocks()]
    return {"reason": "merged repeats", "statements": [
        {"evidence": ids, "text": t} for ids, t in _merge_statements(entries)]}


# Part of accumulation (paper §3.2.1), in the trace under that name; its own switch.
SPEC = StageSpec(
    name="accumulation", doing="filtering evidence into the knowledge base", switch="consolidate", order=45,
    calls=(Call("consolidate", Consolidation, _simulate, reads=frozenset({"knowledge"}), example={
        "target_tokens": 800, "summary": "", "new_entries": '<data id="list">T1: f</data>'}),),
)

_TITLE_PREFIX = re.compile(r"^(?:[^.:]{1,80}?:\s+)+(?=[A-Z0-9])")


def _merge_statements(entries: list[tuple[list[str], str]]) -> list[tuple[list[str], str]]:
    """The simulated reply: deduplicate statements the way a careful model would,
    deterministically. Entries are split into sentences (a snippet's "Title: " prefix dropped);
    a sentence cut off mid-way (a search snippet's end) is left out; a sentence whose words
    another sentence already says is folded into it, its evidence ids moving along."""
    parts: list[tuple[list[str], str]] = []
    fragments: list[tuple[list[str], str]] = []
    for ids, text in entries:
        for sentence in re.split(r"(?<=[.!?])\s+", _TITLE_PREFIX.sub("", text.strip())):
            sentence = sentence.strip()
            if len(sentence) > 10:
                (parts if sentence[-1] in ".!?" else fragments).append((list(ids), sentence))
    for ids, fragment in fragments:  # a cut-off snippet end: folded into what says it in full
        fw = words(fragment)
        best = max(range(len(parts)), key=lambda j: len(fw & words(parts[j][1])), default=None)
        if best is not None and len(fw & words(parts[best][1])) >= 0.6 * len(fw):
            parts[best] = (list(dict.fromkeys(parts[best][0] + ids)), parts[best][1])
        else:
            parts.append((list(ids), fragment.rsplit(" ", 1)[0] + "."))
    said = [words(t) for _, t in parts]
    alive = list(range(len(parts)))
    for i in sorted(range(len(parts)), key=lambda i: (len(said[i]), i)):  # shortest first
        others = [j for j in alive if j != i and said[j]]
        if not said[i] or not others:
            continue
        best = max(others, key=lambda j: (len(said[i] & said[j]), -j))
        if len(said[i] & said[best]) >= 0.85 * len(said[i]):
            alive.remove(i)
            # the same statement twice: keep the plainer (shorter) wording
            same = len(said[i] & said[best]) >= 0.85 * len(said[best])
            text = parts[i][1] if same and len(parts[i][1]) < len(parts[best][1]) else parts[best][1]
            parts[best] = (list(dict.fromkeys(parts[best][0] + parts[i][0])), text)
    return [parts[i] for i in sorted(alive)]


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
    """Fold every pending entry into the summary, in as many calls as the window needs; while K
    is under ``consolidate_min_tokens``, without a call (:func:`_fold`)."""
    total = ConsolidationResult()
    kb = ctx.knowledge
    pending = kb.pending_texts()
    size = sum(ctx.budget.count(e.text) for e in kb.text_entries())
    if pending and size < ctx.config.consolidate_min_tokens:
        return _fold(ctx, pending, size)
    while ctx.knowledge.pending_texts():
        part = await _consolidate_once(ctx)
        total.consolidated += part.consolidated
        total.carried += part.carried
        total.dropped += part.dropped
        total.unsupported += part.unsupported
        total.vague += part.vague
        total.failed = total.failed or part.failed
    total.statements = len(ctx.knowledge.summary)
    return total


def _fold(ctx: StageContext, pending: list, size: int) -> ConsolidationResult:
    """K is small: too little to compact for a merge call to pay for itself. The new entries join
    the summary as they are, less their repeats: a sentence whose every detail word another
    entry or statement holds is left out, and the one holding it cites this entry too (a
    snippet repeating a page's fact; a snippet cut mid-sentence). Nothing is lost."""
    kb = ctx.knowledge
    new = [SummaryFact(text=t.text, evidence=[t.id], round=t.source.round) for t in pending]
    facts = list(kb.summary) + new
    words = [detail_words(f.text) for f in facts]
    gone: set[int] = set()
    folded: list[str] = []
    for i in sorted(range(len(kb.summary), len(facts)), key=lambda i: len(facts[i].text)):  # shortest first
        kept = []
        for sentence in (x for x in _SENTENCE.split(facts[i].text) if x.strip()):
            sw, cut = detail_words(sentence), _cut_word(sentence)
            host = next((j for j in range(len(facts)) if j != i and j not in gone and _within(sw, cut, words[j])),
                        None)
            if host is None:
                kept.append(sentence)
            elif facts[i].evidence[0] not in facts[host].evidence:
                facts[host].evidence.append(facts[i].evidence[0])
                facts[host].round = max(facts[host].round, facts[i].round)
        if len(kept) < len(_SENTENCE.split(facts[i].text.strip())):
            folded.append(facts[i].evidence[0])
            facts[i].text = " ".join(kept)
            words[i] = detail_words(facts[i].text)
            if not kept:
                gone.add(i)
    kb.summary = [f for i, f in enumerate(facts) if i not in gone]
    kb.consolidated.update(t.id for t in pending)
    ctx.note("accumulation", "consolidation_deferred",
             f"K holds ~{size} tokens (< {ctx.config.consolidate_min_tokens}): no merge call; {len(pending)} new "
             f"entries joined the summary, {len(folded)} less sentences another entry holds in full",
             evidence_ids=[t.id for t in pending],
             output={"knowledge_tokens": size, "min_tokens": ctx.config.consolidate_min_tokens, "folded": folded})
    return ConsolidationResult(consolidated=[t.id for t in pending], statements=len(kb.summary))


def _cut_word(sentence: str) -> str | None:
    """The last word of a sentence cut short (a search snippet's tail, no closing stop), lower
    case; None for a complete sentence."""
    end = sentence.rstrip()
    if end[-1:] in ".!?":  # also "": nothing to cut
        return None
    tail = _WORD_AT_END.search(end)
    return None if tail is None else tail.group(0).lower()


def _within(words: set[str], cut: str | None, host: set[str]) -> bool:
    """Every detail word of a sentence (``words``) is in ``host``; a sentence cut short may end
    in a cut word (``cut``, :func:`_cut_word`), which counts when a host word begins with it.
    Called for every sentence against every entry: the common answers come from set tests."""
    if not words:
        return False
    if words <= host:
        return True
    if cut is None:
        return False
    missing = words - host
    if len(missing) > 1:
        return False
    stem = next(iter(missing))
    return cut.startswith(stem) and any(w.startswith(stem) for w in host)


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
        lines = [list_line(",".join(e.evidence), e.text) for e in newest]
        shown_previous[:] = newest[: ctx.budget.fitting(lines, left // 2 - LIST_TOKENS)]
        return list_block(list(reversed(lines[: len(shown_previous)])))

    def render_new(left: int) -> str:
        lines = [list_line(t.id, t.text) for t in pending]
        chunk[:] = pending[: ctx.budget.fitting(lines, left - LIST_TOKENS, at_least_one=True)]
        return list_block(lines[: len(chunk)])

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
        kb.summary = _merge(ctx, out, previous, shown_previous, chunk, result, record.notes)
    kb.consolidated.update(result.consolidated)
    result.statements = len(kb.summary)
    record.output = {"reply": record.output, "summary_statements": result.statements,
                     "carried": result.carried, "dropped": result.dropped,
                     "unsupported": result.unsupported, "vague": result.vague}
    return result


def _merge(ctx: StageContext, out: Consolidation, previous: list[SummaryFact], shown_previous: list[SummaryFact],
           chunk: list, result: ConsolidationResult, notes: list[str]) -> list[SummaryFact]:
    """The new summary from the reply, losing nothing: a statement is kept only if it is
    supported by the entries it cites and is not vague; every entry the call was shown that no
    kept statement covers (per evidence id, agent/support.py) is carried over as is."""
    # only ids this call showed may be cited (a guessed id of an entry not shown is not)
    shown_ids = list(dict.fromkeys([i for e in shown_previous for i in e.evidence] + [t.id for t in chunk]))
    known = {t.id: t for t in ctx.knowledge.texts if t.id in set(shown_ids)}
    subject = subject_words(ctx.prompt)
    words_of = {i: detail_words(t.text, subject) for i, t in known.items()}
    merged: list[SummaryFact] = []
    said: dict[str, set[str]] = {}  # id -> detail words of the kept statements citing it
    for st in out.statements:
        text = " ".join(sanitize(st.text).split())
        ids = [i for i in dict.fromkeys(e.strip() for e in st.evidence) if i in known]
        words = detail_words(text, subject)
        why, bucket = None, result.dropped
        if not text or not ids:
            why = "statement without evidence in K dropped"
        elif looks_like_instruction(text):
            why = "instruction-like statement dropped"
        elif vague(words, [words_of[i] for i in ids]):
            why, bucket = f"vague: cites {len(ids)} ids, keeps the details of few; dropped", result.vague
        elif missing := unsupported(words, set().union(*(words_of[i] for i in ids))):
            why, bucket = f"unsupported by {','.join(ids)} (absent there: {' '.join(missing[:8])}); dropped", result.unsupported
        if why:
            bucket.append(text[:200])
            notes.append(f"{why}: {text[:120]!r}")
            continue
        merged.append(SummaryFact(text=text, evidence=ids, round=max(known[i].source.round for i in ids)))
        for i in ids:  # an entry split over several statements is covered by their union
            said.setdefault(i, set()).update(words)
    covered = {i for i, words in said.items() if covers(words, words_of[i])}
    unseen = [e for e in previous if not any(e is p for p in shown_previous)]
    if unseen:
        notes.append(f"{len(unseen)} earlier statement(s) not shown (window): kept unchanged")
    # merge, never lose: an earlier statement none of whose entries is covered stays as it was;
    # any other entry no kept statement stands for stays as it is (its own text, its own id)
    for e in shown_previous[::-1]:
        if not covered.intersection(e.evidence):
            merged.append(e)
            covered.update(e.evidence)
            result.carried += e.evidence
    for i in shown_ids:
        if i not in covered and i in known:
            t = known[i]
            merged.append(SummaryFact(text=t.text, evidence=[i], round=t.source.round))
            result.carried.append(i)
    if result.carried:
        notes.append(f"not covered by any statement, kept as is: {', '.join(result.carried)}")
    return unseen + merged
