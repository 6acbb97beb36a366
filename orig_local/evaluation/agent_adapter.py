"""Wire the ORIG agent (orig_local.agent) into the benchmark's agent phase.

One Agent is built for the whole phase (backbone, retriever, no generator: images come in the
generate phase). Each item runs ``Agent.run``; its result becomes an :class:`AgentOutput`:
final prompt, ordered reference images, the knowledge base as evidence (for retrieval accuracy),
per-stage totals from the trace (cost tables) and the full result JSON as the trace file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.phases.common import AgentOutput

if TYPE_CHECKING:
    from orig_local.agent.agent import Agent, AgentResult, OracleEvidence
    from orig_local.config import Config



def oracle_evidence(item: BenchmarkItem, benchmark: str = "figeval") -> OracleEvidence:
    """The item's gold references in the agent's Oracle form."""
    from orig_local.agent.agent import OracleEvidence

    texts = [f.text for f in item.facts if f.modality == "text"] or [
        ln.strip() for ln in item.reference_text.splitlines() if ln.strip()]
    return OracleEvidence(text=texts, images=[str(p) for p in item.reference_image_paths()],
                          source=f"{benchmark}:{item.id}")


def to_output(result: AgentResult) -> AgentOutput:
    """An :class:`orig_local.agent.AgentResult` as the runner's AgentOutput."""
    data = result.to_json()
    kb = result.knowledge
    return AgentOutput(
        final_prompt=result.final_prompt,
        references=[r.image for r in result.references if r.image is not None],
        evidence_texts=[t.text for t in kb.texts],
        evidence_images=[v.image for v in kb.images if v.image is not None],
        stages=data["trace"]["totals"],
        rounds=result.rounds,
        iterations=result.iterations,
        stop_reason=result.stop_reason,
        trace=data,
        notes=list(result.notes),
        error=result.error,
        status=getattr(result, "status", "ok"),
        failure=getattr(result, "failure", None),
        transport=getattr(result, "transport_failure", False),
    )


def make_agent_fn(config: Config, agent: Agent | None = None
                  ) -> tuple[Callable[[BenchmarkItem], Awaitable[AgentOutput]], Callable[[], Awaitable[None]]]:
    """(async agent callable, async closer) for ``config.agent.condition``."""
    from orig_local.agent.factory import build_agent

    agent = agent or build_agent(config, generator=False)
    needs_oracle = config.agent.spec.needs_oracle
    benchmark = config.eval.benchmark

    async def run(item: BenchmarkItem) -> AgentOutput:
        oracle = oracle_evidence(item, benchmark) if needs_oracle else None
        result = await agent.run(item.prompt, item=item, oracle=oracle)
        return to_output(result)

    return run, agent.aclose
