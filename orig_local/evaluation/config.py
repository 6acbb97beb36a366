"""Config section for benchmark runs."""

from __future__ import annotations

from orig_local.configbase import StrictModel


class EvalConfig(StrictModel):
    benchmark: str = "figeval"
