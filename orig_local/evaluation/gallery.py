"""Per-run HTML galleries for ``orig report``: per prompt the generated image, references,
final prompt and every verdict, in pages of ``page_size`` prompts with lazily loaded images.

A 50k-item run was one 105 MB page with 150k ``<img>`` tags, and every image was copied when
the report sat on another file system; pages now hold :data:`GALLERY_PAGE` prompts, images
load as they scroll into view, and ``media_mode`` lets a user link or reference images
instead of copying them.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

from orig_local.errors import UsageError
from orig_local.evaluation.results import RunResults, row_status
from orig_local.evaluation.rows import PhaseRow
from orig_local.labels import SIMULATED

log = logging.getLogger(__name__)


GALLERY_PAGE = 200  # prompts per gallery page (a 50k-item run was one 105 MB page)
# How a gallery shows images: "copy" into media/ (hard link when on the same file system; the
# report folder is self-contained), "link" (symlinks into the run folders: no bytes copied,
# valid while the runs stay where they are), "reference" (no files: the pages point at the
# images where they are, by relative path).
MEDIA_MODES = ("copy", "link", "reference")


def write_gallery(run: RunResults, path: Path, media: Path | None = None, *, media_mode: str = "copy",
                  page_size: int = GALLERY_PAGE) -> Path:
    """Static HTML: per prompt the image, references, final prompt and every verdict, in pages
    of ``page_size`` prompts (``path`` is page 1, then ``<stem>-p2.html`` ...), every image
    loaded lazily (a browser fetches what scrolls into view).

    ``media_mode`` (see :data:`MEDIA_MODES`): "copy"
    puts every image the pages show under ``media`` (default ``<report>/media/<label>/``;
    hard-linked when possible) so the report folder can be moved anywhere; "link" puts symlinks
    there; "reference" points at the images where they are. A referenced image that does not
    exist is counted, logged as a warning and marked on its page. Returns page 1."""
    if media_mode not in MEDIA_MODES:
        raise UsageError(f"gallery media {media_mode!r}: use one of {', '.join(MEDIA_MODES)}")
    from orig_local.templates import environment

    path.parent.mkdir(parents=True, exist_ok=True)
    placer = _MediaPlacer(run, path.parent, media or path.parent.parent / "media" / _slug(run.label), media_mode)
    ids = list(run.agent_rows) + [i for i in run.judge_rows if i not in run.agent_rows]
    pages = max(1, math.ceil(len(ids) / max(1, page_size)))
    names = [path.name] + [f"{path.stem}-p{k}{path.suffix}" for k in range(2, pages + 1)]
    env = environment(Path(__file__).parent / "templates", autoescape=True, trim_blocks=False)
    meta = {k: v for k, v in run.meta.items() if isinstance(v, (str, int, float, bool)) or v is None}
    scores = run.scores
    data_errors: dict[str, list[str]] = {}
    for issue in run.data_errors:
        data_errors.setdefault(issue.item or "", []).append(f"{issue.phase}: {issue.message}")
    for k in range(pages):  # one page's entries in memory at a time
        before = len(placer.missing)
        entries = [_gallery_entry(run, pid, placer, scores, data_errors)
                   for pid in ids[k * page_size:(k + 1) * page_size]]
        page = env.get_template("gallery.html.jinja").render(
            label=run.label, meta=meta, entries=entries, counts=run.counts, pct=_pct, labels=run.labels,
            has_p_true=any(v["p_true"] is not None for e in entries for v in e["verdicts"]),
            status=run.status, estimated=SIMULATED in run.labels, page=k + 1, pages=names,
            first=k * page_size + 1, total=len(ids), missing=placer.missing[before:])
        _write_text(path.parent / names[k], page)
    for stale in path.parent.glob(f"{path.stem}-p*{path.suffix}"):  # pages of an earlier, longer report
        if stale.name not in names and stale.stem.rpartition("-p")[2].isdigit():
            stale.unlink()
    if placer.missing:
        log.warning("gallery %s: %d image file(s) the rows name do not exist (first: %s)", run.label,
                    len(placer.missing), ", ".join(placer.missing[:3]))
    return path


def _gallery_entry(run: RunResults, pid: str, placer: _MediaPlacer, scores: dict, data_errors: dict) -> dict:
    a, g, j = run.agent_rows.get(pid), run.gen_rows.get(pid), run.judge_rows.get(pid)
    verdicts = []
    for v in (j.verdicts if j is not None and isinstance(j.verdicts, list) else []):
        if not isinstance(v, dict):
            continue
        raw = v.get("raw")
        verdicts.append({
            "text": v.get("text") or v.get("qid") or "(question text not recorded)",
            "concept": v.get("concept"), "reference_image": placer.src(v.get("reference_image"), reference=True),
            "error": v.get("error"), "correct": v.get("correct") if isinstance(v.get("correct"), bool) else None,
            "answer": v.get("answer"), "raw": raw if isinstance(raw, list) else ([str(raw)] if raw else []),
            "p_true": v.get("p_true") if isinstance(v.get("p_true"), (int, float)) else None,
        })
    rows: list[tuple[str, PhaseRow | None]] = [("agent", a), ("generate", g), ("judge", j)]
    statuses = {ph: row_status(r, ph) for ph, r in rows if r is not None}
    image = placer.src(g.image if g else None)
    retrieval = run.retrieval_rows.get(pid)
    return {
        # "" where a row lacks the field, as the stored rows read before (None where it is null)
        "id": pid, "category": (a.category if a else None) or ((j.category or "") if j else ""),
        "prompt": a.prompt if a else "", "final_prompt": a.final_prompt if a else "",
        "image": image, "image_missing": bool(g and g.image) and image is None,
        "references": [r for r in (placer.src(x) for x in (a.references if a else None) or []) if r],
        "score": scores.get(pid), "errors": [r.error for _, r in rows if r is not None and r.error],
        "data_errors": data_errors.get(pid, []),
        "failed": [ph for ph, st in statuses.items() if st == "failed"],
        "verdicts": verdicts,
        "retrieval": retrieval.accuracy if retrieval else None,
    }


class _MediaPlacer:
    """Where a gallery page finds each image (run-relative or absolute path in a row): copied or
    linked under ``media``, or referenced in place. Each source is placed once."""

    def __init__(self, run: RunResults, page_dir: Path, media: Path, mode: str):
        self.run, self.page_dir, self.media, self.mode = run, page_dir, media, mode
        self.placed: dict[Path, str | None] = {}
        self.missing: list[str] = []
        data = run.meta.get("data")
        # rows written before reference paths were stored absolute hold them relative to the
        # working directory of `orig eval`, which was usually where --data was given from
        self.bases = [run.dir, Path.cwd()] + ([Path(data).parent, Path(data)] if isinstance(data, str) else [])

    def _find(self, p: str, reference: bool) -> Path | None:
        if Path(p).is_absolute():
            return Path(p) if Path(p).is_file() else None
        for base in (self.bases if reference else self.bases[:1]):
            if (base / p).is_file():
                return base / p
        return None

    def src(self, p, reference: bool = False) -> str | None:
        if not p or not isinstance(p, str):
            return None
        src = self._find(p, reference)
        if src is None:
            if p not in self.missing:
                self.missing.append(p)
            return None
        if src not in self.placed:
            self.placed[src] = self._place(src)
        return self.placed[src]

    def _place(self, src: Path) -> str:
        import hashlib
        import shutil

        if self.mode == "reference":
            return os.path.relpath(src.resolve(), self.page_dir.resolve()).replace(os.sep, "/")
        try:
            inside = src.resolve().relative_to(self.run.dir.resolve())
        except ValueError:  # benchmark reference images etc.: outside the run folder
            digest = hashlib.sha256(str(src.resolve()).encode()).hexdigest()[:10]
            inside = Path("external") / f"{digest}_{src.name}"
        dst = self.media / inside
        fresh = (dst.is_symlink() and os.readlink(dst) == str(src.resolve())) if self.mode == "link" else (
            dst.is_file() and not dst.is_symlink() and dst.stat().st_size == src.stat().st_size)
        if not fresh:
            dst.parent.mkdir(parents=True, exist_ok=True)
            if dst.exists() or dst.is_symlink():
                dst.unlink()
            if self.mode == "link":
                os.symlink(src.resolve(), dst)
            else:
                try:
                    os.link(src, dst)  # no copy of the bytes when on the same file system
                except OSError:
                    shutil.copy2(src, dst)
        return os.path.relpath(dst, self.page_dir).replace(os.sep, "/")


def _pct(v: float) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


def _write_text(path: Path, text: str) -> None:
    from orig_local.evaluation.phases.common import naming_disk_errors

    with naming_disk_errors(path):
        path.write_text(text, encoding="utf-8")
