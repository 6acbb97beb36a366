"""The ORIG agent: stages, loop, conditions/ablations, trace, outputs.

Kept light: the public names below resolve on first access, so ``import orig_local.agent``
(and ``orig --help``) imports no stage code and no heavy library.
"""

from __future__ import annotations

from orig_local._lazy import lazy_getattr

_LAZY = {
    "Agent": "orig_local.agent.agent:Agent",
    "AgentResult": "orig_local.agent.result:AgentResult",
    "OracleEvidence": "orig_local.agent.result:OracleEvidence",
    "AgentConfig": "orig_local.agent.config:AgentConfig",
    "KnowledgeBase": "orig_local.agent.knowledge:KnowledgeBase",
    "PromptLibrary": "orig_local.agent.prompting:PromptLibrary",
    "Trace": "orig_local.agent.trace:Trace",
    "build_agent": "orig_local.agent.factory:build_agent",
    "run_agent": "orig_local.agent.factory:run_agent",
    "arun_agent": "orig_local.agent.factory:arun_agent",
    "write_outputs": "orig_local.agent.output:write_outputs",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = list(_LAZY)
