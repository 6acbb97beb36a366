"""Sufficiency evaluation (paper Eq. 6): does K answer the sub-questions well enough to draw
the prompt, or is another round needed? A typed decision, never a substring test (the
authors' prototype tested ``"SUFFICIENT" in reply``, which "INSUFFICIENT" also matches).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest
from orig_local.agent.stages.base import StageContext
from orig_local.agent.untrusted import delimit


class Sufficiency(BaseModel):
    # reasoning and the list of gaps come before the verdict (guided decoding writes in order)
    reason: str = Field("", description="one or two sentences")
    missing: list[str] = Field(default_factory=list, max_length=5,
                               description="what is still unknown; empty when sufficient")
    sufficient: bool = Field(description="true if the knowledge is enough to draw the prompt faithfully")


class SufficiencyResult(BaseModel):
    decision: Sufficiency | None = None  # None: the call failed


def _simulate(req: SimRequest) -> dict:
    sufficient = req.options.sufficient
    ok = sufficient(req.text) if callable(sufficient) else sufficient
    return {"reason": "checked", "missing": [] if ok else ["more detail"], "sufficient": ok}


# No switch of its own: ``fixed_rounds`` (Table 4) runs the loop without it.
SPEC = StageSpec(
    name="sufficiency", doing="deciding whether the evidence suffices", order=50,
    calls=(Call("sufficiency", Sufficiency, _simulate,
                reads=frozenset({"query", "knowledge", "image_knowledge"}), example={
                    "sub_questions": ['<data id="Q1">what colour?</data>'], "knowledge": '<data id="T1">f</data>',
                    "image_knowledge": ""}),),
)


async def evaluate_sufficiency(ctx: StageContext, sub_questions: list[str]) -> SufficiencyResult:
    decision, _ = await ctx.ask(
        stage="sufficiency", step="decide", template="sufficiency", schema=Sufficiency,
        variables={"sub_questions": [delimit(f"Q{i}", q) for i, q in enumerate(sub_questions, 1)], "image_knowledge": ctx.knowledge.render_images()},
        fit=[("knowledge", ctx.knowledge_filler("sufficiency"))],
        evidence_ids=[t.id for t in ctx.knowledge.texts] + [v.id for v in ctx.knowledge.images],
    )
    if decision is not None:
        ctx.focus = list(decision.missing)  # what later cuts of K should keep
    return SufficiencyResult(decision=decision)
