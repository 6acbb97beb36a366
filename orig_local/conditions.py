"""The paper's conditions (Table 3 and its ablations) and what each one needs, in one place.

Every CLI choice (``orig eval --condition``, ``orig generate --condition``) and every branch on a
condition (agent config, agent loop, benchmark orchestration) is derived from :data:`CONDITIONS`,
so a new condition is one entry here, not a string added in six files.
"""

from __future__ import annotations

from dataclasses import dataclass

from orig_local.errors import UsageError


@dataclass(frozen=True)
class ConditionSpec:
    """What a condition does. ``modalities`` are the search modalities of its retrieval loop
    (empty: it retrieves nothing); ``uses_backbone``: it sends requests to the backbone;
    ``needs_oracle``: it needs a benchmark item's gold evidence (so only ``orig eval`` runs it);
    ``enhances``: the backbone rewrites the prompt from its own knowledge (no evidence)."""

    name: str
    description: str
    modalities: tuple[str, ...] = ()
    uses_backbone: bool = True
    needs_oracle: bool = False
    enhances: bool = False

    @property
    def retrieves(self) -> bool:
        return bool(self.modalities)


CONDITIONS: dict[str, ConditionSpec] = {c.name: c for c in (
    ConditionSpec("direct", "the raw prompt, no references", uses_backbone=False),
    ConditionSpec("prompt_enhanced", "the backbone expands the prompt from its own knowledge", enhances=True),
    ConditionSpec("oracle", "the benchmark item's gold text and images replace retrieval", needs_oracle=True),
    ConditionSpec("orig", "ORIG: text and image retrieval", modalities=("text", "image")),
    ConditionSpec("orig_txt", "ORIG with text retrieval only", modalities=("text",)),
    ConditionSpec("orig_img", "ORIG with image retrieval only", modalities=("image",)),
)}

CONDITION_NAMES: tuple[str, ...] = tuple(CONDITIONS)


def condition(name: str) -> ConditionSpec:
    """The spec of condition ``name`` (a ValueError listing the known ones otherwise)."""
    try:
        return CONDITIONS[name]
    except KeyError:
        raise UsageError(f"unknown condition {name!r}; conditions: {', '.join(CONDITION_NAMES)}") from None


def standalone_conditions() -> list[str]:
    """Conditions that run on a bare prompt (no benchmark item): ``orig generate``'s choices."""
    return [c.name for c in CONDITIONS.values() if not c.needs_oracle]
