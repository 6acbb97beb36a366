"""Instruction templates: one jinja file per stage step, rendered strictly.

The package folder ``orig_local/agent/prompts/`` is the default. ``Config.prompts_dir`` points
at a copied folder for a prompt ablation; that folder must hold every template (a missing file
is an error, never a silent fallback to the packaged one). Undefined variables are errors
(``StrictUndefined``).

Each template puts its fixed instruction first and the variable evidence last, so requests of
the same stage share a long prefix and vLLM's prefix cache can reuse it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PACKAGE_PROMPTS = Path(__file__).parent / "prompts"
SUFFIX = ".jinja"


class PromptLibrary:
    def __init__(self, directory: str | Path | None = None):
        import jinja2

        self.directory = Path(directory) if directory else PACKAGE_PROMPTS
        if not self.directory.is_dir():
            raise FileNotFoundError(f"prompt folder not found: {self.directory}")
        missing = sorted(set(self.required()) - set(self.names()))
        if missing:
            raise FileNotFoundError(
                f"prompt folder {self.directory} lacks {', '.join(missing)}; copy the whole "
                f"packaged folder ({PACKAGE_PROMPTS}) and edit the copies"
            )
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(self.directory)),
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
        )

    @staticmethod
    def required() -> list[str]:
        """Every template the agent uses (the packaged folder's contents)."""
        return sorted(p.stem for p in PACKAGE_PROMPTS.glob(f"*{SUFFIX}"))

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.directory.glob(f"*{SUFFIX}"))

    def render(self, name: str, **variables: Any) -> str:
        return self.env.get_template(name + SUFFIX).render(**variables).strip()
