"""What an agent run produced: :class:`AgentResult` (P̂, the ordered references and how they came
about), the Oracle condition's gold evidence (:class:`OracleEvidence`), and the run's stop
reason and status vocabularies. Kept apart from the loop (:mod:`orig_local.agent.agent`) so
that what reads a result (:mod:`orig_local.agent.status`, output writers, the harness) does not
import the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from orig_local.agent.knowledge import ImageEvidence, KnowledgeBase
from orig_local.agent.stages.refinement import Reference
from orig_local.agent.trace import Trace

StopReason = Literal["sufficient", "max_rounds", "no_new_evidence", "error"]
Status = Literal["ok", "degraded", "failed"]


@dataclass
class OracleEvidence:
    """Gold references of a benchmark item (the Oracle condition): text lines and images
    (PIL images, paths or bytes)."""

    text: list[str] = field(default_factory=list)
    images: list[Any] = field(default_factory=list)
    source: str | None = None  # e.g. "figeval:<prompt id>"


@dataclass
class AgentResult:
    """What one run produced. ``final_prompt`` and ``references`` (ordered, as cited by the
    prompt) are what the generator receives; everything else explains how they came about."""

    prompt: str
    condition: str
    final_prompt: str
    references: list[ImageEvidence] = field(default_factory=list)
    reference_notes: list[Reference] = field(default_factory=list)  # F^v per reference, same order
    text_features: list[str] = field(default_factory=list)  # F^t
    stop_reason: StopReason | None = None  # None for conditions without a retrieval loop
    rounds: int = 0  # loop rounds run
    bootstrapped: bool = False
    parametric_only: bool = False  # retrieval was wanted but every search failed
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # a fatal error (the run was cut short); stage errors are in trace
    # ok | degraded (some replies invalid, the run went on) | failed (the condition could not run
    # as specified: backbone unreachable, loop stopped on an error, generator raised); see assess()
    status: Status = "ok"
    failure: str | None = None  # why the run is failed or degraded
    transport_failure: bool = False  # a backbone request got no reply (connection, timeout, HTTP)
    knowledge: KnowledgeBase = field(default_factory=KnowledgeBase)
    trace: Trace = field(default_factory=Trace)
    generation: Any = None  # GenerationResult when a generator is configured
    seconds: float = 0.0
    item_id: str | None = None

    @property
    def iterations(self) -> int:
        """Retrieval iterations as the paper's Table 4 counts them (bootstrap included)."""
        return self.rounds + int(self.bootstrapped)

    @property
    def image(self):
        return None if self.generation is None else self.generation.image

    def to_json(self) -> dict[str, Any]:
        gen = self.generation
        return {
            "item_id": self.item_id,
            "labels": list(self.trace.labels),  # stand-ins (simulated backbone, tiny weights)
            "prompt": self.prompt,
            "condition": self.condition,
            "final_prompt": self.final_prompt,
            "references": [r.model_dump(mode="json") for r in self.references],
            "reference_notes": [r.model_dump(mode="json") for r in self.reference_notes],
            "text_features": self.text_features,
            "stop_reason": self.stop_reason,
            "rounds": self.rounds,
            "iterations": self.iterations,
            "parametric_only": self.parametric_only,
            "notes": self.notes,
            "error": self.error,
            "status": self.status,
            "failure": self.failure,
            "transport_failure": self.transport_failure,
            "stage_errors": self.trace.errors(),
            "seconds": round(self.seconds, 3),
            "generation": None if gen is None else {
                "seed": gen.seed, "seconds": gen.seconds, "references_used": gen.references_used,
                "notes": gen.notes, "params": gen.params,
            },
            "knowledge": self.knowledge.to_json(),
            "trace": self.trace.to_json(),
        }

    def save(self, out_dir: str | Path, config: Any = None) -> Path:
        """Write the output folder (see :func:`orig_local.agent.output.write_outputs`)."""
        from orig_local.agent.output import write_outputs

        return write_outputs(self, out_dir, config=config)
