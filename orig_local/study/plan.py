"""A study plan (YAML): one benchmark, many runs, one judge, the GPUs to use.

A plan lists runs explicitly (``runs:``) or as a small grid (``grid:``) that expands to runs;
both may be given (the grid's runs come after the listed ones). Every key is checked: an
unknown or misspelt key is an error, never a silent default. Relative paths are taken as on
the command line (from the folder ``orig study`` runs in), like ``orig eval --data``.

Each run becomes one run folder ``<out>/<label>`` driven phase by phase through ``orig eval``.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from orig_local.conditions import ConditionSpec, condition
from orig_local.configbase import ConfigError, StrictModel, read_yaml

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def _agent_switches() -> set[str]:
    from orig_local.agent.config import AgentConfig

    return set(AgentConfig.model_fields) - {"condition"}


class RunSpec(StrictModel):
    """One run: a condition with its models and agent switches (paper Tables 3-5)."""

    label: str = ""  # run folder name and report row; "" (or null): built from the fields
    condition: str = "orig"  # a name of orig_local.conditions.CONDITIONS
    backbone: str | None = None  # chat preset served for the agent phase; ignored by `direct`
    generator: str | None = None  # generator preset (default: the plan's)
    fixed_rounds: int | None = Field(None, ge=1, le=10)  # Table 4's "+N-Round"
    agent: dict[str, Any] = Field(default_factory=dict)  # ablation switches, e.g. {refinement: false}
    set: list[str] = Field(default_factory=list)  # extra `-s key=value` overrides for this run

    @field_validator("condition")
    @classmethod
    def _known_condition(cls, value: str) -> str:
        condition(value)  # the registry as it is now (a new ConditionSpec entry counts)
        return value

    @field_validator("label", mode="before")
    @classmethod
    def _no_label(cls, value: Any) -> Any:
        return "" if value is None else value  # `label: null` in a plan means "build it"

    @field_validator("agent")
    @classmethod
    def _known_switches(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - _agent_switches())
        if unknown:
            raise ValueError(f"unknown agent switch(es) {', '.join(unknown)}; "
                             f"known: {', '.join(sorted(_agent_switches()))}")
        from orig_local.agent.config import AgentConfig

        try:  # the values too: a bad one must fail here, not hours later in a phase
            AgentConfig(**value)
        except ValidationError as exc:
            raise ValueError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
        return value

    @property
    def spec(self) -> ConditionSpec:
        return condition(self.condition)

    @property
    def uses_backbone(self) -> bool:
        return self.spec.uses_backbone  # Direct sends the raw prompt

    @property
    def retrieves(self) -> bool:
        return self.spec.retrieves  # evidence to judge -> the retrieval-accuracy phase

    def default_label(self) -> str:
        parts = [self.condition.replace("_", "-")]
        if self.uses_backbone and self.backbone:
            parts.append(self.backbone)
        for key, value in sorted(self.agent.items()):
            parts.append(f"no-{key}".replace("_", "-") if value is False else f"{key}={value}".replace("_", "-"))
        if self.fixed_rounds:
            parts.append(f"{self.fixed_rounds}round")
        if self.generator:
            parts.append(self.generator)
        return "_".join(parts)

    # A validated Plan fills every run's generator and (where used) backbone from its
    # defaults; these say so to the type checker and fail clearly on a bare RunSpec.
    @property
    def generator_preset(self) -> str:
        if self.generator is None:
            raise ConfigError(f"run {self.label or self.default_label()!r} has no generator (set `generator:`)")
        return self.generator

    @property
    def backbone_preset(self) -> str:
        """The served backbone of a run that uses one."""
        if not self.uses_backbone or self.backbone is None:
            raise ConfigError(f"run {self.label or self.default_label()!r} ({self.condition}) has no backbone")
        return self.backbone


def _unset() -> list[Any]:
    return [None]


class Grid(StrictModel):
    """The cartesian product of these lists, one run each. A condition without a backbone
    (``direct``) ignores it (and the ablation switches), so its duplicates collapse into one run
    per generator."""

    condition: list[str] = Field(default_factory=lambda: ["orig"], min_length=1)
    backbone: list[str | None] = Field(default_factory=_unset, min_length=1)
    generator: list[str | None] = Field(default_factory=_unset, min_length=1)
    fixed_rounds: list[int | None] = Field(default_factory=_unset, min_length=1)
    agent: list[dict[str, Any]] = Field(default_factory=lambda: [dict[str, Any]()], min_length=1)  # switch sets

    @field_validator("condition")
    @classmethod
    def _known_conditions(cls, value: list[str]) -> list[str]:
        for name in value:
            condition(name)
        return value

    @field_validator("agent")
    @classmethod
    def _known_switches(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for switches in value:
            RunSpec._known_switches(switches)
        return value

    @field_validator("fixed_rounds")
    @classmethod
    def _rounds(cls, value: list[int | None]) -> list[int | None]:
        if any(v is not None and not 1 <= v <= 10 for v in value):
            raise ValueError("fixed_rounds must be between 1 and 10 (or null: adaptive)")
        return value

    def expand(self) -> list[RunSpec]:
        runs, seen = [], set()
        for cond, bb, gen, rounds, switches in itertools.product(
                self.condition, self.backbone, self.generator, self.fixed_rounds, self.agent):
            if not condition(cond).uses_backbone:  # no agent: backbone, rounds and switches do not apply
                bb, rounds, switches = None, None, {}
            key = (cond, bb, gen, rounds, tuple(sorted(switches.items())))
            if key in seen:
                continue
            seen.add(key)
            runs.append(RunSpec(condition=cond, backbone=bb, generator=gen, fixed_rounds=rounds, agent=switches))
        return runs


class JudgeSpec(StrictModel):
    preset: str = "qwen2.5-vl-72b"  # paper §4: a VLM judge; ours the open Qwen2.5-VL-72B
    name: str | None = None  # store verdicts as judge-<name>.jsonl


class GpuSpec(StrictModel):
    # CUDA_VISIBLE_DEVICES for every server and phase of the study; null leaves it as it is.
    devices: list[int] | None = None
    # How many of those GPUs a vLLM server may use (the first ones); null = all of `devices`.
    server_gpus: int | None = Field(None, ge=1)
    # Per preset: tensor-parallel size to serve it with instead of the preset's own value
    # (e.g. qwen2.5-vl-72b: 2 on H200s, where the preset says 4 for 80 GB cards).
    tensor_parallel: dict[str, int] = Field(default_factory=dict)


class Plan(StrictModel):
    name: str | None = None  # shown in reports and logs; default: the plan file's name
    out: str  # study folder: <out>/<label>/ per run, <out>/report, <out>/logs, <out>/study.jsonl

    # --- benchmark (as `orig eval --benchmark/--data/--classes/--ids/--limit`)
    benchmark: str = "figeval"
    data: str
    classes: list[str] | None = None
    ids: list[str] | None = None
    limit: int | None = Field(None, ge=1)
    include_others: bool = False
    seed: int | None = None  # eval.seed (same for every run: conditions differ only by design)

    # --- runs
    generator: str | None = None  # default generator for runs that name none
    backbone: str | None = None  # default backbone for runs that name none
    runs: list[RunSpec] = Field(default_factory=list)
    grid: Grid | None = None
    judge: JudgeSpec = Field(default_factory=JudgeSpec)
    retrieval_accuracy: bool = True  # judge gold facts against the evidence (Eq. 12) for orig*
    # Runs whose agent reads the same resolved settings (reference capacity, P̂'s token bound
    # and tokenizer included: study/share.py) share one agent phase; false: one agent phase each.
    share_agent: bool = True
    # grouped: the runs of one generator share ONE process and generator instance (loaded
    # once, unloaded at the end); per_run: one `orig eval --phase generate` process per run.
    generation: Literal["grouped", "per_run"] = "grouped"

    # --- config shared by every run
    config: list[str] = Field(default_factory=list)  # config files / packaged names (-c)
    set: list[str] = Field(default_factory=list)  # overrides for every run (-s)
    # Caches shared by every run (chat calls at temperature 0, searches, CLIP embeddings, corpus
    # index): null = <out>/cache, so a study is self-contained; "" turns caches off.
    cache_dir: str | None = None
    # Evidence: record = every run records into one snapshot (<evidence_dir>); replay = every run
    # is served from that snapshot (no network, identical evidence across conditions and
    # backbones); live = no snapshot.
    evidence: Literal["record", "replay", "live"] = "live"
    evidence_dir: str | None = None  # null = <out>/evidence

    # --- servers and GPUs
    serve: bool = True  # start a vLLM server per backbone and for the judge (false: configs say where)
    vllm_bin: str | None = None  # default: $ORIG_VLLM_BIN, else `vllm` on PATH
    host: str = "127.0.0.1"
    startup_timeout_s: float = Field(1800.0, gt=0)  # first start downloads weights: minutes for 72B
    gpus: GpuSpec = Field(default_factory=GpuSpec)

    @field_validator("set")
    @classmethod
    def _overrides(cls, value: list[str]) -> list[str]:
        for item in value:
            if "=" not in item:
                raise ValueError(f"override {item!r} is not of the form key.path=value")
        return value

    @model_validator(mode="after")
    def _expand(self) -> Plan:
        runs = [r.model_copy() for r in self.runs] + (self.grid.expand() if self.grid else [])
        if not runs:
            raise ValueError("the plan has no runs: give `runs:` or `grid:`")
        done = []
        for r in runs:
            updates = {}
            if r.generator is None:
                updates["generator"] = self.generator
            if r.uses_backbone and r.backbone is None:
                updates["backbone"] = self.backbone
            r = r.model_copy(update=updates)
            if r.generator is None:
                raise ValueError(f"run {r.label or r.default_label()!r} has no generator (set `generator:`)")
            if r.uses_backbone and r.backbone is None:
                raise ValueError(f"run {r.label or r.default_label()!r} ({r.condition}) needs a backbone")
            label = r.label or r.default_label()
            if not _LABEL.match(label):
                raise ValueError(f"run label {label!r}: use letters, digits, '.', '_', '+', '-' (it is a folder name)")
            done.append(r.model_copy(update={"label": label}))
        labels = [str(r.label) for r in done]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ValueError(f"two runs share the label(s) {', '.join(dupes)}: give each a distinct `label`")
        object.__setattr__(self, "runs", done)
        object.__setattr__(self, "grid", None)  # expanded into runs
        return self

    # ------------------------------------------------------------------ derived
    @property
    def out_dir(self) -> Path:
        return Path(self.out).expanduser()

    def run_dir(self, run: RunSpec) -> Path:
        return self.out_dir / str(run.label)  # set for every run once the plan is validated

    def resolved_cache_dir(self) -> str:
        return str(self.out_dir / "cache") if self.cache_dir is None else self.cache_dir

    def resolved_evidence_dir(self) -> Path:
        return Path(self.evidence_dir).expanduser() if self.evidence_dir else self.out_dir / "evidence"

    def backbones(self) -> list[str]:
        """Backbone presets in first-use order (servers start in this order)."""
        return list(dict.fromkeys(r.backbone_preset for r in self.runs if r.uses_backbone))

    def generators(self) -> list[str]:
        return list(dict.fromkeys(r.generator_preset for r in self.runs))

    def phases(self, run: RunSpec) -> list[str]:
        """The phases this run goes through, in order."""
        return ["agent", "generate", "judge"] + (["retrieval"] if self.retrieval_accuracy and run.retrieves else [])


def _first_line(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "plan"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        parts.append(f"{where}: {msg}")
    return "; ".join(parts)


def parse_plan(data: dict[str, Any], source: str = "plan") -> Plan:
    """Validate a plan mapping; errors come back as one :class:`ConfigError` line."""
    try:
        plan = Plan(**data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_first_line(exc)}") from exc
    except TypeError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    return plan


def load_plan(path: str | Path, out: str | None = None) -> Plan:
    """Read and validate a plan file; ``out`` replaces its ``out`` (e.g. ``--out``)."""
    path = Path(path)
    data = read_yaml(path)
    if out is not None:
        data["out"] = out
    data.setdefault("name", path.stem)
    plan = parse_plan(data, str(path))
    check_presets(plan, str(path))
    return plan


def check_presets(plan: Plan, source: str = "plan") -> None:
    """Every preset the plan names must exist, chat presets must be servable, and a served
    model must fit the GPUs the plan gives servers."""
    from orig_local.presets import load_preset

    def preset(name: str, what: str):
        try:
            return load_preset(name)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {what}: {exc}") from None

    chat = list(plan.backbones()) + [plan.judge.preset]
    for name in plan.generators():
        preset(name, "generator")
    for name in chat:
        p = preset(name, "backbone/judge")
        if plan.serve and p.serve is None:
            raise ConfigError(f"{source}: preset {name!r} has no `serve` section: it cannot be served by vLLM")
    if plan.serve:
        _check_server_gpus(plan, source, {name: preset(name, "backbone/judge") for name in chat})
    # Each run's config resolves (config files, -s overrides, switches): a typo fails now,
    # with the run named, not hours later in a phase.
    from orig_local.config import load_config

    for run in plan.runs:
        try:
            load_config(list(plan.config), run_overrides(plan, run))
        except ConfigError as exc:
            raise ConfigError(f"{source}: run {run.label}: {' '.join(str(exc).split())}") from None
    unknown_tp = sorted(set(plan.gpus.tensor_parallel) - set(chat))
    if unknown_tp:
        raise ConfigError(f"{source}: gpus.tensor_parallel names presets no run serves: {', '.join(unknown_tp)}")


def run_overrides(plan: Plan, run: RunSpec) -> list[str]:
    """``-s`` overrides that make this run what the plan says (shared caches and evidence too).
    Here, not in study/commands.py (which imports it), because :func:`check_presets` resolves
    every run's config with them."""
    # The plan's own keys first, so an explicit `set:` of the plan or the run wins.
    sets = [f"cache_dir={plan.resolved_cache_dir()}",
            f"eval.retrieval_accuracy={str(plan.retrieval_accuracy).lower()}"]
    if plan.seed is not None:
        sets.append(f"eval.seed={plan.seed}")
    sets += plan.set
    if run.fixed_rounds is not None:
        sets.append(f"agent.fixed_rounds={run.fixed_rounds}")
    for key, value in sorted(run.agent.items()):
        sets.append(f"agent.{key}={_yaml_value(value)}")
    sets += run.set
    return sets


def _yaml_value(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    return str(value)


def _check_server_gpus(plan: Plan, source: str, presets: dict) -> None:
    """Every server of the plan fits the GPUs the plan gives servers, checked before anything
    starts (a 72B server that cannot fit would otherwise fail after the 7B and 32B phases ran).
    All misfits are named at once."""
    devices, server_gpus = plan.gpus.devices, plan.gpus.server_gpus
    if devices is not None and server_gpus is not None and server_gpus > len(devices):
        raise ConfigError(f"{source}: gpus.server_gpus={server_gpus} but gpus.devices lists {len(devices)} GPU(s) "
                          f"({', '.join(map(str, devices)) or 'none'}); list more devices or lower server_gpus")
    avail = server_gpus or (len(devices) if devices else None)
    if avail is None:
        return
    misfits = []
    for name, p in presets.items():
        tp = plan.gpus.tensor_parallel.get(name, p.serve.tensor_parallel_size)
        if tp > avail:
            misfits.append(f"{name} (tensor_parallel_size={tp})")
    if misfits:
        names = ", ".join(dict.fromkeys(misfits))
        raise ConfigError(f"{source}: the plan gives servers {avail} GPU(s) but {names} need(s) more; "
                          f"set gpus.tensor_parallel.<preset>, gpus.server_gpus or gpus.devices")
