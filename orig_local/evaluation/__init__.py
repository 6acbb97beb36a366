"""FIG-Eval harness: benchmark loaders, an open VLM judge, paper-exact scoring, phased
resumable runs and reports. Attributes are resolved lazily so importing this stays cheap."""

from __future__ import annotations

from orig_local._lazy import lazy_getattr

_LAZY = {
    "load_benchmark": "orig_local.evaluation.loaders:load_benchmark",
    "LOADERS": "orig_local.evaluation.loaders:LOADERS",
    "BenchmarkItem": "orig_local.evaluation.items:BenchmarkItem",
    "Question": "orig_local.evaluation.items:Question",
    "GoldFact": "orig_local.evaluation.items:GoldFact",
    "summarize": "orig_local.evaluation.items:summarize",
    "Judge": "orig_local.evaluation.judge:Judge",
    "parse_verdict": "orig_local.evaluation.judge:parse_verdict",
    "load_run": "orig_local.evaluation.results:load_run",
    "run_phases": "orig_local.evaluation.orchestrate:run_phases",
    "AgentOutput": "orig_local.evaluation.phases.common:AgentOutput",
    "merge_runs": "orig_local.evaluation.merge:merge_runs",
    "human_agreement": "orig_local.evaluation.agreement:human_agreement",
    "build_report": "orig_local.evaluation.report:build_report",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = list(_LAZY)
