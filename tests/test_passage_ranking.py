"""One passage ranker for the page reader (a character cap) and the text filter (a token
budget): one tokenizer, one BM25, one ranking (orig_local/retrieval/passages.py)."""

from __future__ import annotations

import numpy as np

from orig_local.agent.budget import EstimatedTokens
from orig_local.agent.passages import select_passages as filter_passages
from orig_local.retrieval.passages import ranked
from orig_local.retrieval.passages import select_passages as reader_passages

# A Chinese page (no spaces between words): ~20k characters of town history, one paragraph that
# describes the lighthouse's colours deep inside it.
_FILLER = "港口委员会在当年审计了预算并讨论了渡轮的时刻表以及潮汐记录的整理工作和档案馆的搬迁问题。"
_GOLD = "维尔特兰灯塔的塔身漆成红白相间的螺旋条纹，顶部是铜绿色的圆顶。"


def _chinese_page() -> str:
    paras = [_FILLER * 2 for _ in range(240)]
    paras.insert(200, _FILLER * 2 + _GOLD)  # longer than the rest: it cannot fill a gap by size
    return "\n\n".join(paras)


def test_the_filter_finds_a_fact_in_a_page_without_spaces():
    page = _chinese_page()
    assert len(page) > 20_000 and page.index(_GOLD) > 15_000
    chosen = filter_passages(page, "灯塔的颜色和条纹是什么样的？", 600, EstimatedTokens())
    assert chosen.cut and _GOLD in chosen.text  # the head alone would not hold it
    kept = reader_passages(page.replace("\n\n", "\n"), 5_000, query="灯塔 条纹 颜色")
    assert _GOLD in kept and len(kept) <= 5_000


def test_ranking_sorts_only_the_matches_and_equals_a_full_stable_sort():
    rng = np.random.default_rng(0)
    for n in (1, 7, 300):
        scores = np.where(rng.random(n) < 0.2, np.round(rng.gamma(2.0, 2.0, n), 1), 0.0).tolist()
        assert ranked(scores) == sorted(range(n), key=lambda i: (-scores[i], i))
    assert ranked([0.0, 0.0, 0.0]) == [0, 1, 2]  # nothing matches: the head first
    assert ranked([]) == []
