"""Config section for the ORIG agent (conditions, ablations, loop bounds)."""

from __future__ import annotations

from typing import Literal

from orig_local.configbase import StrictModel


class AgentConfig(StrictModel):
    condition: Literal["direct", "prompt_enhanced", "oracle", "orig", "orig_txt", "orig_img"] = "orig"
    max_rounds: int = 3
