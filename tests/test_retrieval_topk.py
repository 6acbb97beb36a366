"""BM25 top-k by partial selection returns exactly what the full stable sort returned."""

from __future__ import annotations

import numpy as np
import pytest

from orig_local.retrieval.topk import top_k


def full_sort(scores: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-scores, kind="stable")[:k]


@pytest.mark.parametrize("n", [1, 7, 100, 5000])
@pytest.mark.parametrize("k", [0, 1, 3, 10, 50, 6000])
def test_identical_to_stable_full_sort(n, k):
    rng = np.random.default_rng(n * 31 + k)
    for scores in (rng.random(n).astype(np.float32),
                   rng.integers(0, 4, n).astype(np.float32),  # many ties, as BM25 gives for 1-term queries
                   np.zeros(n, dtype=np.float32)):
        np.testing.assert_array_equal(top_k(scores, k), full_sort(scores, k))


def test_ties_at_the_cut_keep_index_order():
    scores = np.array([1.0, 3.0, 2.0, 2.0, 2.0, 0.5, 2.0])
    assert top_k(scores, 3).tolist() == [1, 2, 3]
    assert top_k(scores, 5).tolist() == [1, 2, 3, 4, 6]


def test_nan_scores_follow_the_full_sort():
    scores = np.array([0.2, np.nan, 0.9, 0.4])
    np.testing.assert_array_equal(top_k(scores, 2), full_sort(scores, 2))


def test_corpus_search_uses_partial_selection_with_same_ranking(tmp_path):
    from orig_local.retrieval.corpus import Corpus, CorpusIndex

    docs = [{"id": f"d{i}", "title": f"doc {i}", "text": ("lighthouse " * (i % 5 + 1)) + f"tower {i}"}
            for i in range(40)]
    import json

    (tmp_path / "docs.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    index = CorpusIndex(Corpus.load(tmp_path))
    scores = index.docs_bm25.scores("lighthouse")
    expected = [index.corpus.docs[i].id for i in full_sort(scores, 7) if scores[i] > 0]
    assert [d.id for d, _ in index.search_docs("lighthouse", 7)] == expected
