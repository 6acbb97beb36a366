"""The harness's config section, :class:`EvalConfig` (defined in
:mod:`orig_local.sections.evaluation`, below the root config, so ``orig_local/config.py`` does
not import the evaluation package)."""

from orig_local.sections.evaluation import EvalConfig

__all__ = ["EvalConfig"]
