"""The root config: one nested, typed object loaded from YAML plus ``key=value`` overrides.

Each subsystem owns its section: the lower layers beside their code
(``orig_local/<subsystem>/config.py``), the agent and the harness in :mod:`orig_local.sections`
(below this module: the root config imports nothing from ``agent/`` or ``evaluation/``); this
module only composes them. Unknown keys anywhere are errors. The resolved config is written beside every
run's outputs (:func:`save_config`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from orig_local.configbase import (
    ConfigError,
    StrictModel,
    apply_overrides,
    deep_merge,
    describe_validation_error,
    read_yaml,
)
from orig_local.embeddings.config import EmbedConfig
from orig_local.generation.config import GeneratorConfig
from orig_local.llm.config import ChatConfig
from orig_local.paths import orig_home
from orig_local.retrieval.config import RetrievalConfig
from orig_local.sections.agent import AgentConfig
from orig_local.sections.evaluation import EvalConfig

# Defaults of the chat sections that differ from ChatConfig's own. Settings given for a section
# are merged into these (``-s judge.base_url=...`` keeps the judge's preset, temperature and
# max_tokens); naming a ``model`` without a ``preset`` drops the default preset.
CHAT_DEFAULTS: dict[str, dict[str, Any]] = {
    "backbone": {"preset": "qwen2.5-vl-7b"},
    # Paper §4: the judge is a VLM; our default is the open Qwen2.5-VL-72B at temperature 0.
    "judge": {"preset": "qwen2.5-vl-72b", "temperature": 0.0, "max_tokens": 16},
}


def _with_chat_defaults(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    for section, defaults in CHAT_DEFAULTS.items():
        given = data.get(section)
        if given is None:
            continue
        if not isinstance(given, dict):
            raise ConfigError(f"{section}: expected a mapping of settings, got {given!r}")
        merged = {**defaults, **given}
        if "model" in given and "preset" not in given:
            merged.pop("preset")
        data[section] = merged
    return data


class Config(StrictModel):
    backbone: ChatConfig = Field(default_factory=lambda: ChatConfig(**CHAT_DEFAULTS["backbone"]))
    judge: ChatConfig = Field(default_factory=lambda: ChatConfig(**CHAT_DEFAULTS["judge"]))
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    generator: GeneratorConfig = Field(default_factory=GeneratorConfig)
    embed: EmbedConfig = Field(default_factory=EmbedConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    cache_dir: str | None = None  # None -> <ORIG_HOME>/cache; "" disables on-disk caches
    prompts_dir: str | None = None  # changed prompt templates (per file, over the packaged ones)
    log_level: str = "INFO"
    progress: bool = True  # tqdm bars

    def resolved_cache_dir(self) -> Path | None:
        if self.cache_dir == "":
            return None
        return Path(self.cache_dir) if self.cache_dir else orig_home() / "cache"


# Named configs shipped with the package (orig_local/configs/<name>.yaml), e.g. "offline".
CONFIGS_DIR = Path(__file__).parent / "configs"


def load_config(
    paths: list[str | Path] | str | Path | None = None,
    overrides: list[str] | None = None,
) -> Config:
    """Merge YAML files (later wins) and ``a.b=value`` overrides into a validated Config.

    A path without a suffix that is not a file names a packaged config (``offline``)."""
    if paths is None:
        paths = []
    elif isinstance(paths, (str, Path)):
        paths = [paths]
    data: dict[str, Any] = {}
    for path in paths:
        p = Path(path)
        if not p.exists() and not p.suffix:
            p = CONFIGS_DIR / f"{path}.yaml"
        data = deep_merge(data, read_yaml(p))
    data = _with_chat_defaults(apply_overrides(data, overrides or []))
    try:
        return Config(**data)
    except ValidationError as exc:
        raise ConfigError(f"invalid config: {describe_validation_error(exc, Config)}") from exc


def save_config(config: Config, path: str | Path) -> Path:
    """Write the resolved config as YAML (every default spelled out)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), encoding="utf-8")
    return path
