"""The one item type every benchmark loader produces.

A :class:`BenchmarkItem` is a prompt, its class, its questions (each tagged with a concept and a
modality, optionally with a reference image), and the gold references (text, images, facts)
used by the Oracle condition and by retrieval accuracy (paper Eq. 12).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orig_local.errors import DataError

Concept = Literal["PF", "CC", "TC"]  # Perceptual Fidelity, Compositional / Temporal Consistency
Modality = Literal["text", "image"]  # "image" = judged with a reference image beside the output

CONCEPTS: tuple[str, ...] = ("PF", "CC", "TC")
CONCEPT_NAMES = {"PF": "Perceptual Fidelity", "CC": "Compositional Consistency", "TC": "Temporal Consistency"}

# The paper's 10 entity classes in Table 3's column order (An. Sp. Tr. La. Fo. Pe. Pl. Pr. Cu. Ev.).
FIGEVAL_CLASSES: tuple[str, ...] = (
    "animal", "sports", "transportation", "landmarks", "food",
    "people", "plant", "product", "culture", "event",
)
CLASS_ABBREV = {
    "animal": "An.", "sports": "Sp.", "transportation": "Tr.", "landmarks": "La.", "food": "Fo.",
    "people": "Pe.", "plant": "Pl.", "product": "Pr.", "culture": "Cu.", "event": "Ev.",
}


class BenchmarkFormatError(DataError):
    """A benchmark file that cannot be read as its documented format (file and item named)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Question(_Model):
    id: str
    text: str  # as written in the benchmark
    concept: Concept | None = None  # None for benchmarks without the PF/CC/TC tagging
    modality: Modality = "text"
    # Absolute path of the reference image shown beside the generated one ("image" questions).
    reference_image: str | None = None
    reference_image_found: bool = True  # False: the file is missing; the judge records an error
    # Multiple-choice questions (I-HallA): the options and the correct letter. True/false
    # questions have no choices and an expected boolean answer (always True in FIG-Eval).
    choices: list[str] | None = None
    answer: bool | str = True
    # A benchmark's own rubric judged by its module instead of true/false (WISE: "wise_wiscore",
    # "wise_verified"; see evaluation/wise_judge.py). None = an ordinary question.
    rubric: str | None = None

    @property
    def is_choice(self) -> bool:
        return bool(self.choices)


class GoldFact(_Model):
    """One ground-truth fact F^GT_ij (paper Eq. 12): a text statement or an image subject."""

    id: str
    text: str
    modality: Modality = "text"
    image: str | None = None  # local file, when the benchmark ships it
    source: str | None = None  # URL the annotators took it from


class BenchmarkItem(_Model):
    id: str
    prompt: str
    category: str  # the item's class (FIG-Eval: one of FIGEVAL_CLASSES, or "others")
    questions: list[Question] = Field(default_factory=list)
    reference_text: str = ""  # gold reference text (Oracle condition)
    reference_images: list[str] = Field(default_factory=list)  # gold reference images (paths)
    facts: list[GoldFact] = Field(default_factory=list)
    prompt_zh: str | None = None
    subcategory: str | None = None
    raw_category: str | None = None  # the data's own class string where the class is derived (WISE)
    issues: list[str] = Field(default_factory=list)  # non-fatal load problems (missing files...)

    def concepts(self) -> set[str]:
        return {q.concept for q in self.questions if q.concept}

    def reference_image_paths(self) -> list[Path]:
        return [Path(p) for p in self.reference_images if Path(p).is_file()]


def summarize(items: list[BenchmarkItem]) -> dict:
    """Counts a researcher checks after loading: prompts, questions per concept and modality,
    per class, and the non-fatal issues."""
    from collections import Counter

    concepts: Counter = Counter()
    modalities: Counter = Counter()
    classes: Counter = Counter()
    for item in items:
        classes[item.category] += 1
        for q in item.questions:
            concepts[q.concept or "-"] += 1
            modalities[q.modality] += 1
    return {
        "prompts": len(items),
        "questions": sum(len(i.questions) for i in items),
        "concepts": dict(concepts),
        "modalities": dict(modalities),
        "classes": dict(classes),
        "issues": [f"{i.id}: {msg}" for i in items for msg in i.issues],
    }
