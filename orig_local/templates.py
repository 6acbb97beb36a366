"""Jinja templates, one policy for every role: one environment factory and one prompt loader.

Prompts (the agent's ``agent/prompts/``, the judges' ``evaluation/templates/``) are rendered by
:class:`PromptTemplates`: each file is looked up first in the user's ``Config.prompts_dir`` and
falls back, file by file, to the packaged copy, so a prompt ablation holds only the templates it
changes. A ``*.jinja`` file in ``prompts_dir`` that no role knows is an error (a misspelt
override must never be silently ignored); which files were overridden is logged. Undefined
variables are errors (``StrictUndefined``) everywhere.

HTML reports (the agent's trace, the evaluation gallery) use the same factory with autoescape.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

from orig_local.errors import OrigError

log = logging.getLogger(__name__)

SUFFIX = ".jinja"
_PACKAGE = Path(__file__).parent
# Every packaged prompt folder: a prompts_dir may override a file of any of them.
PACKAGED_PROMPT_DIRS: tuple[Path, ...] = (_PACKAGE / "agent" / "prompts", _PACKAGE / "evaluation" / "templates")


class TemplateError(OrigError, FileNotFoundError):
    """A prompt folder that is missing or holds a template no role uses."""


def environment(*dirs: str | Path, autoescape: bool = False, trim_blocks: bool = True) -> jinja2.Environment:
    """The one Jinja environment factory: ``dirs`` searched in order, StrictUndefined,
    autoescape for HTML only. ``trim_blocks`` (with ``lstrip_blocks``) drops the newline after
    a block tag; the judge templates are written without it and keep their exact text."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
        undefined=jinja2.StrictUndefined,
        autoescape=autoescape,
        trim_blocks=trim_blocks,
        lstrip_blocks=trim_blocks,
        keep_trailing_newline=False,
        # templates are fixed for a run: no stat() of the file on every render (7.7k per 256
        # prompts; a run that edits its prompts mid-way would mix two prompt versions anyway)
        auto_reload=False,
    )


def known_template_names() -> set[str]:
    """File names (with suffix) of every packaged prompt template."""
    return {p.name for d in PACKAGED_PROMPT_DIRS for p in d.glob(f"*{SUFFIX}")}


class PromptTemplates:
    """Prompt templates of one role: ``override`` (the user's ``prompts_dir``) first, then the
    packaged folder, per file."""

    def __init__(self, packaged: str | Path, override: str | Path | None = None, *, trim_blocks: bool = True):
        self.packaged = Path(packaged)
        self.override = Path(override) if override else None
        if self.override is not None:
            if not self.override.is_dir():
                raise TemplateError(f"prompt folder not found: {self.override}")
            unknown = sorted(p.name for p in self.override.glob(f"*{SUFFIX}") if p.name not in known_template_names())
            if unknown:
                raise TemplateError(
                    f"prompt folder {self.override} holds {', '.join(unknown)}, which no template of the "
                    f"package has (a misspelt name?); template names: {', '.join(sorted(known_template_names()))}")
            if self.overridden():
                log.info("prompts from %s: %s (the others are the packaged ones)", self.override,
                         ", ".join(self.overridden()))
        dirs = [d for d in (self.override, self.packaged) if d is not None]
        self.env = environment(*dirs, trim_blocks=trim_blocks)
        self._constant: dict[str, str] = {}  # renders of templates called without variables
        self._compiled: dict[str, tuple[Any, dict[str, Any]]] = {}  # file -> (template, its globals)

    def packaged_names(self) -> list[str]:
        """Stems of the role's packaged templates."""
        return sorted(p.stem for p in self.packaged.glob(f"*{SUFFIX}"))

    def names(self) -> list[str]:
        """Stems of every template this loader can render."""
        own = {p.stem for p in self.override.glob(f"*{SUFFIX}")} & set(self.packaged_names()) if self.override else set()
        return sorted(set(self.packaged_names()) | own)

    def overridden(self) -> list[str]:
        """Stems of the role's templates that come from ``override``."""
        if self.override is None:
            return []
        return sorted(set(self.packaged_names()) & {p.stem for p in self.override.glob(f"*{SUFFIX}")})

    def render(self, name: str, **variables: Any) -> str:
        """Render ``name`` (with or without the ``.jinja`` suffix), stripped."""
        file = name if name.endswith(SUFFIX) else name + SUFFIX
        if not variables:  # a template without variables (the system turn) renders the same each time
            text = self._constant.get(file)
            if text is None:
                text = self._constant[file] = self.env.get_template(file).render().strip()
            return text
        return self._render(file, variables).strip()

    def _render(self, file: str, variables: dict[str, Any]) -> str:
        """``Template.render`` less its per-call overhead: the template is looked up once, and
        its globals (a ChainMap jinja flattens twice per render: a third of the render's CPU
        at 128 prompts in flight) are copied once. The same context, output and errors."""
        known = self._compiled.get(file)
        if known is None:
            template = self.env.get_template(file)
            known = self._compiled[file] = (template, dict(template.globals))
        template, globals_ = known
        context = self.env.context_class(self.env, {**globals_, **variables}, template.name, template.blocks,
                                          globals=globals_)
        try:
            return self.env.concat(template.root_render_func(context))  # type: ignore[attr-defined]
        except Exception:
            self.env.handle_exception()
            raise  # handle_exception always raises; for the type checker
