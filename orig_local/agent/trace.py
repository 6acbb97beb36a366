"""The run trace: one typed record per backbone call, search, read or fetch.

``trace.json`` holds the records plus totals per stage (calls, input/output tokens, seconds,
searches, reads, fetches, failures), which is what the paper's cost tables (4, 6, 7) need.
Seconds are summed call latencies, not wall time (a round's calls overlap); the run's wall time
is ``wall_s``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, field_validator

# A stage's trace name: one a stage module declares (orig_local.agent.registry), checked when a
# record is made or loaded.
Stage = str


class StageRecord(BaseModel):
    stage: Stage
    step: str  # finer label: plan, search_text, select_pages, read_page, text_filter, ...
    round: int = 0  # 0 = before the loop (bootstrap) ; 1.. loop rounds ; construction = last round
    template: str | None = None
    messages_sha256: str | None = None
    messages: list[dict[str, Any]] | None = None  # canonical messages (images as hashes)
    output: Any = None  # parsed output (JSON) or a small summary for searches
    evidence_ids: list[str] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # of prompt_tokens, those a prefix cache could reuse (estimate: orig_local.agent.economy)
    cacheable_tokens: int = 0
    cache_hit_tokens: int | None = None  # of prompt_tokens, served from the server's prefix cache (None: not said)
    latency_s: float = 0.0
    started_s: float = 0.0  # since the run began
    attempts: int = 0  # backbone attempts (1 + structured-output retries)
    invalid_replies: list[str] = Field(default_factory=list)
    cached: bool = False
    finish_reason: str | None = None  # of the last backbone reply: "stop", "length" (cut at max_tokens)
    truncated: bool = False  # finish_reason == "length"
    searches_text: int = 0
    searches_image: int = 0
    page_reads: int = 0
    image_fetches: int = 0
    failures: list[dict[str, Any]] = Field(default_factory=list)  # search/read/fetch failures
    error: str | None = None
    notes: list[str] = Field(default_factory=list)

    @field_validator("stage", mode="before")
    @classmethod
    def _known_stage(cls, value: Any) -> Any:
        canonical_stage, names = _stage_names()
        value = canonical_stage(value) if isinstance(value, str) else value  # traces written before a rename
        if value not in names:
            raise ValueError(f"unknown stage {value!r}; stages: {', '.join(names)}")
        return value

    @property
    def did_work(self) -> bool:
        return bool(self.attempts or self.searches_text or self.searches_image or self.page_reads
                    or self.image_fetches or self.stage == "generation")


@functools.cache
def _stage_names() -> tuple[Callable[[str], str], tuple[str, ...]]:
    """(canonical_stage, every stage name), looked up once: a record is made for every call,
    search and read (the registry imports this module, so it is imported here, late)."""
    from orig_local.agent.registry import canonical_stage, stage_names

    return canonical_stage, stage_names()


class StageTotals(BaseModel):
    calls: int = 0  # backbone calls (cache hits included; see cached)
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cacheable_tokens: int = 0  # estimate; new = prompt_tokens - cacheable_tokens
    cache_hit_tokens: int | None = None  # measured by the server; None when no reply said
    seconds: float = 0.0
    searches_text: int = 0
    searches_image: int = 0
    page_reads: int = 0
    image_fetches: int = 0
    failures: int = 0
    errors: int = 0
    invalid_replies: int = 0


Listener = Callable[[str, int, "StageRecord | None"], None]


class Trace:
    """Collects records while a run is in flight (appends from concurrent tasks are safe: one
    event loop, no awaits inside :meth:`add`)."""

    def __init__(self, labels: list[str] | None = None, tokens_estimated: bool = False,
                 listener: Listener | None = None) -> None:
        self.records: list[StageRecord] = []
        # Live progress (``orig generate`` prints stage and round as they happen): called with
        # (stage, round, record) on every add, and with record None when a long step starts.
        self.listener = listener
        self._t0 = time.perf_counter()
        # Stand-in labels (orig_local.labels): "SIMULATED backbone ...", "tiny random-weight
        # models ...". A stand-in's output must never pass for a model's.
        self.labels: list[str] = list(labels or [])
        # The simulated/scripted backbones count words, not tokens.
        self.tokens_estimated = tokens_estimated

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def add(self, record: StageRecord) -> StageRecord:
        self.records.append(record)
        if self.listener is not None:
            self.listener(record.stage, record.round, record)
        return record

    def starting(self, stage: str, round: int) -> None:
        """Tell the listener a step that records only when it ends (generation) has begun."""
        if self.listener is not None:
            self.listener(stage, round, None)

    def _ordered(self, active: bool) -> list[StageRecord]:
        records = sorted(self.records, key=lambda r: r.started_s)
        return [r for r in records if r.did_work] if active else records

    def stages(self, active: bool = True) -> list[str]:
        """Stages in the order they first appear. ``active``: only records that did work (a
        backbone call, search, read or fetch), not notes about skipped steps."""
        seen: list[str] = []
        for r in self._ordered(active):
            if r.stage not in seen:
                seen.append(r.stage)
        return seen

    def steps(self, active: bool = True) -> list[tuple[str, int]]:
        """(stage, round) pairs in start order, consecutive repeats merged."""
        out: list[tuple[str, int]] = []
        for r in self._ordered(active):
            if not out or out[-1] != (r.stage, r.round):
                out.append((r.stage, r.round))
        return out

    def errors(self) -> list[str]:
        return [f"{r.stage}/{r.step}: {r.error}" for r in self.records if r.error]

    def totals(self) -> dict[str, StageTotals]:
        out: dict[str, StageTotals] = {}
        for r in self.records:
            t = out.setdefault(r.stage, StageTotals())
            t.calls += 1 if r.attempts else 0
            t.cached += 1 if r.cached else 0
            t.prompt_tokens += r.prompt_tokens
            t.completion_tokens += r.completion_tokens
            t.cacheable_tokens += min(r.cacheable_tokens, r.prompt_tokens) if r.prompt_tokens else r.cacheable_tokens
            if r.cache_hit_tokens is not None:
                t.cache_hit_tokens = (t.cache_hit_tokens or 0) + r.cache_hit_tokens
            t.seconds += r.latency_s
            t.searches_text += r.searches_text
            t.searches_image += r.searches_image
            t.page_reads += r.page_reads
            t.image_fetches += r.image_fetches
            t.failures += len(r.failures)
            t.errors += 1 if r.error else 0
            t.invalid_replies += len(r.invalid_replies)
        return out

    def grand_total(self) -> StageTotals:
        total = StageTotals()
        for t in self.totals().values():
            for name in StageTotals.model_fields:
                a, b = getattr(total, name), getattr(t, name)
                setattr(total, name, b if a is None else a if b is None else a + b)  # None: unknown
        return total

    def to_json(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "simulated": any(label.startswith("SIMULATED") for label in self.labels),
            "tokens_estimated": self.tokens_estimated,
            "totals": {k: v.model_dump() for k, v in self.totals().items()},
            "total": self.grand_total().model_dump(),
            "records": [r.model_dump(mode="json") for r in self.records],
        }


def from_json(data: dict[str, Any]) -> Trace:
    """A trace as :meth:`Trace.to_json` wrote it (``trace.json``'s ``trace``), records validated
    again: stages renamed since (``retrieval`` -> ``search``) load under today's names, and
    :meth:`Trace.totals` recomputes from the records."""
    trace = Trace(labels=list(data.get("labels") or []), tokens_estimated=bool(data.get("tokens_estimated")))
    trace.records = [StageRecord.model_validate(r) for r in data.get("records") or []]
    return trace


def messages_digest(canonical: list[dict[str, Any]]) -> str:
    blob = json.dumps(canonical, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()
