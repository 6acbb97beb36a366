"""Config section for the ORIG agent: which condition runs, the ablation switches, loop bounds.

Every condition and ablation of the paper goes through the same code path
(:meth:`orig_local.agent.Agent.run`); these fields only decide which stages run.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from orig_local.conditions import ConditionSpec, condition
from orig_local.configbase import StrictModel


class StageImages(StrictModel):
    """How many pixels of each picture a stage's request carries (ours, issue 22: the same
    evidence at a fraction of the tokens). A value is a pixel bound, applied as Qwen2.5-VL's
    ``max_pixels`` (the picture is downscaled, aspect kept, before it is sent); ``None`` = the
    backbone's own bound (the full picture it would see); ``0`` = no pixels: the stage reads what
    an earlier stage said about the picture (the image filter's description, F^v) instead.
    At 1024x768 a full picture is ~1,000 Qwen2.5-VL tokens; 301,056 px 352; 75,264 px 88."""

    # Keep/reject needs the gist (entity, logo, collage, wrong version), not the detail:
    # 75,264 px (96 tokens' worth; 308x224 from 1024x768, CLIP's own input scale). 100,352
    # before (~119 tokens a picture); issue 22's 8,000 tokens a round at one round needed it.
    image_filter: int | None = Field(75_264, ge=3136)  # no 0: the filter must see the picture
    # Choosing references works from the filter's descriptions of each kept picture.
    text_features: int | None = Field(0, ge=0)
    # What the generator should copy and ignore: the one real look at each reference. 301,056 px
    # (384 tokens' worth; 616x448 from 1024x768, 352 tokens) keeps what F^v names - the
    # subject's outline, parts, colours, materials, and features down to ~2.5 % of the width
    # (one 14-px patch of the vision encoder) - at a third of the full picture's tokens.
    # 401,408 px before (728x532, 494 tokens: features down to ~2 %).
    visual_features: int | None = Field(301_056, ge=0)
    # Writes P̂ (text only) from F^t and F^v, which already say what each reference shows.
    extension: int | None = Field(0, ge=0)


class AgentConfig(StrictModel):
    # Paper Table 3 conditions: direct = raw prompt; prompt_enhanced = backbone expands from its
    # own knowledge; oracle = gold references of a benchmark item; orig = text + image retrieval;
    # orig_txt / orig_img = one modality only.
    condition: str = "orig"  # a name of orig_local.conditions.CONDITIONS (checked when set)

    # --- ablation switches (paper Table 5); each True in ORIG
    bootstrap: bool = True  # light text search on the prompt's rare entities before the loop
    accumulation_filter: bool = True  # coarse filtering of text, then images, into K
    refinement: bool = True  # fine-grained refinement: F^t, de-duplicated K^v_R, F^v
    prompt_extension: bool = True  # backbone writes P̂; off = P + refined facts assembled by template

    # --- loop length (paper Table 4)
    # Cap on adaptive rounds. The paper's adaptive ORIG averages 2.8 iterations counting the
    # bootstrap (~1.8 loop rounds) and its fixed-length study stops at 3 rounds (+3-Round), whose
    # gains over 2 are negligible; 3 therefore rarely binds and bounds the cost.
    max_rounds: int = Field(3, ge=1, le=10)
    # Table 4's "+N-Round": exactly N loop rounds, no sufficiency check; overrides max_rounds.
    # None = adaptive (sufficiency evaluation decides).
    fixed_rounds: int | None = Field(None, ge=1, le=10)

    # --- per-round retrieval (paper App. A)
    max_queries_per_round: int = Field(5, ge=1, le=10)  # "one to five queries per round"
    bootstrap_max_queries: int = Field(3, ge=1, le=5)  # bootstrap is light: 1-3 entity queries
    bootstrap_snippets_per_query: int = Field(3, ge=1, le=10)  # bootstrap keeps snippets, reads no page
    text_top_k: int = Field(10, ge=1, le=50)  # top-10 web results per text query
    pages_per_query: int = Field(2, ge=1, le=10)  # backbone picks the 2 most relevant pages
    image_top_k: int = Field(10, ge=1, le=50)  # top-10 image results per image query
    images_per_query: int = Field(5, ge=1, le=20)  # keep the top 5 that download and are unique

    # --- request budgets, in backbone tokens (ours). Every request must fit the backbone's
    # context window: context_tokens (None = the backbone preset's serve.max_model_len, else
    # 32768) minus reply_tokens, image_tokens per image and the rendered template.
    context_tokens: int | None = Field(None, ge=1024)
    reply_tokens: int = Field(2048, ge=128)
    # per image; None = the backbone preset's mm max_pixels / (28*28) (Qwen2.5-VL: 1280 at
    # max_pixels=1003520), else 1280
    image_tokens: int | None = Field(None, ge=0)
    # K as later stages read it (the consolidated summary); paper Table 6: ~830 tokens reach
    # refinement. Over this, the least relevant / redundant statements are cut (and traced).
    knowledge_tokens: int = Field(2000, ge=100)
    # Page text per text-filter call (ours). "passages": the page's passages that BM25 ranks
    # closest to the query, its sub-questions, what is missing and the visual attributes the
    # filter extracts, in page order within the budget; "head": the page's beginning (before
    # issue 22: facts past the first ~12k characters of a long page were never seen).
    # 520 backbone tokens: ~2,200 characters, 3-4 passages of ~600, the best-ranked; the paper's
    # accumulation input (Table 6: 3,599 tokens for all of a prompt's pages) is ~400 a page.
    # 600 before, which held ~2,100 characters when counted with the 3.5-characters-a-token
    # estimate but ~2,600 with the real tokenizer a run next to its backbone loads (8,057 input
    # tokens a round on bench_cost.py, over the 8,000 goal); 800 before that: the same recall.
    max_page_tokens: int = Field(520, ge=100)
    page_text: Literal["passages", "head"] = "passages"
    images: StageImages = Field(default_factory=StageImages)
    # Consolidate K into a deduplicated summary after each round (one backbone call); off =
    # later stages read K's entries as they are (cut to knowledge_tokens when needed).
    consolidate: bool = True
    # The merge call is made once K (summary and new entries) holds this many tokens (0: every
    # round). Below it there is too little to compact for the call to pay for itself: it costs
    # ~300 tokens of instructions plus the entries, and a K ~30 % smaller is read by ~5 later
    # requests (break-even ~500). The new entries then join the summary as they are, repeats
    # folded without a model (an entry whose detail words another holds): nothing is lost (ours;
    # the paper has no merge call).
    consolidate_min_tokens: int = Field(500, ge=0)
    max_images_per_call: int = Field(8, ge=1)  # matches the presets' vLLM limit_mm_per_prompt
    # Reference images passed to the generator (paper: ORIG used 2.1 on average; Qwen-Image-Edit
    # style pipelines accept a few). The refinement keeps at most min(this, the generator's
    # reference capacity: 0 text-only, 1 Qwen-Image-Edit / FLUX-Kontext, 3 Qwen-Image-Edit-2509).
    max_references: int = Field(3, ge=0, le=8)
    max_prompt_words: int = Field(300, ge=20)  # paper: final prompt of about 300 words or fewer
    max_prompt_chars: int = Field(2400, ge=200)  # hard cap whatever the words (a 1 MB "word")
    # Generator text-encoder tokens; None = the generator's own limit (max_sequence_length).
    max_prompt_tokens: int | None = Field(None, ge=16)

    # Embedding (CLIP) near-duplicate removal of images before the VLM sees them and again
    # before refinement; exact and dHash duplicates are always dropped.
    dedup: bool = True
    dedup_threshold: float = Field(0.95, gt=0.0, le=1.0)  # cosine similarity; ours, not the paper's
    seed: int = 0  # generator seed (the benchmark runner may set one per item)

    # --- trace
    trace_messages: bool = True  # store rendered request text in trace.json (else only its hash)

    # --- concurrency
    concurrency: int = Field(32, ge=1)  # prompts in flight in run_many (keeps vLLM batches full)
    run_timeout_s: float | None = Field(None, gt=0)  # per prompt in run_many; None = no limit

    @field_validator("condition")
    @classmethod
    def _known_condition(cls, value: str) -> str:
        condition(value)  # read when validated, not at import: a condition added later counts
        return value

    @property
    def round_limit(self) -> int:
        """Loop rounds allowed: ``fixed_rounds`` when set (it overrides ``max_rounds``)."""
        return self.fixed_rounds if self.fixed_rounds is not None else self.max_rounds

    @property
    def spec(self) -> ConditionSpec:
        """The condition's properties (orig_local.conditions)."""
        return condition(self.condition)

    @property
    def retrieves(self) -> bool:
        return self.spec.retrieves

    @property
    def modalities(self) -> tuple[str, ...]:
        """Search modalities the loop may use."""
        return self.spec.modalities
