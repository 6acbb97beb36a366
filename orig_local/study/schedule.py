"""The order a study runs in, chosen so each model loads as few times as possible:

1. agent phases of runs without a backbone (``direct``): no server;
2. per backbone (first-use order): start its vLLM server, every run's agent phase, stop it;
3. generation grouped by generator: all runs of one generator in one process with one
   generator instance (``generation: grouped``, :mod:`orig_local.study.generate_group`), or
   one ``orig eval --phase generate`` per run, back to back (``generation: per_run``);
4. one judge server for every run's judge phase, then retrieval accuracy (Eq. 12, the same
   judge), then stop it;
5. the report with every run side by side.

Phases with nothing left to do are left out (a resumed study starts no server it does not
need); a phase whose earlier phase is scheduled stays in, since new rows reach it.

Model loads: one per server start; per generator, one (grouped; one more per distinct
``generator.*`` override) or one per run left to do (per_run).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orig_local.study.plan import Plan, RunSpec
from orig_local.study.status import PhaseCounts


@dataclass
class Step:
    """One step of the schedule; its kind is its class (servers, phases, copies, the report)."""

    todo: int = field(default=0, kw_only=True)  # items left (pending, + failed with retry) when scheduled

    def describe(self) -> str:
        raise NotImplementedError


@dataclass
class ServerStep(Step):
    role: str  # backbone | judge
    model: str  # the preset served

    def describe(self) -> str:
        return f"start {self.role} server  {self.model}"


@dataclass
class StopStep(Step):
    role: str
    model: str

    def describe(self) -> str:
        return f"stop {self.role} server   {self.model}"


@dataclass
class PhaseStep(Step):
    run: RunSpec
    phase: str

    def describe(self) -> str:
        what = f"{self.phase:<9} {self.run.label}"
        return f"{what}  ({self.todo} item(s) to do)" if self.todo else what


@dataclass
class CopyStep(Step):
    """The agent rows of ``run`` copied from ``source`` (a shared agent phase)."""

    run: RunSpec
    source: RunSpec

    def describe(self) -> str:
        return f"{'agent':<9} {self.run.label}  (shared: rows copied from {self.source.label})"


@dataclass
class GenerateGroupStep(Step):
    """The generate phases of ``group``, one process, the generator loaded once."""

    model: str
    group: list[PhaseStep]

    def describe(self) -> str:
        runs = "\n".join(f"           - {s.run.label}" + (f"  ({s.todo} item(s) to do)" if s.todo else "")
                         for s in self.group)
        return f"generate  {self.model}: one process, {len(self.group)} run(s)\n{runs}"


@dataclass
class ReportStep(Step):
    def describe(self) -> str:
        return "report                  every run side by side"


def build_schedule(plan: Plan, status: dict[str, dict[str, PhaseCounts]], retry_failed: bool = False) -> list[Step]:
    """The ordered steps for what is left to do (``status`` from :func:`study_status`)."""
    todo: dict[tuple[str, str], int] = {}
    for run in plan.runs:
        upstream = False
        for phase in plan.phases(run):
            n = status[run.label][phase].todo(retry_failed)
            if n or upstream:
                todo[(run.label, phase)] = n
                upstream = True

    from orig_local.study.share import agent_sources

    sources = agent_sources(plan)
    # A run sharing another's agent phase: its copy is due when it lacks rows or the source
    # runs again (new rows to take).
    copies = [r for r in plan.runs if sources[r.label] != r.label
              and ((r.label, "agent") in todo or (sources[r.label], "agent") in todo)]

    def phase_steps(runs: list[RunSpec], phase: str) -> list[Step]:
        out: list[Step] = []
        for r in runs:
            if phase == "agent" and sources[r.label] != r.label:
                continue  # a copy step, placed after its source below
            if (r.label, phase) in todo:
                out.append(PhaseStep(r, phase, todo=todo[(r.label, phase)]))
            if phase == "agent":
                out += [CopyStep(c, r) for c in copies if sources[c.label] == r.label]
        return out

    steps: list[Step] = []
    # 1-2. agent phases, one backbone server at a time
    steps += phase_steps([r for r in plan.runs if not r.uses_backbone], "agent")
    for backbone in plan.backbones():
        group = [r for r in plan.runs if r.uses_backbone and r.backbone == backbone]
        work = phase_steps(group, "agent")
        if any(isinstance(s, PhaseStep) for s in work):
            steps += ([ServerStep("backbone", backbone)] if plan.serve else []) + work
            steps += [StopStep("backbone", backbone)] if plan.serve else []
        else:
            steps += work  # only copies: no server needed
    # 3. generation grouped by generator: one process per generator (grouped) or per run
    for generator in plan.generators():
        work = phase_steps([r for r in plan.runs if r.generator == generator], "generate")
        if plan.generation == "grouped" and work:
            # runs with equal generator settings next to each other: one instance serves them all
            batch = [s for s in work if isinstance(s, PhaseStep)]  # generate: phase steps only
            batch.sort(key=lambda s: generator_settings(plan, s.run))
            steps.append(GenerateGroupStep(generator, batch, todo=sum(s.todo for s in batch)))
        else:
            steps += work
    # 4. one judge server for judging and retrieval accuracy
    work = phase_steps(plan.runs, "judge") + phase_steps(plan.runs, "retrieval")
    if work:
        steps += ([ServerStep("judge", plan.judge.preset)] if plan.serve else []) + work
        steps += [StopStep("judge", plan.judge.preset)] if plan.serve else []
    steps.append(ReportStep())
    return steps


def generator_settings(plan: Plan, run: RunSpec) -> tuple[str, tuple[str, ...]]:
    """What decides whether two runs can share a generator instance: the preset and any
    ``generator.*`` override (config files are the same for every run)."""
    sets = [s for s in list(plan.set) + list(run.set) if s.startswith("generator.")]
    return (run.generator_preset, tuple(sets))


def model_loads(plan: Plan, steps: list[Step]) -> dict[str, dict]:
    """"model  [how]" -> {"model", "loads", "how"}: what the schedule loads, how, how often."""
    loads: dict[str, dict] = {}

    def add(model: str, how: str) -> None:
        entry = loads.setdefault(f"{model}  [{how}]", {"model": model, "loads": 0, "how": how})
        entry["loads"] += 1

    for step in steps:
        if isinstance(step, ServerStep):
            add(step.model, f"vLLM server ({step.role})")
        elif isinstance(step, GenerateGroupStep):
            for _ in dict.fromkeys(generator_settings(plan, s.run) for s in step.group):
                add(step.model, "in-process, one process for all its runs (per distinct generator.* settings)")
        if not isinstance(step, PhaseStep):
            continue
        if step.phase == "generate":
            add(step.run.generator_preset, "in-process, one `orig eval --phase generate` per run, back to back")
        elif step.phase == "agent" and step.run.retrieves:
            add("CLIP embedder (embed.preset)", "in-process, once per retrieving agent phase (small)")
        if not plan.serve and step.phase == "agent" and step.run.uses_backbone:
            add(step.run.backbone_preset, "per agent phase (serve: false: the config's backend)")
        elif not plan.serve and step.phase in ("judge", "retrieval"):
            add(plan.judge.preset, "per judge/retrieval phase (serve: false: the config's backend)")
    return loads


def agent_phase_lines(plan: Plan) -> list[str]:
    """Which runs share an agent phase and why (the resolved settings the agent reads)."""
    from orig_local.study.share import agent_sources, sharing_reasons

    sources, reasons = agent_sources(plan), sharing_reasons(plan)
    own = [r for r in plan.runs if r.uses_backbone and sources[r.label] == r.label]
    lines = [f"agent phases: {len(own)} with the backbone for {sum(r.uses_backbone for r in plan.runs)} run(s)"]
    for run in own:
        lines.append(f"  {run.label}: {reasons[run.label]}")
        for twin in (r for r in plan.runs if sources[r.label] == run.label and r.label != run.label):
            lines.append(f"    + {twin.label} (shared: {reasons[twin.label]})")
    return lines + [""]


def render_schedule(plan: Plan, steps: list[Step], n_items: int) -> str:
    from orig_local.study.servers import server_gpus, tensor_parallel

    lines = [f"study {plan.name or ''}: {len(plan.runs)} run(s) x {n_items} item(s) -> {plan.out_dir}",
             f"caches: {plan.resolved_cache_dir() or 'off'}; evidence: {plan.evidence}"
             + (f" ({plan.resolved_evidence_dir()})" if plan.evidence != "live" else ""), ""]
    indent = ""
    for i, step in enumerate(steps, 1):
        text = step.describe()
        if isinstance(step, ServerStep):
            text += f"  (tensor_parallel_size {tensor_parallel(plan, step.model)}, {server_gpus(plan)})"
        if isinstance(step, StopStep):
            indent = ""
        lines.append(f"{i:>3}. {indent}{text}")
        if isinstance(step, ServerStep):
            indent = "    "
    lines.append("")
    lines += agent_phase_lines(plan)
    loads = model_loads(plan, steps)
    if loads:
        lines.append("estimated model loads:")
        for entry in loads.values():
            lines.append(f"  {entry['model']:<28} x{entry['loads']}  {entry['how']}")
    else:
        lines.append("estimated model loads: none (nothing left to do)")
    return "\n".join(lines)
