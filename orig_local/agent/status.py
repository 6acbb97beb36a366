"""Whether an agent run did what its condition asks: ``ok``, ``degraded`` or ``failed``.

A stage never raises for model or web trouble; it falls back (P instead of an enhanced prompt,
the assembled template instead of an extended one). That keeps a run going, but a fallback must
not look like a result: :func:`assess` reads the run's error, stop reason and trace and says
which it is, and why.
"""

from __future__ import annotations

from orig_local.agent.result import AgentResult, Status
from orig_local.agent.text import has_content
from orig_local.conditions import condition
from orig_local.llm.base import is_transport_error


def assess(result: AgentResult) -> AgentResult:
    """Set ``status``/``failure``/``transport_failure`` from the run's error, stop reason and trace.

    failed: the run was cut short; a backbone request got no reply for a transport/server reason
    (connection refused, timeout, HTTP error); P̂ is empty or content-free; the loop stopped with ``error``; the only backbone
    stage of prompt_enhanced failed; or the generator raised. degraded: other stage errors
    (invalid replies, failed searches/reads) or every search failed, but the run went on."""
    errors = [r for r in result.trace.records if r.error]
    transport = [r for r in errors if is_transport_error(r.error)]
    enhance = [r for r in errors if r.stage == "enhance"]
    generation = [r for r in errors if r.stage == "generation"]

    def first(records) -> str:
        return f"{records[0].stage}/{records[0].step}: {records[0].error}"[:500]

    status: Status = "ok"
    failure: str | None = None
    if result.error:
        status, failure = "failed", result.error
    elif not has_content(result.final_prompt):
        status, failure = "failed", "the final prompt is empty or has no words: nothing to generate from"
    elif transport:
        status, failure = "failed", f"backbone request failed ({first(transport)})"
    elif result.stop_reason == "error":
        loop = [r for r in errors if r.stage in ("planning", "sufficiency")] or errors
        failure = "the retrieval loop stopped on a backbone error" + (f" ({first(loop)})" if loop else "")
        status = "failed"
    elif condition(result.condition).enhances and enhance:
        status, failure = "failed", f"prompt enhancement failed; P kept as is ({first(enhance)})"
    elif generation:
        status, failure = "failed", f"generation failed ({first(generation)})"
    elif errors:
        status, failure = "degraded", f"{len(errors)} stage error(s); first: {first(errors)}"
        consolidation = [r for r in errors if r.step == "consolidate"]
        if consolidation:  # K unmerged: later stages cut it to fit, the row must say so first
            rounds = ", ".join(str(r) for r in sorted({r.round for r in consolidation}))
            failure = (f"knowledge consolidation failed ({len(consolidation)} call(s), round {rounds}): new "
                       f"entries kept unmerged; {failure}")
    elif result.parametric_only:
        status, failure = "degraded", "every search failed: the prompt rests on the backbone's own knowledge"
    result.status, result.failure = status, failure
    result.transport_failure = bool(transport) or is_transport_error(result.error)
    if result.transport_failure:
        # "search unavailable ... rests on the backbone's own knowledge" would blame the wrong part
        result.notes = [n for n in result.notes if not n.startswith("search unavailable")]
        result.notes.append(f"backbone unreachable: {failure}")
    return result
