"""Bootstrapping retrieval (paper §3.2.1): before planning, look up the prompt's rare or
ambiguous entities so that the planner does not misread them.

Light on purpose (paper Table 6: ~1.2 searches, ~62 input tokens): one short backbone call
names the entities and 1-3 queries; each query's top snippets (title + snippet, no page read)
go straight into K with provenance ``origin="bootstrap"``, round 0.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from orig_local.agent.knowledge import Source
from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest
from orig_local.agent.stages.base import StageContext
from orig_local.agent.stages.search import search_snippets
from orig_local.agent.untrusted import drop_instructions, sanitize


class Entity(BaseModel):
    name: str
    why: str = Field("", description="why it may be rare, new or ambiguous")


class BootstrapPlan(BaseModel):
    # required: ``{}`` is an invalid reply, not "no entities"
    entities: list[Entity] = Field(max_length=5)
    queries: list[str] = Field(max_length=5, description="1-3 short web search queries")


class BootstrapResult(BaseModel):
    plan: BootstrapPlan | None = None
    queries: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)  # ids of the K entries it added
    search_failed: bool = False  # every search failed (service trouble, not "no results")


async def bootstrap(ctx: StageContext) -> BootstrapResult:
    cfg = ctx.config
    plan, record = await ctx.ask(
        stage="bootstrap", step="entities", template="bootstrap", schema=BootstrapPlan,
        variables={"max_queries": cfg.bootstrap_max_queries},
    )
    if plan is None:
        queries = [ctx.prompt]
        record.notes.append("no usable plan; searching the prompt itself")
    else:
        queries = _clean(plan.queries)[: cfg.bootstrap_max_queries]
    result = BootstrapResult(plan=plan, queries=queries)
    if not queries:
        return result

    for q in queries:
        ctx.asked_queries.add(q.lower().strip())
    outcomes = await asyncio.gather(*(search_snippets(ctx, q, "bootstrap") for q in queries))
    for query, (hits, _failed) in zip(queries, outcomes, strict=True):
        for hit in hits[: cfg.bootstrap_snippets_per_query]:
            text = f"{hit.title}: {hit.snippet}" if hit.snippet else hit.title
            text, injected = drop_instructions(sanitize(text))  # snippets enter K unfiltered
            if injected:
                ctx.note("bootstrap", "snippet_filter", f"instruction-like text dropped from a snippet of {hit.url}")
            if not text:
                continue
            item = ctx.knowledge.add_text(
                text, Source(url=hit.url, title=hit.title, query=query, round=0, origin="bootstrap"),
                kind="snippet",
            )
            if item:
                result.added.append(item.id)
    result.search_failed = all(failed for _, failed in outcomes)
    return result


def _simulate(req: SimRequest) -> dict:
    return {"entities": [{"name": req.prompt, "why": "specific"}], "queries": [req.prompt]}


SPEC = StageSpec(
    name="bootstrap", doing="bootstrap search on the prompt's entities", switch="bootstrap", order=10,
    calls=(Call("bootstrap", BootstrapPlan, _simulate, example={"max_queries": 3}),),  # reads the prompt only
)


def _clean(queries: list[str]) -> list[str]:
    """Strip, drop empties and repeats (order kept)."""
    return list(dict.fromkeys(q.strip() for q in queries if q and q.strip()))
