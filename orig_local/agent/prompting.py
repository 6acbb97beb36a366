"""Instruction templates: one jinja file per stage step, rendered strictly.

The package folder ``orig_local/agent/prompts/`` is the default. ``Config.prompts_dir`` points
at a folder of changed templates for a prompt ablation; each file found there replaces the
packaged one, the rest stay packaged (the policy of :mod:`orig_local.templates`, shared with
the judges; a file there that no template is named like is an error). Undefined variables are
errors (``StrictUndefined``).

Each template puts its fixed instruction first and the variable evidence last, so requests of
the same stage share a long prefix and vLLM's prefix cache can reuse it.
"""

from __future__ import annotations

from pathlib import Path

from orig_local.templates import SUFFIX, PromptTemplates

PACKAGE_PROMPTS = Path(__file__).parent / "prompts"

__all__ = ["PACKAGE_PROMPTS", "SUFFIX", "PromptLibrary"]


class PromptLibrary(PromptTemplates):
    """The agent's templates: ``directory`` (a prompt ablation) over the packaged ones."""

    def __init__(self, directory: str | Path | None = None):
        super().__init__(PACKAGE_PROMPTS, directory)
        self.directory = self.override or PACKAGE_PROMPTS

    @staticmethod
    def required() -> list[str]:
        """Every template the agent uses (the packaged folder's contents)."""
        return sorted(p.stem for p in PACKAGE_PROMPTS.glob(f"*{SUFFIX}"))
