"""Prompt Enhanced baseline (paper Table 3): the backbone expands P from its own knowledge,
with no retrieval. If the call fails, P is used unchanged and the trace says so."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orig_local.agent.budget import EstimatedTokens
from orig_local.agent.gate import gate_prompt
from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest
from orig_local.agent.stages.base import StageContext
from orig_local.agent.text import bound_prompt, has_content, sanitize_prompt, word_count


class EnhancedPrompt(BaseModel):
    prompt: str = Field(description="the expanded image-generation prompt: plain prose, no markup")


class EnhanceResult(BaseModel):
    final_prompt: str
    enhanced: bool  # False: the call failed and P is used as is
    words_before_cut: int = 0


def _simulate(req: SimRequest) -> dict:
    return {"prompt": f"{req.prompt}, rendered in rich, accurate detail."}


# The Prompt Enhanced condition's only stage: it reads the prompt, no evidence.
SPEC = StageSpec(name="enhance", doing="enhancing the prompt", order=80,
                 calls=(Call("enhance", EnhancedPrompt, _simulate, example={"max_words": 300}),))


async def enhance_prompt(ctx: StageContext) -> EnhanceResult:
    out, record = await ctx.ask(
        stage="enhance", step="expand", template="enhance", schema=EnhancedPrompt,
        variables={"max_words": ctx.config.max_prompt_words},
    )
    text = gate_prompt(sanitize_prompt(out.prompt), ctx.prompt)[0] if out is not None else ""
    if out is not None and not has_content(text):
        # a reply that cleans to nothing is a failed call, not an enhanced prompt equal to P
        record.error = record.error or f"EmptyPrompt: the reply has no prompt text after cleaning: {out.prompt[:120]!r}"
    if not has_content(text):
        record.notes.append("no usable prompt: the original prompt is used")
        return EnhanceResult(final_prompt=ctx.prompt, enhanced=False)
    cfg = ctx.config
    final, _ = bound_prompt(text, cfg.max_prompt_words, cfg.max_prompt_chars, cfg.max_prompt_tokens or ctx.prompt_max_tokens,
                            ctx.prompt_counter or EstimatedTokens())
    return EnhanceResult(final_prompt=final, enhanced=True, words_before_cut=word_count(text))
