"""Config sections of the upper layers (the agent, the evaluation harness), defined below them.

The root :class:`~orig_local.config.Config` composes one section per subsystem. The lower
layers keep theirs beside their code (``llm/config.py``, ``retrieval/config.py``, ...); the
agent's and the harness's sections live here, so ``orig_local/config.py`` - which every layer
reads - imports nothing from ``orig_local.agent`` or ``orig_local.evaluation``. Their old
import paths (``orig_local.agent.config``, ``orig_local.evaluation.config``) re-export them.
"""
