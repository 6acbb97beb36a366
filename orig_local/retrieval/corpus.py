"""Offline corpus: documents and images on disk, indexed once (BM25 + CLIP) and saved.

Layout of a corpus folder (the demo corpus in ``orig_local/demo_corpus`` is one)::

    docs.jsonl     {"id", "title", "text", "entity"?, "url"?}           one document a line
    images.jsonl   {"id", "file", "caption", "doc_id"?, "entity"?, "license"?, "attribution"?}
    images/...     the image files named in images.jsonl

Without the manifests, ``*.md``/``*.txt`` files are documents (id = file stem, title = first
line) and image files are images (caption = a ``<stem>.txt`` beside the image, else the stem).
A single ``.jsonl`` file is read as documents only.

The index (BM25 over documents, BM25 over image captions, CLIP image embeddings per model) is
keyed by a fingerprint of the corpus content, so editing the corpus rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orig_local.errors import DataError
from orig_local.retrieval.topk import top_k

log = logging.getLogger(__name__)

DEMO_CORPUS = Path(__file__).resolve().parents[1] / "demo_corpus"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")
DOC_URL, IMG_URL = "corpus://doc/", "corpus://img/"


@dataclass
class CorpusDoc:
    id: str
    title: str
    text: str
    entity: str | None = None
    url: str | None = None  # an original source URL, if the corpus has one


@dataclass
class CorpusImage:
    id: str
    path: Path
    caption: str
    doc_id: str | None = None
    entity: str | None = None
    license: str | None = None
    attribution: str | None = None


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{n}: not JSON ({exc})") from None
    return rows


class Corpus:
    """Documents and images of one corpus, addressable by id and by ``corpus://`` URL."""

    def __init__(self, root: Path, docs: list[CorpusDoc], images: list[CorpusImage]):
        self.root = root
        self.docs = docs
        self.images = images
        self._docs = {d.id: d for d in docs}
        self._images = {i.id: i for i in images}
        if len(self._docs) != len(docs) or len(self._images) != len(images):
            raise DataError(f"corpus {root}: duplicate document or image ids")

    @classmethod
    def load(cls, path: str | Path | None = None) -> Corpus:
        root = Path(path) if path else DEMO_CORPUS
        if not root.exists():
            raise DataError(f"corpus not found: {root}", hint="build one with `orig corpus build`")
        if root.is_file():
            return cls(root, [cls._doc(r) for r in _read_jsonl(root)], [])
        docs = ([cls._doc(r) for r in _read_jsonl(root / "docs.jsonl")]
                if (root / "docs.jsonl").exists() else cls._scan_docs(root))
        images = ([cls._image(root, r) for r in _read_jsonl(root / "images.jsonl")]
                  if (root / "images.jsonl").exists() else cls._scan_images(root))
        return cls(root, docs, images)

    @staticmethod
    def _doc(row: dict) -> CorpusDoc:
        return CorpusDoc(id=str(row["id"]), title=row.get("title") or str(row["id"]), text=row["text"],
                         entity=row.get("entity"), url=row.get("url"))

    @staticmethod
    def _image(root: Path, row: dict) -> CorpusImage:
        return CorpusImage(id=str(row["id"]), path=root / row["file"], caption=row.get("caption") or "",
                           doc_id=row.get("doc_id"), entity=row.get("entity"),
                           license=row.get("license"), attribution=row.get("attribution"))

    @staticmethod
    def _scan_docs(root: Path) -> list[CorpusDoc]:
        docs = []
        for p in sorted(root.rglob("*")):
            if p.suffix in (".md", ".txt") and p.name != "README.md" and not any(
                    p.with_suffix(s).exists() for s in IMAGE_SUFFIXES):
                text = p.read_text(encoding="utf-8", errors="replace").strip()
                title = text.splitlines()[0].lstrip("# ").strip() if text else p.stem
                docs.append(CorpusDoc(id=p.stem, title=title, text=text))
        return docs

    @staticmethod
    def _scan_images(root: Path) -> list[CorpusImage]:
        images = []
        for p in sorted(root.rglob("*")):
            if p.suffix.lower() in IMAGE_SUFFIXES and ".index" not in p.parts:
                side = p.with_suffix(".txt")
                caption = side.read_text(encoding="utf-8").strip() if side.exists() else p.stem.replace("_", " ").replace("-", " ")
                images.append(CorpusImage(id=p.stem, path=p, caption=caption))
        return images

    def doc(self, doc_id: str) -> CorpusDoc | None:
        return self._docs.get(doc_id)

    def image(self, image_id: str) -> CorpusImage | None:
        return self._images.get(image_id)

    def fingerprint(self) -> str:
        """Hash of every document and image (content, not mtimes)."""
        h = hashlib.sha256()
        for d in self.docs:
            h.update(json.dumps([d.id, d.title, d.text, d.entity, d.url]).encode())
        for i in self.images:
            h.update(json.dumps([i.id, i.caption, i.doc_id, i.entity]).encode())
            h.update(hashlib.sha256(i.path.read_bytes()).digest())
        return h.hexdigest()

    def image_text(self, image: CorpusImage) -> str:
        """What image BM25 indexes: the caption plus the title of the page it illustrates."""
        doc = self.doc(image.doc_id) if image.doc_id else None
        return f"{image.caption} {doc.title if doc else ''}".strip()


# --------------------------------------------------------------------------- BM25

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
STOPWORDS = frozenset(
    "the a an and or of in on at to for with by from is are was were be been its it this that "
    "as into than then there their they them his her he she we you your our not no but so such "
    "has have had do does did can could will would which who whom what when where how".split())


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens without stopwords; a trailing plural 's' is dropped so that
    "legs" matches "leg" (cheap stemming; no stemmer dependency)."""
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if tok in STOPWORDS:
            continue
        if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.append(tok)
    return out


class Bm25:
    """bm25s over token lists; scores every item (exact, and fast below ~1M items)."""

    def __init__(self, model: Any, size: int):
        self.model = model
        self.size = size

    @classmethod
    def build(cls, texts: list[str]) -> Bm25:
        import bm25s

        # bm25s pins its logger to DEBUG at import, which overrides `orig -q`; give the
        # decision back to the application's root logger.
        logging.getLogger("bm25s").setLevel(logging.NOTSET)

        model = bm25s.BM25()
        tokens = [tokenize(t) or [""] for t in texts]
        if texts:
            model.index(tokens, show_progress=False)
        return cls(model, len(texts))

    def save(self, path: Path) -> None:
        if self.size:
            self.model.save(str(path))

    @classmethod
    def load(cls, path: Path, size: int) -> Bm25:
        import bm25s

        return cls(bm25s.BM25.load(str(path)) if size else None, size)

    def scores(self, query: str) -> np.ndarray:
        if not self.size:
            return np.zeros(0, dtype=np.float32)
        ids = self.model.get_tokens_ids(tokenize(query))
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self.model.get_scores_from_ids(ids), dtype=np.float32)


# --------------------------------------------------------------------------- index

def _normalise(x: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1]; a constant vector becomes zeros (it carries no ranking signal)."""
    if x.size == 0:
        return x
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi - lo > 1e-9 else np.zeros_like(x)


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def default_index_dir(corpus: Corpus, index_dir: str | Path | None, cache_dir: str | Path | None) -> Path | None:
    """Beside the corpus when writable (and not the packaged demo corpus), else the cache dir;
    None (build in memory, don't save) when neither is possible."""
    if index_dir:
        return Path(index_dir)
    root = corpus.root if corpus.root.is_dir() else corpus.root.parent
    if root.resolve() != DEMO_CORPUS.resolve() and _writable(root):
        return root / ".index"
    if cache_dir:
        return Path(cache_dir) / "corpus-index"
    return None


class CorpusIndex:
    """BM25 over documents and image captions, plus CLIP image embeddings (built on first use
    per model and saved). ``embedder`` is an :class:`OpenClipEmbedder` or None (captions only)."""

    def __init__(self, corpus: Corpus, index_dir: Path | None = None, embedder: Any = None):
        self.corpus = corpus
        self.embedder = embedder
        self.fingerprint = corpus.fingerprint()
        self.dir = index_dir / self.fingerprint[:16] if index_dir else None
        self.docs_bm25, self.images_bm25 = self._load_or_build_bm25()
        self._clip: np.ndarray | None = None

    # ---- BM25 (built once, saved atomically: other processes may read the same folder)
    def _load_or_build_bm25(self) -> tuple[Bm25, Bm25]:
        n_docs, n_imgs = len(self.corpus.docs), len(self.corpus.images)
        if self.dir is not None and (self.dir / "meta.json").exists():
            try:
                return Bm25.load(self.dir / "docs_bm25", n_docs), Bm25.load(self.dir / "images_bm25", n_imgs)
            except (OSError, ValueError) as exc:
                log.warning("index at %s unreadable (%s); rebuilding", self.dir, exc)
        docs = Bm25.build([f"{d.title}\n{d.text}" for d in self.corpus.docs])
        images = Bm25.build([self.corpus.image_text(i) for i in self.corpus.images])
        if self.dir is not None:
            def write(tmp: Path) -> None:
                docs.save(tmp / "docs_bm25")
                images.save(tmp / "images_bm25")

            self._save_atomically(write, {"docs": n_docs, "images": n_imgs, "fingerprint": self.fingerprint})
        return docs, images

    def _save_atomically(self, write, meta: dict) -> None:
        assert self.dir is not None
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.dir.parent))
        try:
            write(tmp)
            (tmp / "meta.json").write_text(json.dumps(meta))
            try:
                os.replace(tmp, self.dir)
            except OSError:  # another process won the race; its index is identical
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    # ---- CLIP embeddings of the images (per model; cached beside BM25)
    def clip_embeddings(self) -> np.ndarray | None:
        if self.embedder is None or not self.corpus.images:
            return None
        if self._clip is not None:
            return self._clip
        key = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(getattr(self.embedder, "model_name", "clip")))[-80:]
        path = self.dir / f"clip-{key}.npy" if self.dir is not None else None
        if path is not None and path.exists():
            self._clip = np.load(path)
            return self._clip
        from PIL import Image

        images = []
        for item in self.corpus.images:
            with Image.open(item.path) as im:
                images.append(im.convert("RGB"))
        self._clip = np.asarray(self.embedder.embed_images(images), dtype=np.float32)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}.npy")
            np.save(tmp, self._clip)
            os.replace(tmp, path)
        return self._clip

    # ---- queries
    def search_docs(self, query: str, k: int) -> list[tuple[CorpusDoc, float]]:
        scores = self.docs_bm25.scores(query)
        order = [i for i in top_k(scores, k) if scores[i] > 0]
        return [(self.corpus.docs[i], float(scores[i])) for i in order]

    def search_images(self, query: str, k: int, clip_weight: float = 0.3) -> list[tuple[CorpusImage, float]]:
        """(1-w) * normalised caption BM25 + w * normalised CLIP text->image similarity.
        Captions keep ranking sane with a weak (or random tiny) CLIP; CLIP finds images whose
        captions miss the query's words."""
        if not self.corpus.images:
            return []
        raw = self.images_bm25.scores(query)
        bm25 = raw / raw.max() if raw.max() > 0 else raw  # 1.0 = best caption match, 0 = no term
        score = bm25.copy()
        embeddings = self.clip_embeddings()
        if embeddings is not None:
            sims = (self.embedder.embed_texts([query]) @ embeddings.T)[0]
            score = (1 - clip_weight) * bm25 + clip_weight * _normalise(sims)
        order = top_k(score, k)
        if embeddings is not None:  # CLIP ranks every image; without it only caption matches count
            return [(self.corpus.images[i], float(score[i])) for i in order]
        return [(self.corpus.images[i], float(score[i])) for i in order if score[i] > 0]
