"""The knowledge base K: text facts and images, each with its provenance.

Every entry has a short id (``T3``, ``V2``) used in prompts, in the trace and in the report, and
a :class:`Source` saying where it came from (URL, the query that found it, the round, and the
stage that added it). Images keep their pixels in memory (``image``) but serialise without them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Origin = Literal["bootstrap", "retrieval", "oracle"]


class Source(BaseModel):
    url: str | None = None
    title: str = ""
    query: str | None = None
    round: int = 0  # 0 = bootstrap / oracle, 1.. = loop round
    origin: Origin = "retrieval"


class TextEvidence(BaseModel):
    id: str
    text: str
    kind: Literal["fact", "snippet", "passage"] = "fact"  # passage = unfiltered page text
    source: Source


class SummaryFact(BaseModel):
    """One statement of the consolidated knowledge summary, with the K entries it rests on."""

    text: str
    evidence: list[str]  # TextEvidence ids (provenance), never empty
    round: int = 0  # the newest round among its evidence


class ImageEvidence(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    bytes_sha256: str  # the image file's bytes as fetched (a gold reference: its PNG encoding)
    url: str | None = None
    page_url: str | None = None
    width: int = 0
    height: int = 0
    description: str = ""  # what the image filter saw in it
    source: Source
    image: Any = Field(default=None, exclude=True)  # PIL.Image (RGB); not serialised


class KnowledgeBase:
    """K, growing round by round. Ids are assigned here so they stay unique per run."""

    def __init__(self) -> None:
        self.texts: list[TextEvidence] = []
        self.images: list[ImageEvidence] = []
        self._seen_text: set[str] = set()
        self._seen_images: set[str] = set()
        # The consolidated summary of K's text (paper §3.2.1, Table 6): deduplicated statements
        # with provenance. Entries not folded into it yet are ``pending_texts()``.
        self.summary: list[SummaryFact] = []
        self.consolidated: set[str] = set()  # TextEvidence ids folded into the summary
        self._facts: dict[str, tuple[TextEvidence, SummaryFact]] = {}  # pending entries as statements

    def __len__(self) -> int:
        return len(self.texts) + len(self.images)

    def add_text(self, text: str, source: Source, kind: str = "fact") -> TextEvidence | None:
        """Add one fact; an exact repeat (case/space-insensitive) is ignored and returns None."""
        key = " ".join(text.lower().split())
        if not key or key in self._seen_text:
            return None
        self._seen_text.add(key)
        item = TextEvidence(id=f"T{len(self.texts) + 1}", text=text.strip(), kind=kind, source=source)
        self.texts.append(item)
        return item

    def add_image(self, image: Any, bytes_sha256: str, source: Source, *, url: str | None = None,
                  page_url: str | None = None, description: str = "") -> ImageEvidence | None:
        """Add one image; the same bytes twice are ignored and return None."""
        if bytes_sha256 in self._seen_images:
            return None
        self._seen_images.add(bytes_sha256)
        w, h = getattr(image, "size", (0, 0))
        item = ImageEvidence(
            id=f"V{len(self.images) + 1}", bytes_sha256=bytes_sha256, url=url, page_url=page_url, width=w,
            height=h, description=description, source=source, image=image,
        )
        self.images.append(item)
        return item

    def has_image(self, bytes_sha256: str) -> bool:
        return bytes_sha256 in self._seen_images

    def text_by_id(self, eid: str) -> TextEvidence | None:
        return next((t for t in self.texts if t.id == eid), None)

    def pending_texts(self) -> list[TextEvidence]:
        """Text entries not yet folded into the consolidated summary (oldest first)."""
        return [t for t in self.texts if t.id not in self.consolidated]

    def text_entries(self) -> list[SummaryFact]:
        """What later stages read as K's text: the consolidated summary, then every entry not
        folded into it yet (each as its own statement), oldest first."""
        return list(self.summary) + [self._as_fact(t) for t in self.pending_texts()]

    def _as_fact(self, entry: TextEvidence) -> SummaryFact:
        """``entry`` as a statement of its own, made once per entry (K is rendered into most
        requests of a run; callers read the statements, never change them)."""
        known = self._facts.get(entry.id)
        if known is None or known[0] is not entry:
            known = self._facts[entry.id] = (entry, SummaryFact(text=entry.text, evidence=[entry.id],
                                                                 round=entry.source.round))
        return known[1]

    def render_images(self) -> str:
        """One data block per image in K (descriptions only; pixels are sent separately)."""
        from orig_local.agent.untrusted import delimit

        return "\n".join(delimit(v.id, v.description or "image") for v in self.images)

    def to_json(self) -> dict[str, Any]:
        return {
            "texts": [t.model_dump(mode="json") for t in self.texts],
            "images": [v.model_dump(mode="json") for v in self.images],
            "summary": [f.model_dump(mode="json") for f in self.summary],
        }
