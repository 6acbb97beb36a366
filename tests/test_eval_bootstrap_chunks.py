"""The bootstrap in bounded memory gives exactly the intervals of drawing every replicate at once."""

import random

import numpy as np
import pytest

from orig_local.evaluation import scoring
from orig_local.evaluation.items import CONCEPTS
from orig_local.evaluation.scoring import _arrays, _cells, _draw_all, _interval, prompt_score, table_classes


def _prompts(n: int, seed: int = 1, prefix: str = "p"):
    rnd = random.Random(seed)
    classes = ["animal", "sports", "food", "culture", "science"]
    out = []
    for i in range(n):
        outcomes = [(rnd.choice(list(CONCEPTS) + [None]), rnd.random() < 0.6) for _ in range(rnd.randint(1, 8))]
        out.append(prompt_score(f"{prefix}{i}", classes[i % 5 if i % 7 else 0], outcomes))
    return out


def _reference_ci(prompts, n_boot, ci, seed):
    """The whole (n_boot, n) draw of the implementation before chunking."""
    classes = table_classes(prompts)
    kept, s, conc, blocks = _arrays(prompts, classes)
    idx = _draw_all(blocks, len(kept), n_boot, np.random.default_rng(seed))
    return {k: _interval(v, ci) for k, v in _cells(s, conc, blocks, idx).items()}


@pytest.mark.parametrize("cells", [1, 37, 1000, scoring.CHUNK_CELLS])
def test_chunked_bootstrap_is_bit_identical(monkeypatch, cells):
    prompts = _prompts(233)
    want = _reference_ci(prompts, 301, 0.9, 7)
    monkeypatch.setattr(scoring, "CHUNK_CELLS", cells)
    got = scoring.bootstrap_ci(prompts, n_boot=301, ci=0.9, seed=7)
    assert got == want  # exact floats, every cell


def test_chunked_paired_difference_is_bit_identical(monkeypatch):
    a, b = _prompts(150, 1), _prompts(150, 2)
    whole = scoring.paired_difference(a, b, n_boot=200, seed=3)
    monkeypatch.setattr(scoring, "CHUNK_CELLS", 50)
    assert scoring.paired_difference(a, b, n_boot=200, seed=3) == whole
    classes = table_classes(a)
    ka, sa, ca, blocks = _arrays(a, classes)
    _, sb, cb, _ = _arrays(b, classes)
    idx = _draw_all(blocks, len(ka), 200, np.random.default_rng(3))
    da, db = _cells(sa, ca, blocks, idx), _cells(sb, cb, blocks, idx)
    assert {k: v[1:] for k, v in whole.items()} == {k: _interval(db[k] - da[k], 0.95) for k in da}


def test_bootstrap_memory_does_not_grow_with_replicates():
    import tracemalloc

    prompts = _prompts(20_000)
    tracemalloc.start()
    scoring.bootstrap_ci(prompts, n_boot=1000, seed=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # the whole draw would be 20k x 1000 x 8 bytes = 160 MB of indices alone
    assert peak < 120e6
