"""The agent's config section, :class:`AgentConfig` (defined in :mod:`orig_local.sections.agent`,
below the root config, so ``orig_local/config.py`` does not import the agent package)."""

from orig_local.sections.agent import AgentConfig, StageImages

__all__ = ["AgentConfig", "StageImages"]
