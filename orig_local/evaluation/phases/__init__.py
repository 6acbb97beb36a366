"""The phases of a benchmark run, one file each (agent, generate, judge; the ``retrieval``
phase, retrieval accuracy, is ``retrieval_accuracy.py``).

:data:`PHASES` is the one list of phase names, in run order, with what each needs; CLI
choices, defaults and the orchestrator's dispatch derive from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orig_local.config import Config


@dataclass(frozen=True)
class Phase:
    """A phase: the model role it needs (``backbone`` only when the condition uses one), the
    phase whose rows it reads, and whether ``--phase all`` runs it (retrieval: only for
    conditions that retrieve, with ``eval.retrieval_accuracy``)."""

    name: str
    needs: str  # backbone | generator | judge
    reads: str | None
    help: str


PHASES: dict[str, Phase] = {p.name: p for p in (
    Phase("agent", "backbone", None, "prompt -> extended prompt, references, evidence, trace"),
    Phase("generate", "generator", "agent", "one image per prompt"),
    Phase("judge", "judge", "generate", "every benchmark question about every image"),
    Phase("retrieval", "judge", "agent", "retrieval accuracy: gold facts against the evidence (Eq. 12)"),
)}
PHASE_NAMES: tuple[str, ...] = tuple(PHASES)


def default_phases(config: Config) -> list[str]:
    """What ``--phase all`` runs for ``config``."""
    return [name for name in PHASE_NAMES
            if name != "retrieval" or (config.eval.retrieval_accuracy and config.agent.retrieves)]


def check_phase(name: str) -> Phase:
    from orig_local.errors import UsageError

    try:
        return PHASES[name]
    except KeyError:
        raise UsageError(f"unknown phase {name!r}; phases: {', '.join(PHASE_NAMES)}") from None
