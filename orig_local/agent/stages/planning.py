"""Query planning (paper Eq. 1): compare the prompt P with K, name what is missing as
sub-questions Q, map each to a modality, and write text queries S^t and image queries S^v.

The backbone proposes; this stage enforces the rules: only the condition's modalities
(orig_txt: text, orig_img: images), no query already searched in this run, at most
``max_queries_per_round`` in total (paper App. A: one to five). Whatever it drops is listed in
the result and the trace.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest, blocks
from orig_local.agent.stages.base import StageContext
from orig_local.agent.untrusted import delimit


class SubQuestion(BaseModel):
    question: str
    reason: str = ""  # before the modality: reason first, then decide
    modality: Literal["text", "image"] = Field(description="text for facts and relations, image for appearance")


class Plan(BaseModel):
    # Every field required: ``{}`` is not a plan (it would stop the loop as "no new evidence"
    # and pass as success). An explicit empty query list still means "nothing left to search".
    analysis: str = Field(description="what the prompt needs that the knowledge does not cover yet")
    sub_questions: list[SubQuestion] = Field(max_length=8)
    text_queries: list[str] = Field(max_length=5)
    image_queries: list[str] = Field(max_length=5)


class PlanningResult(BaseModel):
    plan: Plan | None = None
    text_queries: list[str] = Field(default_factory=list)
    image_queries: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)

    @property
    def queries(self) -> int:
        return len(self.text_queries) + len(self.image_queries)


async def plan_queries(ctx: StageContext, missing: list[str]) -> PlanningResult:
    cfg = ctx.config
    plan, record = await ctx.ask(
        stage="planning", step="plan", template="planning", schema=Plan,
        variables={
            "modalities": list(cfg.modalities),
            "max_queries": cfg.max_queries_per_round,
            "image_knowledge": ctx.knowledge.render_images(),
            # the gaps were written by the backbone from retrieved evidence: data, not orders
            "missing": "\n".join(delimit(f"M{i}", m) for i, m in enumerate(missing, 1)),
            # queries were written from web evidence: data blocks like the evidence itself
            "previous_queries": [delimit(f"S{i}", q) for i, q in enumerate(sorted(ctx.asked_queries), 1)],
        },
        fit=[("knowledge", ctx.knowledge_filler("planning"))],
        evidence_ids=[t.id for t in ctx.knowledge.texts] + [v.id for v in ctx.knowledge.images],
    )
    result = PlanningResult(plan=plan)
    if plan is None:
        return result

    pools = {"text": plan.text_queries, "image": plan.image_queries}
    chosen: dict[str, list[str]] = {"text": [], "image": []}
    seen = set(ctx.asked_queries)
    # Interleave text and image queries so the cap does not starve one modality.
    for i in range(max(len(plan.text_queries), len(plan.image_queries))):
        for modality in ("text", "image"):
            if i >= len(pools[modality]):
                continue
            q = " ".join(pools[modality][i].split())
            key = q.lower()
            if not q:
                continue
            if modality not in cfg.modalities:
                result.dropped.append(f"{modality}: {q} (modality off for {cfg.condition})")
            elif key in seen:
                result.dropped.append(f"{modality}: {q} (already searched)")
            elif len(chosen["text"]) + len(chosen["image"]) >= cfg.max_queries_per_round:
                result.dropped.append(f"{modality}: {q} (over {cfg.max_queries_per_round} per round)")
            else:
                seen.add(key)
                chosen[modality].append(q)
    result.text_queries, result.image_queries = chosen["text"], chosen["image"]
    if result.dropped:
        record.notes.append("dropped: " + "; ".join(result.dropped))
    return result


def _simulate(req: SimRequest) -> dict:
    """Ask for the prompt plus an aspect word not searched yet: one text, one image query."""
    searched_line = req.after("Already searched: ").split("\n")[0]
    searched = {q.strip().lower() for _, q in blocks(searched_line)}
    prompt = req.prompt
    options = [prompt + s for s in ("", " details", " appearance", " colours", " history", " shape")]
    fresh = [q for q in options if q.lower() not in searched]
    tq, iq = fresh[:1], fresh[1:2] if req.options.image_queries else []
    return {"analysis": "need appearance", "sub_questions": [
        {"question": f"What does {prompt} look like?", "modality": "image", "reason": "appearance"}],
        "text_queries": tq, "image_queries": iq}


SPEC = StageSpec(
    name="planning", doing="planning sub-questions and queries", order=20,
    calls=(Call("planning", Plan, _simulate,
                reads=frozenset({"knowledge", "image_knowledge", "missing", "searched"}), example={
                    "modalities": ["text", "image"], "max_queries": 5, "knowledge": '<data id="T1">f</data>',
                    "image_knowledge": '<data id="V1">a tower</data>', "missing": '<data id="M1">the lantern</data>',
                    "previous_queries": ['<data id="S1">q</data>']}),),
)


# Aspects appended to the prompt when neither the planner nor its sub-questions give a new query.
_ASPECTS = ("appearance", "details", "photo", "close-up", "colours", "history", "materials", "location")


def fallback_queries(ctx: StageContext, result: PlanningResult, missing: list[str]) -> None:
    """The planner proposed no query that was not searched yet. The paper's loop searches again
    until its round limit (and ``fixed_rounds`` promises N rounds), so search, per modality,
    the first not yet searched of: the plan's sub-questions, what sufficiency found missing,
    the prompt with an aspect word. Traced."""
    plan = result.plan
    candidates = [q.question for q in (plan.sub_questions if plan else [])] + list(missing)
    candidates += [f"{ctx.prompt} {aspect}" for aspect in _ASPECTS]
    seen = set(ctx.asked_queries)
    chosen = {"text": result.text_queries, "image": result.image_queries}
    for modality in ctx.config.modalities:
        for q in (" ".join(c.split()) for c in candidates):
            if q and q.lower() not in seen:
                seen.add(q.lower())
                chosen[modality].append(q)
                break
    ctx.note("planning", "fallback_queries", "the planner proposed no new query: searching "
             + "; ".join(f"{m}: {', '.join(qs)}" for m, qs in chosen.items() if qs),
             output={"text_queries": result.text_queries, "image_queries": result.image_queries})
