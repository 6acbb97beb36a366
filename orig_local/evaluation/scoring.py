"""Scoring exactly as the paper defines it (§4, Eq. 11), as pure functions.

* S_i - per-prompt accuracy: the share of prompt i's questions judged correct.
* class score - macro average of S_i over the prompts of that class.
* concept score (PF/CC/TC) - macro average over prompts of the per-prompt accuracy restricted
  to that concept's questions; prompts without a question of that concept are left out.
  (This is NOT the share of all PF questions answered correctly: prompts weigh equally.)
* All - mean of the class scores (the 10 FIG-Eval classes).
* Bootstrap CIs resample prompts with replacement *within each class* (so every replicate
  keeps the class structure "All" is built on), seeded; paired differences resample the same
  prompt ids in both runs.

Unparseable judge verdicts are never silently scored: ``errors="exclude"`` (default) drops
them from S_i, ``errors="false"`` counts them wrong; either way they are counted.

Bad data is refused, not guessed (:func:`check_verdicts`): a verdict whose ``correct`` is not a
JSON boolean (the string ``"false"`` included), a question id given twice, a verdict missing for
one of the benchmark's questions or given for a question the item does not have - each is a
*data error* of the item, which is then left out of every score and counted.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from orig_local.evaluation.items import CONCEPTS, FIGEVAL_CLASSES

ErrorPolicy = Literal["exclude", "false"]


@dataclass(frozen=True)
class PromptScore:
    """One prompt's tallies. ``by_concept[c] = (correct, total)``."""

    id: str
    category: str
    correct: int
    total: int
    errors: int = 0
    by_concept: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def s(self) -> float:
        return self.correct / self.total if self.total else math.nan

    def concept_accuracy(self, concept: str) -> float:
        c, t = self.by_concept.get(concept, (0, 0))
        return c / t if t else math.nan


def prompt_score(id: str, category: str, outcomes: Iterable[tuple[str | None, bool | None]],
                 errors: ErrorPolicy = "exclude") -> PromptScore:
    """Tally ``(concept, correct)`` pairs; ``correct=None`` is a judge error."""
    correct = total = n_err = 0
    by: dict[str, list[int]] = {}
    for concept, ok in outcomes:
        if ok is None:
            n_err += 1
            if errors == "exclude":
                continue
            ok = False
        total += 1
        correct += int(bool(ok))
        if concept:
            slot = by.setdefault(concept, [0, 0])
            slot[0] += int(bool(ok))
            slot[1] += 1
    return PromptScore(id, category, correct, total, n_err, {k: (v[0], v[1]) for k, v in by.items()})


@dataclass
class VerdictCheck:
    """What :func:`check_verdicts` found in one item's verdicts."""

    outcomes: list[tuple[str | None, bool | None]]  # (concept, correct); None = judge error
    problems: list[str] = field(default_factory=list)  # data errors (the item is not scored)
    missing: list[str] = field(default_factory=list)  # benchmark question ids without a verdict
    question_errors: int = 0  # verdicts the judge could not give (error recorded)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_verdicts(verdicts: object, questions: Sequence[tuple[str, str | None]] | None = None,
                   graded: Iterable[str] | None = None) -> VerdictCheck:
    """Validate one judge row's ``verdicts`` before anything is scored.

    ``questions``: the benchmark's ``(question id, concept)`` list for the item, when known; the
    verdicts must then cover exactly those ids, and the benchmark's concept is used. A verdict
    with an ``error`` is a judge error (``correct`` ignored); one without must carry
    ``correct`` as a JSON boolean - ``"false"``, ``0`` or ``null`` are data errors, never
    counted correct. A graded verdict (``correct`` None, ``answer`` a mapping of grades, e.g.
    WISE's WiScore) has no right/wrong: it is neither scored here nor an error. ``graded``: the
    ids of the item's graded questions, when known; a verdict shaped like a graded one for any
    other question is a data error (else a true/false question would silently drop out of S_i)."""
    graded_ids = set(graded) if graded is not None else None
    if not isinstance(verdicts, list):
        return VerdictCheck([], [f"'verdicts' is {type(verdicts).__name__}, not a list"])
    check = VerdictCheck([])
    concept_of = dict(questions) if questions is not None else None
    seen: set[str] = set()
    for n, v in enumerate(verdicts, 1):
        if not isinstance(v, dict):
            check.problems.append(f"verdict #{n} is {type(v).__name__}, not an object")
            continue
        qid = v.get("qid")
        if not isinstance(qid, str) or not qid:
            check.problems.append(f"verdict #{n} has no question id (qid)")
            continue
        if qid in seen:
            check.problems.append(f"question {qid} has two verdicts")
            continue
        seen.add(qid)
        if concept_of is not None and qid not in concept_of:
            check.problems.append(f"question {qid} is not one of the item's questions in the benchmark")
            continue
        concept = concept_of[qid] if concept_of is not None else v.get("concept")
        if v.get("error"):
            check.question_errors += 1
            check.outcomes.append((concept, None))
            continue
        correct = v.get("correct")
        if correct is None and isinstance(v.get("answer"), dict) and (graded_ids is None or qid in graded_ids):
            continue  # a graded rubric (WISE's WiScore): no right/wrong, scored by its own module
        if not isinstance(correct, bool):
            check.problems.append(f"question {qid}: 'correct' is {correct!r} ({type(correct).__name__}), "
                                  "not a boolean and no error recorded")
            continue
        check.outcomes.append((concept, correct))
    if not verdicts and not concept_of:  # nothing to score, and no question list says what is missing
        check.problems.append("the row has no verdicts")
    if concept_of is not None:
        check.missing = [q for q in concept_of if q not in seen]
        if check.missing:
            shown = ", ".join(check.missing[:5]) + (" ..." if len(check.missing) > 5 else "")
            check.problems.append(f"{len(check.missing)} of {len(concept_of)} question(s) have no verdict ({shown})")
    return check


def class_scores(prompts: Sequence[PromptScore]) -> dict[str, float]:
    """Macro average of S_i per class (prompts with no scored question are left out)."""
    groups: dict[str, list[float]] = {}
    for p in prompts:
        if p.total:
            groups.setdefault(p.category, []).append(p.s)
    return {c: float(np.mean(v)) for c, v in groups.items()}


def concept_scores(prompts: Sequence[PromptScore], concepts: Sequence[str] = CONCEPTS) -> dict[str, float]:
    """Macro average over prompts of the per-prompt accuracy on each concept."""
    out = {}
    for c in concepts:
        values = [p.concept_accuracy(c) for p in prompts if p.by_concept.get(c, (0, 0))[1]]
        out[c] = float(np.mean(values)) if values else math.nan
    return out


def overall(classes: dict[str, float], class_names: Sequence[str] | None = None) -> float:
    """"All": the mean of the class scores (of ``class_names`` when given, present ones only)."""
    names = list(class_names) if class_names else list(classes)
    values = [classes[c] for c in names if c in classes and not math.isnan(classes[c])]
    return float(np.mean(values)) if values else math.nan


def table_classes(prompts: Sequence[PromptScore]) -> list[str]:
    """Table columns: the 10 FIG-Eval classes in the paper's order when the run is FIG-Eval,
    otherwise the classes present, sorted."""
    present = {p.category for p in prompts}
    if present <= set(FIGEVAL_CLASSES) | {"others"}:
        return list(FIGEVAL_CLASSES)
    return sorted(present)


def table_row(prompts: Sequence[PromptScore], class_names: Sequence[str] | None = None) -> dict[str, float]:
    """One Table-3 row: every class, PF/CC/TC, All (fractions in [0, 1]; NaN = no data)."""
    class_names = list(class_names or table_classes(prompts))
    cls = class_scores(prompts)
    row = {c: cls.get(c, math.nan) for c in class_names}
    # PF/CC/TC over the same prompts as the class columns (and as the bootstrap): FIG-Eval's
    # "others" prompts are outside the 10-class table, like the paper's Table 1 counts.
    row.update(concept_scores([p for p in prompts if p.category in class_names]))
    row["All"] = overall(cls, class_names)
    return row


# --------------------------------------------------------------------------- bootstrap


def _arrays(prompts: Sequence[PromptScore], class_names: Sequence[str]):
    kept = [p for p in prompts if p.total and p.category in class_names]
    kept.sort(key=lambda p: (list(class_names).index(p.category), p.id))
    s = np.array([p.s for p in kept], dtype=float)
    conc = np.array([[p.concept_accuracy(c) for c in CONCEPTS] for p in kept], dtype=float).reshape(len(kept), len(CONCEPTS))
    blocks = []
    start = 0
    for c in class_names:
        n = sum(1 for p in kept if p.category == c)
        blocks.append((c, start, n))
        start += n
    return kept, s, conc, blocks


# Index draws per bootstrap call, at most: memory is O(chunk x n) instead of O(n_boot x n)
# (2.65 GB for one call at 100k prompts before), whatever n_boot is.
CHUNK_CELLS = 2_000_000


def _draw_chunks(blocks, n_total: int, n_boot: int, rng: np.random.Generator,
                 cells: int | None = None) -> Iterator[np.ndarray]:
    """The replicate index matrix of :func:`_draw_all` (the historical draw: each class's
    ``(n_boot, n)`` block in turn from one stream), yielded a chunk of replicates at a time.

    Bit-identical to drawing it whole: a first pass records the generator's state where each
    class block starts (drawing and discarding in chunks), then each block continues from its
    own copy of that state. Splitting one ``integers`` call into consecutive calls gives the
    same numbers (the bit generator keeps its own buffer), which tests/test_eval_scoring.py checks."""
    chunk = max(1, min(n_boot, (cells or CHUNK_CELLS) // max(n_total, 1)))
    starts = []
    for _, _, n in blocks:
        starts.append(copy.deepcopy(rng.bit_generator.state))
        if n:
            for done in range(0, n_boot, chunk):
                rng.integers(0, n, size=(min(chunk, n_boot - done), n))
    gens = [np.random.Generator(type(rng.bit_generator)()) for _ in blocks]
    for g, state in zip(gens, starts, strict=True):
        g.bit_generator.state = state
    for done in range(0, n_boot, chunk):
        m = min(chunk, n_boot - done)
        idx: np.ndarray = np.empty((m, n_total), dtype=np.int64)
        for (_, start, n), g in zip(blocks, gens, strict=True):
            if n:
                idx[:, start:start + n] = start + g.integers(0, n, size=(m, n))
        yield idx


def _draw_all(blocks, n_total: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """The whole ``(n_boot, n_total)`` index matrix at once (the reference :func:`_draw_chunks`
    must reproduce; tests only)."""
    idx: np.ndarray = np.empty((n_boot, n_total), dtype=np.int64)
    for _, start, n in blocks:
        if n:
            idx[:, start:start + n] = start + rng.integers(0, n, size=(n_boot, n))
    return idx


def _replicates(s, conc, blocks, n_total: int, n_boot: int, seed: int,
                cells: int | None = None) -> dict[str, np.ndarray]:
    """Every table cell for each of ``n_boot`` replicates, computed chunk by chunk."""
    parts = [_cells(s, conc, blocks, idx) for idx in
             _draw_chunks(blocks, n_total, n_boot, np.random.default_rng(seed), cells)]
    parts = parts or [_cells(s, conc, blocks, np.empty((0, n_total), dtype=np.int64))]  # n_boot = 0
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _cells(s: np.ndarray, conc: np.ndarray, blocks, idx: np.ndarray) -> dict[str, np.ndarray]:
    """Every table cell for each bootstrap replicate (rows of ``idx``)."""
    import warnings

    out: dict[str, np.ndarray] = {}
    class_vals = []
    for c, start, n in blocks:
        if n:
            v = s[idx[:, start:start + n]].mean(axis=1)
            class_vals.append(v)
        else:
            v = np.full(idx.shape[0], np.nan)
        out[c] = v
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a concept absent from a replicate
        for k, c in enumerate(CONCEPTS):
            out[c] = np.nanmean(conc[idx, k], axis=1) if idx.shape[1] else np.full(idx.shape[0], np.nan)
    out["All"] = np.mean(class_vals, axis=0) if class_vals else np.full(idx.shape[0], np.nan)
    return out


def _interval(values: np.ndarray, ci: float) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if not len(values):
        return (math.nan, math.nan)
    lo, hi = np.quantile(values, [(1 - ci) / 2, 1 - (1 - ci) / 2])
    return (float(lo), float(hi))


def bootstrap_ci(prompts: Sequence[PromptScore], class_names: Sequence[str] | None = None,
                 n_boot: int = 1000, ci: float = 0.95, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of every table cell (prompts resampled within classes)."""
    class_names = list(class_names or table_classes(prompts))
    kept, s, conc, blocks = _arrays(prompts, class_names)
    return {k: _interval(v, ci) for k, v in _replicates(s, conc, blocks, len(kept), n_boot, seed).items()}


def paired_difference(a: Sequence[PromptScore], b: Sequence[PromptScore],
                      class_names: Sequence[str] | None = None, n_boot: int = 1000,
                      ci: float = 0.95, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """``b - a`` for every cell with a paired bootstrap CI: only prompt ids scored in both runs
    are used, and each replicate resamples the same ids in both. Returns ``{cell: (diff, lo, hi)}``."""
    common = {p.id for p in a if p.total} & {p.id for p in b if p.total}
    a2 = [p for p in a if p.id in common]
    b2 = [p for p in b if p.id in common]
    class_names = list(class_names or table_classes(a2 + b2))
    ka, sa, ca, blocks = _arrays(a2, class_names)
    kb, sb, cb, blocks_b = _arrays(b2, class_names)
    assert [p.id for p in ka] == [p.id for p in kb] and blocks == blocks_b
    point_a, point_b = table_row(a2, class_names), table_row(b2, class_names)
    da, db = _paired_replicates(sa, ca, sb, cb, blocks, len(ka), n_boot, seed)
    return {k: (point_b[k] - point_a[k], *_interval(db[k] - da[k], ci)) for k in da}


def _paired_replicates(sa, ca, sb, cb, blocks, n_total: int, n_boot: int, seed: int,
                       cells: int | None = None):
    """Both runs' cells on the same replicates (the same ids resampled in both), chunk by chunk."""
    pa, pb = [], []
    for idx in _draw_chunks(blocks, n_total, n_boot, np.random.default_rng(seed), cells):
        pa.append(_cells(sa, ca, blocks, idx))
        pb.append(_cells(sb, cb, blocks, idx))
    join = lambda parts: {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}  # noqa: E731
    return join(pa), join(pb)


# --------------------------------------------------------------------------- retrieval accuracy


def retrieval_accuracy(supported: Iterable[bool | None]) -> float:
    """A_i (paper Eq. 12): share of gold facts the retrieved evidence supports. Errors
    (None) are left out; NaN when nothing was judged."""
    values = [bool(v) for v in supported if v is not None]
    return sum(values) / len(values) if values else math.nan


def mean_ignoring_nan(values: Iterable[float]) -> float:
    arr = np.array([v for v in values if not math.isnan(v)], dtype=float)
    return float(arr.mean()) if len(arr) else math.nan
