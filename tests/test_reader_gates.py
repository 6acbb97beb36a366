"""The cheap checks in front of the reader's rules (orig_local/retrieval/threads.py,
denseblock.py) never turn away a page the rules are for: thread shapes where a check that is not
a necessary condition of the rule would skip the posts, and a template-indented product page for
the dense-block index. Pages at realistic scale (20-60k characters); no timing here (the speed is
printed by benchmarks/bench_retrieval.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("trafilatura")

from trafilatura.utils import load_html  # noqa: E402

from orig_local.retrieval.denseblock import densest_block, prune_apparatus  # noqa: E402
from orig_local.retrieval.extract import _extractor  # noqa: E402
from orig_local.retrieval.reader import extract_main_text  # noqa: E402
from orig_local.retrieval.threads import GROUPS_CHECKED, MIN_GROUP_CHARS, MIN_SHARE_OF_MAIN, _groups  # noqa: E402

TOPICS = ["the tide gauge", "the slipway winch", "the harbour crane", "the fog signal", "the pilot boat"]


def _reply(i: int) -> str:
    return (f"Reply {i}: we serviced {TOPICS[i % len(TOPICS)]} in week {i + 3} and found the bearing worn to "
            f"{i + 11} hundredths of a millimetre. The grease had dried into a crust, so we flushed it with "
            f"solvent, packed it with marine grease and logged the hours at {100 + 7 * i}.")


def _page(title: str, body: str, boards: int = 40) -> str:
    menu = "".join(f"<li><a href='/f/{k}'>Board {k}</a></li>" for k in range(boards))
    return (f"<!DOCTYPE html><html lang='en'><head><title>{title}</title></head><body><nav><ul>{menu}</ul></nav>"
            f"<h1>{title}</h1>{body}<footer><ul>{menu}</ul><p>Powered by ForumSoft</p></footer></body></html>")


def _read(html: str) -> str:
    assert 20_000 <= len(html) <= 60_000
    return extract_main_text(html, "https://forum.invalid/t/1")[0]


def _first_sentence(body: str) -> str:
    return body.split(". ")[0] + "."


def test_posts_in_table_cells_with_their_text_in_line_breaks_are_all_kept():
    """A phpBB 2-style table: user box and post in two cells of one row, the post's text in a
    span and ``<br>``-separated runs, none of it the cell's own text."""
    bodies = [_reply(i) for i in range(60)]
    rows = "".join(f"""<tr><td class="post-author" valign="top"><b>keeper{i % 7}</b><br>Joined: {i % 12 + 1}/2019<br>
Posts: {i * 17}</td><td class="post-text"><span class="postbody">{_first_sentence(b)}</span><br>{b[len(_first_sentence(b)):]}</td>
</tr>""" for i, b in enumerate(bodies))
    text = _read(_page("Winch bearings", f"<table class='forumline'>{rows}</table>"))
    assert all(_first_sentence(b) in text for b in bodies)
    assert "Joined:" not in text and "keeper3" not in text


def test_posts_half_of_whose_thread_is_user_boxes_are_all_kept():
    """User boxes as long as the posts (rank, dates, location, boat, in short lines), so the
    posts are about half of trafilatura's text, near the share the rule asks for: the bound on
    a group's text that spares the measuring must count every text node (tails too) in full."""
    bodies = [_reply(i) for i in range(40)]
    posts = "".join(f"""<div class="entry"><div class="poster"><b>keeper{i % 7}</b><br>Rank: Senior deckhand, north quay
<br>Joined: {i % 12 + 1} May 2019, posts: {i * 17}<br>Location: Selm harbour, berth {i % 9}<br>Boat: MV Tern, a 12 metre trawler
<br>Certificates: VHF, sea survival, first aid</div><div class="entry-text"><span>{_first_sentence(b)}</span><br>
{b[len(_first_sentence(b)):]}</div></div>""" for i, b in enumerate(bodies))
    html = _page("Winch bearings", posts)
    text = _read(html)
    assert all(_first_sentence(b) in text for b in bodies)
    assert "Joined:" not in text and "Senior deckhand" not in text and "keeper3" not in text


def test_a_thread_whose_first_post_trafilatura_drops_keeps_every_post():
    """trafilatura leaves out the opening post (mostly links); the posts are found from the
    members after it, and the posters' lines stay out."""
    opening = "Opening question: " + " ".join(f"<a href='/wiki/{k}'>part {k}</a>" for k in range(25))
    bodies = [_reply(i) for i in range(70)]
    posts = "".join(f"<div class='message'><div class='author'>keeper{i % 7}, {i % 28 + 1} Jun</div>"
                    f"<div class='message-body'>{b}</div></div>" for i, b in enumerate([opening, *bodies]))
    html = _page("Winch", posts)
    tree = load_html(html)
    ex = _extractor()
    plain = ex.trafilatura.extract(tree, output_format="txt", include_comments=False, config=ex.config)
    assert "part 3" not in plain and bodies[0] in plain  # the shape under test: first post dropped
    text = _read(html)
    assert all(b in text for b in bodies) and "Opening question: part 0" in text
    assert "keeper3, " not in text


def _wrapped_post(i: int, body: str) -> str:
    """A post in the nesting of modern forum software (XenForo's shape, class names of its own
    so that trafilatura does not know them): nine wrappers around the text."""
    return f"""<div class="msg" id="m{500 + i}"><div class="msg-inner">
<div class="cell-user"><div class="user-card"><div class="user-details"><b class="user-name">keeper{i % 7}</b><br>
<span class="user-title">Well-known member</span></div>
<div class="user-extras">Joined: May {2010 + i % 9} - Messages: {40 * i + 3} - Location: Selm</div></div></div>
<div class="cell-main"><div class="msg-main"><div class="msg-attribution"><span class="msg-date">{1 + i % 28} Jun 2024</span>
<a href="#post-{i}">#{i + 1}</a></div><div class="msg-content"><div class="msg-user-content"><div class="msg-body">
<div class="msg-text-wrap"><div class="msg-text">{body}</div></div></div></div>
<div class="msg-edit">Last edited: {1 + i % 28} Jun 2024</div></div>
<div class="msg-footer"><div class="msg-actions"><a href="#">Report</a> <a href="#">Like</a></div></div>
</div></div></div></div>"""


def test_a_deeply_wrapped_thread_with_more_candidate_groups_than_are_checked():
    """Each post's text sits in nine wrappers of their own class, so more groups than
    ``GROUPS_CHECKED`` may hold the posts: all are measured then (no shortcut), and the posts
    come out without the user boxes, edit notes and action bars trafilatura keeps."""
    bodies = [_reply(i) for i in range(30)]
    html = _page("Winch bearings", "<div class='block-body'>" + "".join(
        _wrapped_post(i, b) for i, b in enumerate(bodies)) + "</div>")
    tree = load_html(html)
    ex = _extractor()
    plain = ex.trafilatura.extract(tree, output_format="txt", include_comments=False, config=ex.config)
    least = max(MIN_GROUP_CHARS, 0.75 * MIN_SHARE_OF_MAIN * len(" ".join(plain.split())))
    assert len(_groups(tree, least)) > GROUPS_CHECKED and "Joined:" in plain  # the shape under test
    text = _read(html)
    assert all(b in text for b in bodies)
    for chrome in ("Joined:", "Well-known member", "Last edited", "Report", "keeper3"):
        assert chrome not in text, f"{chrome!r} kept"


def test_a_threaded_discussion_keeps_each_reply_once_in_order():
    """Replies nested in replies (one class at every depth): the posts are the outermost
    members, each with the replies inside it, so every reply appears once."""
    bodies: list[str] = []

    def reply(depth: int) -> str:
        body = _reply(len(bodies))
        bodies.append(body)
        inner = reply(depth + 1) if depth < 3 else ""
        return (f"<div class='reply'><div class='meta'>sailor{len(bodies) % 9} - {len(bodies)} points - "
                f"{depth + 1} hours ago</div><div class='reply-text'>{body}</div><div class='replies'>{inner}</div></div>")

    text = _read(_page("Winch bearings: what grease?", "<div class='thread'>" + "".join(
        reply(0) for _ in range(14)) + "</div>"))
    assert all(text.count(_first_sentence(b)) == 1 for b in bodies)
    assert [text.index(_first_sentence(b)) for b in bodies] == sorted(text.index(_first_sentence(b)) for b in bodies)
    assert "points - " not in text


def test_a_product_page_indented_by_its_template_still_gets_its_dense_block():
    """Template engines leave long runs of blank lines and indentation before an element's
    text; the index of leading text normalises the head of each text and must then read on."""
    pad = "\n" + " " * 120 + "\n" + " " * 120  # more whitespace than the head it normalises first
    paras = "".join(f"<p>{pad}The Tidewater lamp number {k} is cast in brass and spun copper, with a hand-blown "
                    f"glass shade that throws a warm pool of light across a reading chair.</p>" for k in range(6))
    specs = "".join(f"<li>{pad}Spec {k}: value {k * 7} units of measured output</li>" for k in range(12))
    chrome = "".join(f"<li><a href='/category/{k}'>Category {k}</a></li>" for k in range(300))
    html = f"""<!DOCTYPE html><html lang="en"><head><title>Tidewater lamp</title></head><body>
<header><nav><ul>{chrome}</ul></nav></header><div class="product">
 <div class="buy-box"><h1>Tidewater brass lamp</h1><div class="price">&pound;89.00</div>
  <p class="stock">{pad}In stock &ndash; order within 2 hrs for next-day delivery</p><button>Add to basket</button></div>
 <section id="d" class="description"><h2>About this lamp</h2>{paras}</section>
 <section id="s" class="specifications"><h2>Technical details</h2><ul>{specs}</ul></section></div>
<section class="recently-viewed"><h2>Recently viewed</h2><p>{pad}You have no recently viewed items.</p></section>
<footer><p>{pad}&copy; 2024 Lamps Direct Ltd. Registered in England, company number 01234567.</p></footer></body></html>"""
    assert 20_000 <= len(html) <= 60_000
    tree = load_html(html)
    prune_apparatus(tree)
    ex = _extractor()
    plain = ex.trafilatura.extract(tree, output_format="txt", include_comments=False, config=ex.config)
    block = densest_block(tree, plain)
    assert block is not None, "the loose-fragment page was not recognised"
    assert "Spec 11: value 77" in block and "About this lamp" in block and "In stock" not in block
