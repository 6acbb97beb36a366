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

from typing import Any

from pydantic import BaseModel, Field

from orig_local.agent.budget import EstimatedTokens
from orig_local.agent.citations import MENTION, cited_numbers, renumber, strip_citations
from orig_local.agent.gate import gate_prompt
from orig_local.agent.registry import Call, StageSpec
from orig_local.agent.simrequest import SimRequest, after, blocks
from orig_local.agent.stages.base import StageContext
from orig_local.agent.stages.refinement import SAMPLE_REFERENCE, RefinementResult, feature_list
from orig_local.agent.text import bound_prompt, clean_prompt, sanitize_prompt, sentences, word_count
from orig_local.agent.trace import Stage
from orig_local.agent.untrusted import delimit, looks_like_instruction

# Citations in every form a model writes them (plural, bare, ordinal, "the provided photo"):
# agent/citations.py; _MENTION: any mention of a reference picture (a generator that gets none).
_MENTION = MENTION


class Extension(BaseModel):
    prompt: str = Field(description="the final image-generation prompt: plain prose, no markup")


class ExtensionResult(BaseModel):
    final_prompt: str
    references: list[str] = Field(default_factory=list)  # K ids, in the order the prompt numbers them
    words: int = 0
    words_before_cut: int = 0  # > words when the prompt was cut to the budget
    added_citations: list[int] = Field(default_factory=list)  # references the writer forgot to cite
    extended: bool = False  # False: assembled by template (switch off or failed call)


def _simulate(req: SimRequest) -> dict:
    """P, then every descriptor, then one citing sentence per reference."""
    section = req.after("Visual descriptors:").split("\nReference images:", 1)[0]
    features = [b.rstrip(".") + "." for _, b in blocks(section)]
    refs = " ".join(f"Reference image {n} shows {b.split(';')[0]}: keep its look." for n, (_, b) in enumerate(
        blocks(after(req.text, "\nReference images:")), 1))
    return {"prompt": f"{req.prompt.rstrip('.')}. {' '.join(features)} {refs}".strip()}


# Off (or failed): the ``assemble`` template writes P̂ without a call.
SPEC = StageSpec(
    name="extension", doing="writing the enriched prompt", switch="prompt_extension", order=70,
    calls=(Call("extension", Extension, _simulate, reads=frozenset({"feature", "image"}), example={
        "text_features": ['<data id="list">F1: teal bands</data>'], "references": [SAMPLE_REFERENCE], "max_words": 300}),),
    templates={"assemble": {"text_features": ["teal bands"], "references": [SAMPLE_REFERENCE]}},
)


def _reference_view(refined: RefinementResult) -> list[dict]:
    return [{"n": i, "id": r.id, "contributes": r.contributes, "preserve": r.preserve, "ignore": r.ignore,
             "block": delimit(f"I{i}", _describe(r))}
            for i, r in enumerate(refined.references, 1)]


def _describe(r) -> str:
    text = r.contributes or "the subject"
    if r.preserve:
        text += "; keep: " + ", ".join(r.preserve)
    if r.ignore:
        text += "; ignore: " + ", ".join(r.ignore)
    return text


async def extend_prompt(ctx: StageContext, refined: RefinementResult) -> ExtensionResult:
    variables = {
        "text_features": feature_list(refined.text_features),
        "references": _reference_view(refined),
        "max_words": ctx.config.max_prompt_words,
    }
    images = [ctx.knowledge_image(r.id) for r in refined.references]
    out, record = await ctx.ask(
        stage="extension", step="write_prompt", template="extension", schema=Extension,
        variables=variables, images=images, evidence_ids=[r.id for r in refined.references],
        # default 0: F^v already says what each shows; without F^v (oracle, refinement off or
        # failed) this is the first look at the pictures, at the size F^v would have had
        max_pixels=ctx.config.images.extension if refined.looked else ctx.config.images.visual_features,
    )
    if out is None or not clean_prompt(out.prompt):
        record.notes.append("no usable prompt: assembled by template instead")
        return assemble_prompt(ctx, refined, stage="extension")
    result = finalize(ctx, out.prompt, refined, extended=True)
    record.notes.append(f"final prompt: {result.words} words" + (
        f" (cut from {result.words_before_cut})" if result.words_before_cut > result.words else ""))
    return result


def assemble_prompt(ctx: StageContext, refined: RefinementResult, stage: Stage = "extension") -> ExtensionResult:
    """P̂ without a backbone call: P, then F^t, then one sentence per reference."""
    features = [f.strip().rstrip(".") for f in refined.text_features if f.strip()]
    head = ctx.prompt if ctx.prompt.rstrip().endswith((".", "!", "?")) else ctx.prompt.rstrip() + "."
    text = ctx.prompts.render("assemble", prompt=head, text_features=features,
                              references=_reference_view(refined))
    result = finalize(ctx, text, refined, extended=False)
    ctx.note(stage, "assemble", "prompt assembled by template", evidence_ids=result.references,
             output={"final_prompt": result.final_prompt})
    return result


def _what(ref) -> str:
    """What a reference contributes, without citation-like text of its own."""
    return strip_citations(ref.contributes).rstrip(".") or "the subject"


def finalize(ctx: StageContext, text: str, refined: RefinementResult, *, extended: bool) -> ExtensionResult:
    """Make ``text`` safe to hand to the generator, with exactly the references it cites.

    1. control/bidi characters and markup out; sentences that read like instructions out;
    2. sentences citing a reference the generator will not receive out (all mentions of
       reference images when it receives none);
    3. cut at sentence boundaries to the word, character and text-encoder token limits, room
       kept for a short citing sentence per reference the text does not cite (after the cut);
    4. references are renumbered in the order the text cites them, and only those passed."""
    cfg = ctx.config
    refs = list(refined.references)
    body, removed = _screen(sanitize_prompt(text), refs)
    max_tokens = cfg.max_prompt_tokens or ctx.prompt_max_tokens
    counter = ctx.prompt_counter or EstimatedTokens()
    words_before = word_count(body)
    candidate, cut, uncited = _bound_with_tail(body, refs, cfg.max_prompt_words, cfg.max_prompt_chars,
                                               max_tokens, counter)
    text_out = f"{candidate} {_tail_for(refs, uncited)}".strip() if uncited else candidate
    text_out, gated = gate_prompt(text_out, ctx.prompt)  # the last gate, after every step that adds text
    removed += gated
    # Renumber: the k-th distinct reference cited becomes reference image k, in that order.
    order = list(dict.fromkeys(cited_numbers(text_out, len(refs))))
    mapping = {old: new for new, old in enumerate(order, 1)}
    final = renumber(text_out, len(refs), mapping) if order else text_out
    passed = [refs[k - 1] for k in order]
    dropped = [r.id for i, r in enumerate(refs, 1) if i not in mapping]
    if removed or dropped or cut:
        ctx.note("extension", "finalize", "final prompt bounded", evidence_ids=dropped, output={
            "removed_sentences": [s_[:200] for s_ in removed], "cut": cut, "references_dropped": dropped,
            "limits": {"words": cfg.max_prompt_words, "chars": cfg.max_prompt_chars, "tokens": max_tokens,
                       "token_counter": counter.label}})
    refined.references = passed  # F^v of exactly the references passed, in their new order
    return ExtensionResult(
        final_prompt=final, references=[r.id for r in passed], words=word_count(final),
        words_before_cut=max(words_before, word_count(final)),
        added_citations=[mapping[k] for k in uncited if k in mapping], extended=extended,
    )


def _screen(body: str, refs: list) -> tuple[str, list[str]]:
    """``body`` without the sentences that read like instructions or cite a reference the
    generator will not receive (any mention of reference images when there are none), and
    the sentences removed (steps 1-2 of :func:`finalize`)."""
    removed: list[str] = []
    kept_sentences: list[str] = []
    for sentence in sentences(body):
        numbers = cited_numbers(sentence, len(refs))
        bad = looks_like_instruction(sentence) or any(not 1 <= k <= len(refs) for k in numbers) or (
            not refs and _MENTION.search(sentence))
        (removed if bad else kept_sentences).append(sentence)
    return " ".join(kept_sentences), removed


def _tail_for(refs: list, numbers: list[int]) -> str:
    """A short citing sentence per reference in ``numbers`` (1-based)."""
    return " ".join(f"Reference image {k} shows {_what(refs[k - 1])}; follow its appearance." for k in numbers)


def _bound_with_tail(body: str, refs: list, max_words: int, max_chars: int, max_tokens: int | None,
                     counter: Any) -> tuple[str, bool, list[int]]:
    """Cut ``body`` to the limits less the room a citing tail needs for the references the
    cut body does not cite (step 3 of :func:`finalize`): the cut body, whether it was cut, and
    the references the tail explains. A tail may take at most half of any limit; references
    beyond that get no sentence (and are not passed)."""
    uncited: list[int] = []  # references the body does not cite: explained by a short tail
    unexplained: set[int] = set()  # references for which there is no room: not passed
    cut = False
    candidate = body
    for _ in range(2 * len(refs) + 2):  # terminates: uncited only grows, unexplained only grows
        tail = _tail_for(refs, uncited)
        extra = 1 if tail else 0
        limits = (max_words - word_count(tail), max_chars - len(tail) - extra,
                  None if max_tokens is None else max_tokens - counter.count(tail) - extra)
        if uncited and (limits[0] < max_words // 2 or limits[1] < max_chars // 2
                        or (max_tokens is not None and limits[2] is not None and limits[2] < max_tokens // 2)):
            unexplained.add(uncited.pop())  # the tail may take at most half the budget
            continue
        candidate, cut = bound_prompt(body, limits[0], limits[1], limits[2], counter)
        cited = set(cited_numbers(candidate, len(refs)))
        now = [k for k in range(1, len(refs) + 1) if k not in cited and k not in unexplained]
        if set(now) <= set(uncited):
            break
        uncited = sorted(set(uncited) | set(now))
    return candidate, cut, uncited
