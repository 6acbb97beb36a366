"""Where a study stands, read from its run folders' JSONL rows (nothing else is stored).

A row is *done* when its ``status`` is ``ok`` or ``degraded`` (older rows without ``status``:
when ``error`` is empty) and *failed* otherwise; a selected item without a row is *pending*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orig_local.study.plan import Plan, RunSpec

PHASES = ("agent", "generate", "judge", "retrieval")


def row_state(row: dict) -> str:
    """ok | degraded | failed for one result row (new rows carry `status`, old ones `error`)."""
    status = row.get("status")
    if status in ("ok", "degraded", "failed"):
        return status
    if status is not None:  # a status this version does not know: never count it as success
        return "failed"
    return "failed" if row.get("error") else "ok"


@dataclass
class PhaseCounts:
    done: int = 0
    degraded: int = 0  # included in done
    failed: int = 0
    pending: int = 0
    pending_ids: list[str] = field(default_factory=list)
    failed_ids: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.pending == 0 and self.failed == 0

    def todo(self, retry_failed: bool) -> int:
        """Items a rerun of this phase would process."""
        return self.pending + (self.failed if retry_failed else 0)

    def cell(self) -> str:
        return f"{self.done}/{self.failed}/{self.pending}" + ("*" if self.degraded else "")


def select_ids(plan: Plan) -> list[str]:
    """The item ids every run covers: the same selection `orig eval` makes from the same flags."""
    from orig_local.errors import DataError
    from orig_local.evaluation.loaders import load_benchmark
    from orig_local.evaluation.phases.common import select_items

    if not Path(plan.data).expanduser().exists():
        raise DataError(f"the plan's data {plan.data!r} does not exist", hint="set `data:` to the benchmark folder/file")
    items = load_benchmark(plan.benchmark, str(Path(plan.data).expanduser()), classes=plan.classes, include_others=plan.include_others)
    return [it.id for it in select_items(items, ids=plan.ids, limit=plan.limit)]


def phase_counts(run_dir: Path, phase: str, ids: list[str], judge_name: str | None = None) -> PhaseCounts:
    from orig_local.evaluation.jsonl_store import iter_rows
    from orig_local.evaluation.rundir import phase_file, shard_files

    # id -> state only, streamed (first row wins, as read_phase): a study's status over many
    # 50k-item runs does not hold their rows
    states: dict[str, str] = {}
    if run_dir.is_dir():
        main = phase_file(run_dir, phase, judge_name)
        for path in [main] + shard_files(run_dir, main.name[: -len(".jsonl")]):
            for row in iter_rows(path):
                states.setdefault(row["id"], row_state(row))
    counts = PhaseCounts()
    for item_id in ids:
        state = states.get(item_id)
        if state is None:
            counts.pending += 1
            counts.pending_ids.append(item_id)
            continue
        if state == "failed":
            counts.failed += 1
            counts.failed_ids.append(item_id)
        else:
            counts.done += 1
            counts.degraded += state == "degraded"
    return counts


def study_status(plan: Plan, ids: list[str] | None = None) -> dict[str, dict[str, PhaseCounts]]:
    """label -> phase -> counts, for the phases each run goes through."""
    ids = select_ids(plan) if ids is None else ids
    return {run.label: {phase: phase_counts(plan.run_dir(run), phase, ids, plan.judge.name)
                        for phase in plan.phases(run)} for run in plan.runs}


def run_failed(status: dict[str, PhaseCounts]) -> bool:
    return any(c.failed for c in status.values())


def status_table(plan: Plan, status: dict[str, dict[str, PhaseCounts]], markdown: bool = False) -> str:
    """Runs x phases, each cell done/failed/pending (``*``: some done rows are degraded)."""
    header = ["run", "condition", "backbone", "generator", *PHASES, "state"]
    rows = []
    for run in plan.runs:
        st = status[run.label]
        cells = [st[p].cell() if p in st else "-" for p in PHASES]
        if any(c.failed for c in st.values()):
            state = "FAILED ITEMS"
        elif all(c.complete for c in st.values()):
            state = "done"
        else:
            state = "pending"
        rows.append([run.label, run.condition, run.backbone_preset if run.uses_backbone else "-", run.generator_preset,
                     *cells, state])
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows]
    lines.append("")
    lines.append("cells: done/failed/pending items (* = some done rows are degraded); "
                 "'-' = the phase does not apply to the run")
    return "\n".join(lines)


def describe(run: RunSpec) -> str:
    bits: list[str] = [run.condition]
    if run.uses_backbone:
        bits.append(f"backbone {run.backbone}")
    bits.append(f"generator {run.generator}")
    if run.fixed_rounds:
        bits.append(f"fixed_rounds {run.fixed_rounds}")
    bits += [f"agent.{k}={v}" for k, v in sorted(run.agent.items())]
    return ", ".join(bits)
