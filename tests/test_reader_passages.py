"""The page reader emits plain text and, over its length cap, keeps the passages that match the
search query instead of the head of the page (orig_local/retrieval/reader.py, passages.py)."""

from __future__ import annotations

import random

import pytest

from orig_local.retrieval.base import Page
from orig_local.retrieval.config import FetchConfig, ReaderConfig
from orig_local.retrieval.httpfetch import HttpSession
from orig_local.retrieval.passages import GAP, select_passages, split_passages
from orig_local.retrieval.reader import WebPageReader, extract_main_text
from orig_local.retrieval.testserver import LoopbackServer, article_html, respond

FILLER = ("harbour tide quay gull rope net boat crane warehouse market ferry pier dock barge anchor "
          "sail mast fog storm wave shingle cliff path bench square church bell clock street lamp "
          "bakery bread fish salt tar timber ledger census council mayor tax road bridge river").split()
QUERY = "Veltrane lighthouse keeper cottage museum"
GOLD = [
    "The lighthouse keeper's cottage became a museum in 1981, with a red door and a brass bell.",
    "Visitors reach the lighthouse museum along the breakwater; the keeper's logbooks are shown there.",
    "The last Veltrane lighthouse keeper, Ida Morrow, left the cottage when the light was automated.",
]


def long_article(n_paras: int = 80, seed: int = 0) -> tuple[str, list[str]]:
    """A ~55k-character article: a lead naming the subject, filler about the town, and the three
    gold paragraphs at depths ~15 %, ~55 % and ~90 %."""
    rng = random.Random(seed)
    paras = ["Veltrane is a small port on the north coast, known for its harbour and its lighthouse."]
    for _ in range(n_paras):
        paras.append(" ".join(rng.choice(FILLER) for _ in range(110)).capitalize() + ".")
    for depth, gold in zip((0.15, 0.55, 0.9), GOLD, strict=True):
        paras.insert(int(depth * len(paras)), gold)
    return article_html("Veltrane Harbor", paras), paras


def test_plain_text_keeps_characters_markdown_would_escape():
    body = ("The variable snake_case_name holds a < b and [sic] notes; it is ~5 km away, costs *3* "
            "euros and the <u>underlined</u> word stays a word. " * 3)
    html = article_html("Escapes", [body, "A second paragraph with enough words to be main text here."])
    text, _ = extract_main_text(html)
    assert "snake_case_name" in text and "a < b" in text and "[sic]" in text and "~5 km" in text
    assert "\\" not in text and "<u>" not in text and "</u>" not in text and "underlined word" in text


def test_short_text_is_returned_unchanged():
    text = "first line\nsecond line"
    assert select_passages(text, 1000, query="anything") == text


def test_over_the_cap_the_matching_passages_are_kept_in_order():
    html, paras = long_article()
    text, meta = extract_main_text(html)
    assert len(text) > 50_000
    cap = 20_000
    assert text.index(GOLD[2]) > cap and text.index(GOLD[1]) > cap  # the head would lose them
    kept = select_passages(text, cap, query=QUERY, title=meta["title"])
    assert len(kept) <= cap
    for gold in GOLD:
        assert gold in kept
    assert kept.startswith("Veltrane Harbor\n" + paras[0])  # the lead (heading and first paragraph) stays
    assert GAP in kept
    positions = [text.index(line) for line in kept.splitlines() if line != GAP]
    assert positions == sorted(positions)  # document order, not score order


def test_without_a_query_the_title_ranks_and_without_either_the_head_stays():
    _, paras = long_article()
    text = "\n".join(paras)
    by_title = select_passages(text, 20_000, title="Veltrane lighthouse keeper cottage")
    assert all(g in by_title for g in GOLD)
    head = select_passages(text, 20_000)
    assert head.startswith("\n".join(paras[:5])) and GOLD[2] not in head and len(head) <= 20_000


@pytest.mark.parametrize("cap", [50, 300, 1_000, 7_777])
def test_the_cap_is_never_exceeded(cap):
    _, paras = long_article(20, seed=cap)
    text = "\n".join(paras)
    assert len(select_passages(text, cap, query=QUERY)) <= cap
    one_line = "word " * 5000
    assert 0 < len(select_passages(one_line, cap, query="word")) <= cap


def test_passages_group_whole_lines():
    lines = [f"line {i} " + "x" * 200 for i in range(10)]
    passages = split_passages("\n".join(lines))
    assert "\n".join(passages) == "\n".join(lines)
    assert all(len(p) <= 700 for p in passages) and len(passages) >= 3


async def test_reader_keeps_the_passages_the_search_query_needs():
    html, paras = long_article()
    config = FetchConfig(allow_loopback=True, per_host_interval_s=0)
    with LoopbackServer({"/long": respond(html.encode())}) as server:
        session = HttpSession(config)
        reader = WebPageReader(ReaderConfig(max_chars=20_000, parse_workers=0), session)
        try:
            with_query = await reader.read(server.url("/long"), query=QUERY)
            plain = await reader.read(server.url("/long"))
        finally:
            await reader.aclose()
            await session.aclose()
    assert isinstance(with_query, Page) and isinstance(plain, Page)
    assert len(with_query.text) <= 20_000 and all(g in with_query.text for g in GOLD)
    assert with_query.text.startswith("Veltrane Harbor\n" + paras[0])
    # no query: ranked by the page title ("Veltrane Harbor"), still within the cap
    assert len(plain.text) <= 20_000 and plain.text.startswith("Veltrane Harbor\n")


def test_wiki_edit_links_and_citation_markers_are_not_text():
    paras = ["Adults measure 9 to 12 millimetres in length.[2] The elytra are clear.[14]" * 4,
             "Larvae are pale green and feed inside rolled leaves, which they seal with silk.[3]" * 3]
    html = article_html("Glassback beetle", paras).replace("<p>", "<h2>Description[edit]</h2><p>", 1)
    text, _ = extract_main_text(html)
    assert "[2]" not in text and "[edit]" not in text and "[14]" not in text
    assert "Description\n" in text and "in length. The elytra" in text
