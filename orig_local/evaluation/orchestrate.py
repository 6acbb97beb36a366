"""Run the phases of a benchmark run from a Config: check what they need first (preflight),
hold the run folder, build each component only when its phase runs, release it afterwards
(generator ``unload()``, chat ``aclose()``), record run.json with the run's provenance."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from orig_local.errors import OrigError, UsageError
from orig_local.evaluation import binding
from orig_local.evaluation.identity import benchmark_identity as benchmark_identity  # re-exported
from orig_local.evaluation.identity import identity_differs
from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases import PHASE_NAMES, check_phase
from orig_local.evaluation.phases.agent import run_agent_phase
from orig_local.evaluation.phases.common import AgentFn, AgentOutput, shard_from_env
from orig_local.evaluation.phases.generate import run_generate_phase
from orig_local.evaluation.phases.judge import run_judge_phase
from orig_local.evaluation.phases.loop import PhaseSummary, summary_line
from orig_local.evaluation.phases.retrieval_accuracy import run_retrieval_phase
from orig_local.evaluation.rundir import backbone_size, data_path, hold_run, read_meta, write_meta_file

if TYPE_CHECKING:
    from orig_local.config import Config
    from orig_local.evaluation.judge import Judge
    from orig_local.generation.base import Generator

log = logging.getLogger(__name__)

ALL_PHASES = PHASE_NAMES  # kept for older imports


class RunMismatch(OrigError, ValueError):
    """The run folder already holds results of a different benchmark/condition/model/data."""


class ComponentLoadError(OrigError, RuntimeError):
    """A phase's model could not be built/loaded (missing weights, out of memory, ...)."""

    exit_code = 1


def _built(role: str, name: str | None, build: Callable[[], Any]) -> Any:
    """``build()``, with a failure as one line naming the role and the preset (traceback at DEBUG)."""
    try:
        return build()
    except OrigError:
        raise
    except Exception as exc:
        log.debug("building the %s failed", role, exc_info=True)
        raise ComponentLoadError(f"could not load the {role} {name!r}: {type(exc).__name__}: {str(exc)[:300]}",
                                 hint="check the preset (`orig models`) and that its weights are available; "
                                 "rerun the same command to resume (--log-level DEBUG shows the traceback)") from exc


# --------------------------------------------------------------------------- conditions without a backbone


def direct_agent(item: BenchmarkItem) -> AgentOutput:
    """Direct (paper Table 3): the raw prompt, no references."""
    return AgentOutput(final_prompt=item.prompt, stop_reason="direct")


def build_agent_fn(config: Config) -> tuple[AgentFn, Callable[[], Awaitable[None]] | None]:
    """The agent callable for ``config.agent.condition``."""
    if not config.agent.spec.uses_backbone:
        return direct_agent, None
    from orig_local.evaluation.agent_adapter import make_agent_fn

    return make_agent_fn(config)


def build_generator(config: Config) -> Generator:
    if not (config.generator.preset or config.generator.model):
        raise UsageError("no generator preset: pass --generator <preset> or set generator.preset")
    from orig_local.generation import make_generator

    return make_generator(config.generator, progress=config.progress)


def build_judge(config: Config) -> Judge:
    from orig_local.evaluation.judge import Judge

    return Judge.from_config(config)


# --------------------------------------------------------------------------- run.json


def _check_same_run(run_dir: Path, old: dict, meta: dict) -> None:
    for key in ("benchmark", "condition", "generator", "backbone", "seed"):
        if old.get(key) is not None and meta.get(key) is not None and old[key] != meta[key]:
            hint = ("pass --generator " + str(old[key]) + " (what the run was started with), or another --out"
                    if key == "generator" else "use another --out")
            raise RunMismatch(f"{run_dir} holds a run with {key}={old[key]!r}, not {meta[key]!r}", hint=hint)
    was, now = (old.get("benchmark_identity") or {}), (meta.get("benchmark_identity") or {})
    what = identity_differs(was, now)
    if what:
        raise RunMismatch(
            f"{run_dir} was run on other data ({was.get('loader')} {was.get('data')}) than {now.get('data')}: {what}",
            hint="use another --out, or the data the run was started with")


def run_meta(config: Config, run_dir: Path, extra: dict | None = None) -> dict:
    """This invocation's run.json fields (nothing is written)."""
    spec = config.agent.spec
    backbone = (config.backbone.preset or config.backbone.model) if spec.uses_backbone else None
    meta = {
        "benchmark": config.eval.benchmark,
        "data": str(Path(config.eval.data).resolve()) if config.eval.data else None,
        "condition": config.agent.condition,
        "backbone": backbone,
        "backbone_size_b": backbone_size(backbone),
        "generator": config.generator.preset or config.generator.model,
        "judge": config.judge.preset or config.judge.model,
        "seed": config.eval.seed,
        "label": config.eval.label or Path(run_dir).resolve().name,
    }
    meta.update(extra or {})
    return meta


def check_meta(config: Config, run_dir: Path, extra: dict | None = None, phases: Sequence[str] = ()) -> None:
    """Refuse (RunMismatch) a run folder holding another benchmark/condition/model/data, and
    (SettingsMismatch) a phase in ``phases`` whose rows were made with other settings."""
    old = read_meta(run_dir)
    _check_same_run(Path(run_dir), old, run_meta(config, run_dir, extra))
    binding.check(Path(run_dir), old.get("settings") or {}, config, list(phases), config.eval.judge_name)


def write_meta(run_dir: Path, config: Config, extra: dict | None = None,
               phases: Sequence[str] = ()) -> dict:
    """Record what this run is; refuse to mix a different benchmark/condition/data into it.
    Fields already recorded keep their first value (``data`` too: a rerun from a moved copy of
    the same data does not rewrite where the run came from). ``phases``: record the settings
    each reads (:mod:`orig_local.evaluation.binding`) and keep its ``config.<phase>.yaml``."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    meta = run_meta(config, run_dir, extra)
    old = read_meta(run_dir)
    _check_same_run(run_dir, old, meta)
    merged = {**old, **{k: v for k, v in meta.items() if v is not None}}
    for key in ("data", "benchmark_identity", "created_at"):
        if old.get(key) is not None:
            merged[key] = old[key]
    if merged.get("data"):
        merged["data"] = data_path(merged)  # older runs stored --data as typed (relative)
    if phases:
        merged = binding.record(run_dir, merged, config, list(phases), config.eval.judge_name)
    write_meta_file(run_dir, merged)
    from orig_local.config import save_config

    save_config(config, run_dir / "config.yaml")
    return merged


def _uses(config, phases: Sequence[str]) -> dict[str, bool]:
    needs = {check_phase(p).needs for p in phases}
    return {"backbone": "backbone" in needs and config.agent.spec.uses_backbone,
            "generator": "generator" in needs, "judge": "judge" in needs,
            "embedder": "backbone" in needs and config.agent.retrieves and config.agent.dedup}


# --------------------------------------------------------------------------- orchestration


class PhaseOptions(TypedDict):
    """The keyword arguments every phase function takes alike."""

    shard: tuple[int, int]
    progress: bool
    retry_errors: bool
    retry_degraded: bool
    max_consecutive_failures: int


@dataclass
class PhaseContext:
    """What a phase runner gets: the run, this phase's items (sharded), the components the
    caller passed in (None: built from ``config`` for the phase, released after it)."""

    config: Config
    run_dir: Path
    items: list[BenchmarkItem]
    shard: tuple[int, int] | None  # the caller's explicit shard (None: generate may shard by RANK)
    agent: AgentFn | None
    generator: Generator | None
    judge: Judge | None
    options: PhaseOptions


def _agent_phase(ctx: PhaseContext) -> PhaseSummary:
    config = ctx.config
    fn, aclose = (ctx.agent, None) if ctx.agent is not None else _built(
        "backbone", config.backbone.preset or config.backbone.model, lambda: build_agent_fn(config))
    return run_agent_phase(ctx.items, ctx.run_dir, fn, concurrency=config.agent.concurrency,
                           aclose=aclose, **ctx.options)


def _generate_phase(ctx: PhaseContext) -> PhaseSummary:
    config, gen = ctx.config, ctx.generator
    if gen is None:
        if ctx.shard is None and shard_from_env() and config.generator.device == "auto":
            import os

            # one GPU per process under accelerate/torchrun; a copy, the caller's config is left alone
            gen_cfg = config.generator.model_copy(update={"device": f"cuda:{os.environ.get('LOCAL_RANK', '0')}"})
            config = config.model_copy(update={"generator": gen_cfg})
        gen = _built("generator", config.generator.preset or config.generator.model, lambda: build_generator(config))
    try:
        return run_generate_phase(ctx.items, ctx.run_dir, gen, seed=config.eval.seed, **ctx.options)
    finally:
        if ctx.generator is None:
            gen.unload()  # free the accelerator for the judge


def _judge_phase(ctx: PhaseContext, phase: str) -> PhaseSummary:
    config, ev = ctx.config, ctx.config.eval
    jd = ctx.judge if ctx.judge is not None else _built(
        "judge", config.judge.preset or config.judge.model, lambda: build_judge(config))
    close = ctx.judge is None
    if phase == "judge":
        return run_judge_phase(ctx.items, ctx.run_dir, jd, judge_name=ev.judge_name, concurrency=ev.judge_concurrency,
                               close=close, **ctx.options)
    return run_retrieval_phase(ctx.items, ctx.run_dir, jd, max_chars=ev.evidence_max_chars,
                               max_images=ev.evidence_max_images, judge_name=ev.judge_name,
                               concurrency=ev.judge_concurrency, close=close, **ctx.options)


RUNNERS: dict[str, Callable[[PhaseContext], PhaseSummary]] = {
    "agent": _agent_phase,
    "generate": _generate_phase,
    "judge": lambda ctx: _judge_phase(ctx, "judge"),
    "retrieval": lambda ctx: _judge_phase(ctx, "retrieval"),
}
assert set(RUNNERS) == set(PHASE_NAMES), "every phase in orig_local.evaluation.phases.PHASES has a runner"


def run_phases(config: Config, run_dir: str | Path, items: Sequence[BenchmarkItem],
               phases: Sequence[str] = PHASE_NAMES[:3], *,  # agent, generate, judge
               shard: tuple[int, int] | None = None, agent: AgentFn | None = None,
               generator: Generator | None = None, judge: Judge | None = None,
               retry_errors: bool = False, retry_degraded: bool = False,
               data_identity: dict | None = None, preflight: bool = True) -> list[PhaseSummary]:
    """Run ``phases`` in order over ``items`` (filtered, not yet sharded). ``shard=(i, n)``
    makes every phase take items i, i+n, ... and write its own shard file; without it, the
    generate phase shards itself by RANK/WORLD_SIZE under ``accelerate launch``/``torchrun``.
    Components not given are built from ``config`` when their phase starts and released when
    it ends.

    Before anything is written: the phases' servers/generator are checked (``preflight``), the
    run folder must match (``RunMismatch``) and must not be held by another process. A phase
    stopped by the circuit breaker ends the run (later phases would only wait on it).
    ``data_identity`` (:func:`benchmark_identity`) binds the folder to its data."""
    from orig_local.evaluation import preflight as pf
    from orig_local.provenance import now, provenance

    run_dir = Path(run_dir)
    _check_phases(config, phases)
    env_shard = shard_from_env()
    lock_shard = shard or (env_shard if "generate" in phases else None)
    extra = _meta_extra(config, phases, data_identity)
    served: dict = {}
    if preflight:
        served = pf.preflight(config, phases, run_dir=run_dir, shard=lock_shard,
                              have={"backbone": agent is not None, "generator": generator is not None,
                                    "judge": judge is not None})
    if run_dir.is_dir():
        check_meta(config, run_dir, extra, phases)
    summaries: list[PhaseSummary] = []
    with hold_run(run_dir, lock_shard):
        started = now()
        prov = {**provenance(config, _uses(config, phases), served), "started_at": started, "ended_at": None,
                "phases": list(phases)}
        if {"judge", "retrieval"} & set(phases):  # the templates behind each verdict's request_sha256
            from orig_local.evaluation.judge import template_hashes

            prov["judge_templates"] = template_hashes(config.prompts_dir)
        meta = write_meta(run_dir, config, {**extra, "provenance": prov}, phases)
        _keep_invocation_config(run_dir, config, started, phases)
        outcome = "interrupted"
        measured: dict = {}
        try:
            _run_each(config, run_dir, items, phases, shard, env_shard, agent, generator, judge,
                      retry_errors, retry_degraded, summaries, measured)
            outcome = "done"
        finally:
            _record_end(run_dir, meta, prov, summaries, outcome, measured)
    return summaries


def _check_phases(config: Config, phases: Sequence[str]) -> None:
    """Refuse unknown phases, and the retrieval phase for a condition that retrieves nothing."""
    for phase in phases:
        check_phase(phase)
    if "retrieval" in phases and not config.agent.retrieves:
        from orig_local.errors import UsageError

        raise UsageError(f"retrieval accuracy does not apply to condition {config.agent.condition!r}: it "
                         "retrieves nothing", hint="run --phase retrieval on orig/orig_txt/orig_img runs only")


def _meta_extra(config: Config, phases: Sequence[str], data_identity: dict | None) -> dict:
    """What run.json records beyond the config: the data's identity and the cost estimate."""
    extra: dict = {"benchmark_identity": data_identity} if data_identity else {}
    if "agent" in phases and config.agent.spec.uses_backbone:
        from orig_local.evaluation.costplan import estimate_record

        extra["cost_estimate"] = estimate_record(config)  # the report sets it beside what was measured
    return extra


def _run_each(config: Config, run_dir: Path, items: Sequence[BenchmarkItem], phases: Sequence[str],
              shard: tuple[int, int] | None, env_shard: tuple[int, int] | None, agent: AgentFn | None,
              generator: Generator | None, judge: Judge | None, retry_errors: bool, retry_degraded: bool,
              summaries: list[PhaseSummary], measured: dict) -> None:
    """Run the phases in order, appending to ``summaries``/``measured`` as each ends (the
    caller records them even when a phase raises); a phase stopped by the breaker ends it."""
    for phase in phases:
        # Data-parallel generation under `accelerate launch`/torchrun: each process its share.
        this_shard = shard or ((env_shard or (0, 1)) if phase == "generate" else (0, 1))
        options = PhaseOptions(shard=this_shard, progress=config.progress, retry_errors=retry_errors,
                               retry_degraded=retry_degraded,
                               max_consecutive_failures=config.eval.max_consecutive_failures)
        ctx = PhaseContext(config, run_dir, list(items)[this_shard[0]::this_shard[1]], shard, agent,
                           generator, judge, options)
        t0 = time.perf_counter()
        summary = RUNNERS[phase](ctx)
        measured[phase] = _measure(run_dir, phase, time.perf_counter() - t0, summary.ran, config)
        summaries.append(summary)
        log.info("%s", summary_line(summary))
        if summary.stopped:
            break


def _keep_invocation_config(run_dir: Path, config: Config, started: str, phases: Sequence[str]) -> None:
    """``configs/<start>-<phases>.yaml``: every invocation's resolved config, never overwritten
    (``config.yaml`` is the last one's)."""
    from orig_local.config import save_config

    stamp = started.replace(":", "").replace("-", "")
    path = run_dir / "configs" / f"{stamp}-{'+'.join(phases)}.yaml"
    n = 1
    while path.exists():  # two invocations in the same second
        n += 1
        path = run_dir / "configs" / f"{stamp}-{'+'.join(phases)}-{n}.yaml"
    save_config(config, path)


def _measure(run_dir: Path, phase: str, wall_s: float, ran: int, config: Config) -> dict:
    """What a phase cost (run.json's ``measured``): wall time and items run; the agent phase
    also its tokens and throughput (:func:`orig_local.evaluation.costplan.measure_agent`). A
    stand-in backbone's figures are labelled and give no throughput (a later plan must not
    take a simulated run's speed for the model's)."""
    if phase != "agent":
        return {"wall_s": round(wall_s, 1), "ran": ran}
    from orig_local.evaluation.costmeasure import measure_agent
    from orig_local.labels import config_labels

    try:
        out = measure_agent(run_dir, wall_s, ran)
        stand_in = config_labels(config, ("backbone",))
        if stand_in:
            out.pop("tokens_per_s", None)
            out["stand_in"] = stand_in
        return out
    except OSError as exc:  # an unreadable phase file must not hide the phase's outcome
        log.warning("could not measure the agent phase of %s: %s", run_dir, exc)
        return {"wall_s": round(wall_s, 1), "ran": ran}


def _record_end(run_dir: Path, meta: dict, prov: dict, summaries: list[PhaseSummary], outcome: str,
                measured: dict | None = None) -> None:
    """End timestamp and phase counts into run.json (kept to the last 50 invocations); what
    each phase that ran items cost (``measured``; a resume that ran nothing keeps the last)."""
    from orig_local.provenance import now

    prov = {**prov, "ended_at": now(), "outcome": outcome}
    entry = {k: prov.get(k) for k in ("started_at", "ended_at", "outcome", "phases", "config_sha256")}
    entry["git_commit"] = prov["code"].get("git_commit")
    entry["summaries"] = [{k: v for k, v in s.to_dict().items() if k in (
        "phase", "ran", "ok", "degraded", "failed", "stopped", "replies", "from_cache")} for s in summaries]
    current = read_meta(run_dir) or meta
    current["provenance"] = prov
    current["history"] = (current.get("history") or [])[-49:] + [entry]
    fresh = {k: v for k, v in (measured or {}).items() if v.get("ran")}
    if fresh:
        current["measured"] = {**(current.get("measured") or {}), **fresh}
    try:
        write_meta_file(run_dir, current)
    except OSError as exc:  # a full disk must not hide the phase's own outcome
        log.warning("could not update %s/run.json: %s", run_dir, exc)
