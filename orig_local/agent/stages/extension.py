"""Prompt extension (paper Eq. 9): write the final prompt P̂ from P, F^t, K^v_R and F^v.

P̂ is plain prose of at most ``max_prompt_words`` words (paper: about 300 or fewer) that cites
each reference image as "reference image N", N being its position in K^v_R, which is also the
order the images reach the generator. After the call the prompt is cleaned of markup, cut to
the word budget, and any reference it forgot to cite gets a short citing sentence, so the
generator never receives an image the prompt does not explain.

With ``prompt_extension`` off (paper Table 5, "w.o. Prompt Extension"), or when the call fails,
P̂ is assembled by the ``assemble`` template from P, F^t and F^v without a backbone call.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from orig_local.agent.stages.base import StageContext
from orig_local.agent.stages.refinement import RefinementResult
from orig_local.agent.stages.text import clean_prompt, limit_words, word_count

_CITE = re.compile(r"reference\s+image\s*#?\s*(\d+)", re.I)


class Extension(BaseModel):
    prompt: str = Field(description="the final image-generation prompt: plain prose, no markup")


class ExtensionResult(BaseModel):
    final_prompt: str
    references: list[str] = Field(default_factory=list)  # K ids, in the order the prompt numbers them
    words: int = 0
    words_before_cut: int = 0  # > words when the prompt was cut to the budget
    added_citations: list[int] = Field(default_factory=list)  # references the writer forgot to cite
    extended: bool = False  # False: assembled by template (switch off or failed call)


def _reference_view(refined: RefinementResult) -> list[dict]:
    return [{"n": i, "id": r.id, "contributes": r.contributes, "preserve": r.preserve, "ignore": r.ignore}
            for i, r in enumerate(refined.references, 1)]


async def extend_prompt(ctx: StageContext, refined: RefinementResult) -> ExtensionResult:
    variables = {
        "text_features": refined.text_features,
        "references": _reference_view(refined),
        "max_words": ctx.config.max_prompt_words,
    }
    images = [ctx.knowledge_image(r.id) for r in refined.references]
    out, record = await ctx.ask(
        stage="extension", step="write_prompt", template="extension", schema=Extension,
        variables=variables, images=images, evidence_ids=[r.id for r in refined.references],
    )
    if out is None or not clean_prompt(out.prompt):
        record.notes.append("no usable prompt: assembled by template instead")
        return assemble_prompt(ctx, refined, stage="extension")
    result = finalize(ctx, out.prompt, refined, extended=True)
    record.notes.append(f"final prompt: {result.words} words" + (
        f" (cut from {result.words_before_cut})" if result.words_before_cut > result.words else ""))
    return result


def assemble_prompt(ctx: StageContext, refined: RefinementResult, stage: str = "extension") -> ExtensionResult:
    """P̂ without a backbone call: P, then F^t, then one sentence per reference."""
    features = [f.strip().rstrip(".") for f in refined.text_features if f.strip()]
    head = ctx.prompt if ctx.prompt.rstrip().endswith((".", "!", "?")) else ctx.prompt.rstrip() + "."
    text = ctx.prompts.render("assemble", prompt=head, text_features=features,
                              references=_reference_view(refined))
    result = finalize(ctx, text, refined, extended=False)
    ctx.note(stage, "assemble", "prompt assembled by template", evidence_ids=result.references,
             output={"final_prompt": result.final_prompt})
    return result


def finalize(ctx: StageContext, text: str, refined: RefinementResult, *, extended: bool) -> ExtensionResult:
    """Clean, add missing citations, cut to the word budget (citations kept)."""
    body = clean_prompt(text)
    n_refs = len(refined.references)
    cited = {int(m) for m in _CITE.findall(body)}
    missing = [n for n in range(1, n_refs + 1) if n not in cited]
    tail = " ".join(
        f"Reference image {n} shows {refined.references[n - 1].contributes or 'the subject'}; follow its appearance."
        for n in missing
    )
    budget = max(ctx.config.max_prompt_words - word_count(tail), ctx.config.max_prompt_words // 2)
    body, before = limit_words(body, budget)
    final = clean_prompt(f"{body} {tail}") if tail else body
    return ExtensionResult(
        final_prompt=final, references=[r.id for r in refined.references], words=word_count(final),
        words_before_cut=before + word_count(tail), added_citations=missing, extended=extended,
    )
