"""The bill before the run: expected backbone calls, prefill/decode tokens, images, judge calls
and generator steps per run and phase, and GPU-hours given a throughput.

Everything here is an ESTIMATE and is labelled so wherever it is shown. It is derived from:

* the run's config: which stages run (condition, ablation switches), loop rounds
  (``fixed_rounds``, else the paper's adaptive mean of ~1.8 rounds capped by ``max_rounds``),
  pages and images per query, the per-stage pixel bounds (``agent.images``), references;
* queries per round: the paper's means (4.5 text and 2.5 image searches per prompt over 2.8
  iterations, ~1.2 of them in bootstrap: ~1.8 text and ~1.4 image queries per loop round);
* per-call text and decode tokens of each step, measured by ``benchmarks/bench_cost.py`` (real
  Qwen2 BPE, default settings; ``cost_reference.json``, :mod:`~orig_local.evaluation.costref`),
  the text filter's page share scaled to ``max_page_tokens``; pictures priced by Qwen2.5-VL's
  pixel rule at 1024x768 (a typical web picture after the retriever's downscale), within the
  pixel cap of the backbone as the run resolves it (:class:`~orig_local.resolved.ResolvedModels`,
  the record the agent's budgets read; Qwen2.5-VL's default cap when the preset is unknown);
* the merge (consolidation) call in the rounds where K is expected to reach
  ``consolidate_min_tokens`` (K's size per round as the bench measured it; below it the agent
  folds new entries in without a call);
* the benchmark's items (judge calls = questions, retrieval-accuracy calls = gold facts) when
  the data is at hand, and the generator preset's steps.

GPU-hours need a throughput: ``--tokens-per-s`` (prefill + decode tokens per second of one
backbone server, at the concurrency the run uses), or the figure a previous run of the same
backbone recorded in its ``run.json`` (``measured.agent.tokens_per_s``, written after every
agent phase). GPU-hours = tokens / throughput x the server's GPUs (tensor parallel size).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orig_local.evaluation.costref import load_reference, merge_calls

if TYPE_CHECKING:
    from orig_local.resolved import ResolvedModels

PAPER_ROUNDS = 1.8  # adaptive loop rounds (2.8 iterations incl. bootstrap, Table 4)
PAPER_TEXT_QUERIES = 1.8  # per loop round: (4.5 text searches - ~1.2 bootstrap) / 1.8 rounds
PAPER_IMAGE_QUERIES = 1.4  # per loop round: 2.5 image searches / 1.8 rounds
PICTURE = (1024, 768)  # a web picture as the agent receives it
FOOTNOTE = ("ESTIMATE from the config, the paper's mean rounds and queries per round, and per-call figures "
            "measured by benchmarks/bench_cost.py (docs/cost.md; the merge call only in rounds where K is "
            "expected to reach agent.consolidate_min_tokens); after a run, its report's cost.md "
            "shows what was measured beside it.")


@dataclass
class StepCost:
    """Expected cost of one agent step per prompt."""

    step: str  # stage/step, e.g. accumulation/text_filter
    calls: float
    prefill: float  # input tokens incl. images
    decode: float
    images: float
    note: str = ""  # how an estimated count was decided (the merge call)


@dataclass
class PhaseCost:
    phase: str
    items: int | None
    calls: float | None = None  # backbone or judge requests
    prefill: float | None = None
    decode: float | None = None
    images: float | None = None
    generator_steps: float | None = None
    gpus: int = 1
    note: str = ""
    steps: list[StepCost] = field(default_factory=list)

    def gpu_hours(self, tokens_per_s: float | None) -> float | None:
        if tokens_per_s is None or self.prefill is None or self.decode is None:
            return None
        return (self.prefill + self.decode) / tokens_per_s / 3600 * self.gpus


def _picture_tokens(bound: int | None, backbone_max: int) -> int:
    from orig_local.llm.tokens import VISION_TOKENS, image_tokens

    limit = backbone_max if bound is None else min(bound, backbone_max)
    return image_tokens(*PICTURE, max_pixels=limit) + VISION_TOKENS


def picture_cap(config: Any, role: Literal["backbone", "judge"] = "backbone",
                models: ResolvedModels | None = None) -> tuple[int, str]:
    """(pixels per picture the ``role``'s server keeps, why a fallback was taken or ""). The
    backbone's comes from the run's resolved models (``models``, else built from ``config``:
    the record build_agent hands the agent), the judge's from its section resolved the same
    way. No preset, a stand-in backend or a preset that does not load: Qwen2.5-VL's default cap
    (what the agent then assumes too), said in the plan."""
    from orig_local.llm.tokens import DEFAULT_MAX_PIXELS
    from orig_local.resolved import STAND_IN_BACKENDS, resolve_backbone

    section = getattr(config, role)
    if role == "backbone":
        resolved = (models or backbone_models(config)).backbone
    else:
        resolved = resolve_backbone(section, role="judge")
    if resolved is not None and resolved.max_pixels:
        return resolved.max_pixels, ""
    if section.backend in STAND_IN_BACKENDS:
        why = f"a stand-in {role} ({section.backend})"
    elif not section.preset:
        why = f"no {role} preset"
    elif resolved is None:
        why = f"{role} preset {section.preset!r} unknown"
    else:
        why = f"{role} preset {section.preset!r} sets no pixel cap"
    return DEFAULT_MAX_PIXELS, f"{why}: pictures priced at Qwen2.5-VL's default cap ({DEFAULT_MAX_PIXELS:,} px)"


def backbone_models(config: Any) -> ResolvedModels:
    """The run's resolved models as far as the agent's bill needs them: the backbone, resolved
    as :meth:`ResolvedModels.from_config` resolves it for build_agent (the generator is left
    out: an unknown generator preset is the generate phase's error, not the plan's)."""
    from orig_local.resolved import ResolvedModels, resolve_backbone

    return ResolvedModels(backbone=resolve_backbone(config.backbone))


def agent_steps(config: Any, reference: dict[str, Any] | None = None, *, rounds: float | None = None,
                text_queries: float = PAPER_TEXT_QUERIES, image_queries: float = PAPER_IMAGE_QUERIES,
                models: ResolvedModels | None = None) -> list[StepCost]:
    """Expected calls and tokens per prompt of each agent step under ``config`` (module doc).
    ``rounds`` (default: ``fixed_rounds``, else the paper's mean capped by ``max_rounds``) and
    queries per loop round (default: the paper's means) may be given, e.g. as measured;
    ``models``: the run's resolved models (default: resolved from ``config``)."""
    ref = reference or load_reference()
    per_call = ref["per_call"]
    a = config.agent
    spec = a.spec
    full, _ = picture_cap(config, "backbone", models)
    out: list[StepCost] = []

    def add(step: str, calls: float, images: float = 0.0, bound: int | None = None, extra_text: float = 0.0,
            note: str = "") -> None:
        if calls <= 0 and not note:  # a step priced at no call shows only when it says why
            return
        base = per_call.get(step) or per_call["extension/write_prompt"]
        picture = _picture_tokens(bound, full) if images else 0
        out.append(StepCost(step, calls, calls * (base["text"] + extra_text) + images * picture,
                            calls * base["decode"], images, note))

    refs = min(a.max_references, 3)
    if spec.enhances:  # no measured figure of its own: priced like prompt extension without pictures
        add("enhance/write_prompt", 1)
        return out
    # Prompt extension sees the pictures only when no F^v was written from them (oracle, no refinement).
    ext_bound = a.images.extension if a.refinement and not spec.needs_oracle else a.images.visual_features
    if spec.needs_oracle:
        if a.prompt_extension:
            add("extension/write_prompt", 1, refs if ext_bound != 0 else 0, ext_bound)
        return out
    if not spec.retrieves:
        return out
    if rounds is None:
        rounds = float(a.fixed_rounds) if a.fixed_rounds is not None else min(float(a.max_rounds), PAPER_ROUNDS)
    text_q = text_queries if "text" in spec.modalities else 0.0
    image_q = image_queries if "image" in spec.modalities else 0.0
    pictures = _loop_steps(add, a, ref, rounds, text_q, image_q)
    _writing_steps(add, a, refs, pictures, ext_bound)
    return out


def _loop_steps(add: Callable[..., None], a: Any, ref: dict[str, Any], rounds: float, text_q: float,
                image_q: float) -> float:
    """The calls of bootstrapping and of ``rounds`` loop rounds (plan, page choice, filters,
    consolidation, sufficiency), priced through ``add``; returns the pictures retrieved."""
    if a.bootstrap and text_q:
        add("bootstrap/entities", 1)
    add("planning/plan", rounds)
    if a.text_top_k > a.pages_per_query:
        add("search/select_pages", rounds * text_q)
    pictures = rounds * image_q * a.images_per_query
    if a.accumulation_filter:
        page_delta = a.max_page_tokens - ref.get("max_page_tokens", a.max_page_tokens)
        add("accumulation/text_filter", rounds * text_q * a.pages_per_query, extra_text=page_delta)
        add("accumulation/image_filter", rounds * math.ceil(image_q * a.images_per_query / a.max_images_per_call),
            pictures, a.images.image_filter)
        if a.consolidate:  # only where K is expected to reach consolidate_min_tokens (consolidation.py)
            calls, why = merge_calls(ref, rounds, a.consolidate_min_tokens)
            add("accumulation/consolidate", calls, note=why)
    if a.fixed_rounds is None:
        add("sufficiency/decide", rounds)
    return pictures


def _writing_steps(add: Callable[..., None], a: Any, refs: int, pictures: float, ext_bound: int | None) -> None:
    """The calls after the loop (refinement, prompt extension), with the pictures each sees."""
    if a.refinement:
        shown = min(pictures, a.max_images_per_call)
        add("refinement/text_features", 1, shown if a.images.text_features != 0 else 0, a.images.text_features)
        kept = min(refs, pictures)
        if kept:
            add("refinement/visual_features", 1, kept if a.images.visual_features != 0 else 0, a.images.visual_features)
    if a.prompt_extension:
        kept = min(refs, pictures)
        add("extension/write_prompt", 1, kept if ext_bound != 0 else 0, ext_bound)


def _gpus(preset_name: str | None) -> int:
    if not preset_name:
        return 1
    try:
        from orig_local.presets import load_preset

        preset = load_preset(preset_name)
    except Exception:  # noqa: BLE001 - unknown preset: one GPU
        return 1
    return preset.serve.tensor_parallel_size if preset.serve else 1


def _generator_steps(config: Any) -> int | None:
    steps = getattr(config.generator, "steps", None)
    if steps:
        return int(steps)
    try:
        from orig_local.presets import load_preset

        default = load_preset(config.generator.preset).defaults.get("steps") if config.generator.preset else None
        return int(default) if default is not None else None
    except Exception:  # noqa: BLE001 - unknown preset or no default: steps unknown
        return None


def estimate(config: Any, phases: Sequence[str], items: Sequence[Any] | None, n_items: int | None = None,
             reference: dict[str, Any] | None = None) -> list[PhaseCost]:
    """Expected cost of each of ``phases`` for ``items`` (or ``n_items`` when the data is not
    at hand: judge calls are then unknown)."""
    n = len(items) if items is not None else n_items
    models = backbone_models(config)  # once, as build_agent resolves it: the same pixel cap
    out: list[PhaseCost] = []
    for phase in phases:
        if phase == "agent":
            steps = agent_steps(config, reference, models=models)
            per = PhaseCost("agent", n, gpus=_gpus(config.backbone.preset), steps=steps,
                            calls=sum(s.calls for s in steps), prefill=sum(s.prefill for s in steps),
                            decode=sum(s.decode for s in steps), images=sum(s.images for s in steps),
                            note=picture_cap(config, "backbone", models)[1] if any(s.images for s in steps) else "")
            out.append(_times(per, n))
        elif phase == "generate":
            st = _generator_steps(config)
            out.append(PhaseCost("generate", n, calls=float(n if n is not None else 1),
                                 generator_steps=None if st is None else float(st * (n if n is not None else 1)),
                                 note=("" if st else "steps unknown (no preset default)")
                                 + ("" if n is not None else "per prompt (item count unknown)")))
        elif phase in ("judge", "retrieval"):
            out.append(_judge_cost(config, phase, items, n))
    return out


def _judge_cost(config: Any, phase: str, items: Sequence[Any] | None, n: int | None) -> PhaseCost:
    """Judge (one call per question) or retrieval-accuracy (one per gold fact) calls; the judge's
    tokens too: one generated picture at the generator preset's size within the judge's pixel
    cap, the question, a short JSON answer."""
    count = None
    if items is not None:
        count = float(sum(len(getattr(it, "questions" if phase == "judge" else "facts", []) or []) for it in items))
    cost = PhaseCost(phase, n, calls=count, gpus=_gpus(config.judge.preset),
                     note="" if count is not None else
                     f"calls = {'questions' if phase == 'judge' else 'gold facts'} (data not at hand)")
    if phase == "judge" and count is not None:
        from orig_local.llm.tokens import VISION_TOKENS, image_tokens

        cap, why = picture_cap(config, "judge")
        picture = image_tokens(*_generator_size(config), max_pixels=cap)
        cost.prefill = count * (picture + VISION_TOKENS + JUDGE_TEXT_TOKENS)
        cost.decode, cost.images = count * JUDGE_DECODE_TOKENS, count
        cost.note = why
    return cost


JUDGE_TEXT_TOKENS = 250  # system turn + question + answer format (ours, rounded up)
JUDGE_DECODE_TOKENS = 12  # a JSON boolean or option letter


def _generator_size(config: Any) -> tuple[int, int]:
    try:
        from orig_local.presets import load_preset

        d = load_preset(config.generator.preset).defaults if config.generator.preset else {}
    except Exception:  # noqa: BLE001 - unknown preset: the usual 1024 square
        d = {}
    return int(d.get("width") or 1024), int(d.get("height") or 1024)


def _times(per: PhaseCost, n: int | None) -> PhaseCost:
    if n is None:
        per.note = "; ".join(x for x in ("per prompt (item count unknown)", per.note) if x)
        return per
    for name in ("calls", "prefill", "decode", "images"):
        setattr(per, name, getattr(per, name) * n)
    return per


def measured_throughput(run_dirs: Sequence[Path], backbone: str | None) -> tuple[float, str] | None:
    """Tokens per second of the agent phase recorded by a previous run of ``backbone``."""
    for d in run_dirs:
        path = Path(d) / "run.json"
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        m = ((meta.get("measured") or {}).get("agent") or {})
        if meta.get("backbone") == backbone and m.get("tokens_per_s"):
            return float(m["tokens_per_s"]), f"measured by {path}"
    return None


def _n(v: float | None, digits: int = 0) -> str:
    if v is None:
        return "?"
    return f"{v:,.{digits}f}"


def parse_throughput(values: Sequence[str] | None) -> dict[str | None, float]:
    """``--tokens-per-s`` values: ``N`` (every model) or ``PRESET=N`` (one model), repeatable."""
    from orig_local.errors import UsageError

    out: dict[str | None, float] = {}
    for v in values or []:
        name, _, number = v.rpartition("=")
        try:
            rate = float(number)
        except ValueError:
            raise UsageError(f"--tokens-per-s {v!r}: give N or PRESET=N (tokens per second)") from None
        if rate <= 0:
            raise UsageError(f"--tokens-per-s {v!r}: must be positive")
        out[name or None] = rate
    return out


def throughput_for(model: str | None, given: dict[str | None, float],
                   run_dirs: Sequence[Path] = ()) -> tuple[float | None, str]:
    """(tokens per second, where from) for ``model``: given for it, given for all, or recorded
    by a previous run of it; (None, "") when unknown."""
    if model in given:
        return given[model], f"--tokens-per-s {model}="
    if None in given:
        return given[None], "--tokens-per-s"
    found = measured_throughput(run_dirs, model) if model else None
    return found if found else (None, "")


def render(label: str, phases: list[PhaseCost], tokens_per_s: float | None, source: str = "",
           judge_tokens_per_s: float | None = None) -> str:
    """The plan of one run as text (every figure an estimate)."""
    lines = [f"{label} (ESTIMATE)"]
    for p in phases:
        items = "?" if p.items is None else f"{p.items:,}"
        if p.phase == "agent":
            if not p.calls:
                lines.append(f"  agent     {items} items: no backbone call (the condition sends the prompt as is)")
                continue
            hours = p.gpu_hours(tokens_per_s)
            if hours is None:
                gh = ", GPU-h: give --tokens-per-s (or run once: run.json records it)"
            else:
                amount = f"{hours:,.2f} GPU-h" if p.items is not None else f"{hours * 3600:,.1f} GPU-s per prompt"
                gh = f", {amount} at {tokens_per_s:,.0f} tok/s x {p.gpus} GPU(s){f' ({source})' if source else ''}"
            lines.append(f"  agent     {items} items: {_n(p.calls)} backbone calls, {_n(p.prefill)} prefill + "
                         f"{_n(p.decode)} decode tokens, {_n(p.images)} images{gh}"
                         + (f"  [{p.note}]" if p.note else ""))
        elif p.phase == "generate":
            lines.append(f"  generate  {items} items: {_n(p.calls)} image(s), {_n(p.generator_steps)} generator steps"
                         + (f"  [{p.note}]" if p.note else ""))
        else:
            tokens = (f", {_n(p.prefill)} prefill + {_n(p.decode)} decode tokens, {_n(p.images)} images"
                      if p.prefill is not None else "")
            hours = p.gpu_hours(judge_tokens_per_s)
            gh = (f", {hours:,.2f} GPU-h at {judge_tokens_per_s:,.0f} tok/s x {p.gpus} GPU(s)"
                  if hours is not None and p.items is not None else "")
            lines.append(f"  {p.phase:<9} {items} items: {_n(p.calls)} judge calls{tokens}{gh}"
                         + (f"  [{p.note}]" if p.note else ""))
    return "\n".join(lines)


def render_steps(phases: list[PhaseCost]) -> str:
    """Per-step figures of the agent phase, per prompt."""
    agent = next((p for p in phases if p.phase == "agent" and p.steps), None)
    if agent is None:
        return ""
    rows = ["  | step | calls | prefill | decode | images |", "  |---|---:|---:|---:|---:|"]
    notes: list[str] = []
    for s in agent.steps:
        mark = f" [{len(notes) + 1}]" if s.note else ""
        notes += [f"  [{len(notes) + 1}] {s.note}"] if s.note else []
        rows.append(f"  | {s.step}{mark} | {s.calls:.1f} | {s.prefill:,.0f} | {s.decode:,.0f} | {s.images:.1f} |")
    return "  per prompt:\n" + "\n".join(rows + notes)


def estimate_record(config: Any) -> dict[str, Any]:
    """The agent estimate per prompt for run.json (the report sets it beside what was measured)."""
    steps = agent_steps(config)
    return {"label": "estimate (orig_local.evaluation.costplan), per prompt",
            "stages": _by_stage(steps)}


def _by_stage(steps: list[StepCost]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for s in steps:
        stage = s.step.split("/")[0]
        row = out.setdefault(stage, {"calls": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0, "images": 0.0})
        row["calls"] += s.calls
        row["prompt_tokens"] += s.prefill
        row["completion_tokens"] += s.decode
        row["images"] += s.images
    return {k: {n: round(v, 1) for n, v in row.items()} for k, row in out.items()}

