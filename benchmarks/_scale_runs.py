"""Synthetic run folders at scale (1k-100k items) for bench_scale.py and the report-memory tests:
the rows ``orig eval`` writes (agent / generate / judge, FIG-Eval classes, 8 questions), written
straight to JSONL so a 50k-item run takes seconds. Images are hard links of one small PNG, so
galleries have real files to show without 50k encodes. Labelled as synthetic in run.json."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

CLASSES = ["animal", "culture", "event", "food", "landmark", "people", "plant", "product", "sports", "vehicle"]
CONCEPTS = ["PF", "CC", "TC"]


def _png(path: Path) -> Path:
    from PIL import Image

    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 48), (200, 40, 40)).save(path)
    return path


def write_run(run: Path, n: int, *, seed: int = 0, label: str | None = None, images: bool = True,
              prompt_chars: int = 600, questions: int = 8, start: int = 0, judged: bool = True) -> Path:
    """One run folder with ``n`` items (ids from ``start``); ``seed`` varies which verdicts are
    correct; ``judged=False`` leaves judge.jsonl out (a run waiting for its judge phase)."""
    rnd = random.Random(seed)
    run.mkdir(parents=True, exist_ok=True)
    (run / "run.json").write_text(json.dumps({"label": label or run.name, "benchmark": "figeval", "condition": "orig",
                                              "note": "synthetic rows (benchmarks/_scale_runs.py)"}), encoding="utf-8")
    # hard links of one PNG (a file system allows ~65k links to one inode: a new source per 60k)
    sources = (lambda i: _png(run / "images" / f"_source{i // 60_000}.png")) if images else None
    filler = ("lorem ipsum dolor sit amet " * (prompt_chars // 27 + 1))[:prompt_chars]
    with (run / "agent.jsonl").open("w") as fa, (run / "generate.jsonl").open("w") as fg, \
            (run / "judge.jsonl").open("w") as fj:
        for i in range(start, start + n):
            rid, cls = f"item_{i:06d}", CLASSES[i % len(CLASSES)]
            fa.write(json.dumps({"id": rid, "category": cls, "prompt": f"prompt {i}", "status": "ok", "error": None,
                                 "final_prompt": f"{filler} {i}", "final_prompt_words": prompt_chars // 6,
                                 "references": [], "evidence": None, "trace": None, "rounds": 2, "iterations": 3,
                                 "stop_reason": "sufficient", "notes": [],
                                 "stages": {"planning": {"calls": 1, "prompt_tokens": 900, "completion_tokens": 80,
                                                         "seconds": 1.2, "searches_text": 2, "searches_image": 1}}})
                     + "\n")
            image = f"images/{rid}.png"
            if sources is not None and not (run / image).exists():
                os.link(sources(i), run / image)
            fg.write(json.dumps({"id": rid, "category": cls, "status": "ok", "error": None, "image": image,
                                 "seed": 0, "timing": {"seconds": 1.0}}) + "\n")
            verdicts = [{"qid": f"q{k}", "concept": CONCEPTS[k % 3], "correct": rnd.random() < 0.6,
                         "answer": True, "error": None, "raw": ["true"], "text": f"True or False: fact {k} of {i}",
                         "reference_image": None} for k in range(questions)]
            if judged:
                fj.write(json.dumps({"id": rid, "category": cls, "judge": "synthetic-judge", "status": "ok",
                                     "error": None, "verdicts": verdicts, "n_questions": questions}) + "\n")
    if not judged:
        (run / "judge.jsonl").unlink()
    return run


def items_for(n: int, questions: int = 8, start: int = 0) -> list:
    """The BenchmarkItems of :func:`write_run`'s rows (text questions only)."""
    from orig_local.evaluation.items import BenchmarkItem, Question

    return [BenchmarkItem(id=f"item_{i:06d}", prompt=f"prompt {i}", category=CLASSES[i % len(CLASSES)],
                          questions=[Question(id=f"q{k}", text=f"True or False: fact {k} of {i}",
                                              concept=CONCEPTS[k % 3]) for k in range(questions)])
            for i in range(start, start + n)]
