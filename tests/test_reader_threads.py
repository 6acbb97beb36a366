"""Thread pages keep every post; article pages keep their comments out
(orig_local/retrieval/threads.py, extract.py). Pages at realistic scale (20-60k characters)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("trafilatura")

from orig_local.retrieval.reader import extract_main_text  # noqa: E402
from orig_local.retrieval.threads import render  # noqa: E402

TOPICS = ["the tide gauge", "the slipway winch", "the harbour crane", "the fog signal", "the pilot boat"]


def _reply(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return (f"Reply {i}: we serviced {topic} in week {i + 3} and found the bearing worn to {i + 11} "
            f"hundredths of a millimetre. The grease had dried into a crust, so we flushed it with "
            f"solvent, packed it with marine grease and logged the hours at {100 + 7 * i}.")


def _forum(n_posts: int = 40) -> tuple[str, list[str]]:
    bodies = [_reply(i) for i in range(n_posts)]
    posts = "".join(f"""
<div class="post" id="p{i}"><div class="userinfo"><b>keeper{i % 7}</b><br>Member<br>Joined: May 20{10 + i % 9}<br>Posts: {40 * i + 3}</div>
<div class="postbody"><div class="postdate">{1 + i % 28} Jun 2024, 0{i % 10}:15</div>
<div class="content">{body}</div><div class="signature">Harbour works crew, shift {i % 3}</div></div>
<div class="post-actions"><a href="#">Quote</a> <a href="#">Like</a> <a href="#">Report</a></div></div>"""
                    for i, body in enumerate(bodies))
    menu = "".join(f"<li><a href='/f/{k}'>Board {k}</a></li>" for k in range(60))
    html = (f"<!DOCTYPE html><html lang='en'><head><title>Bearing wear on harbour machinery</title></head><body>"
            f"<div id='header'><ul>{menu}</ul></div><h1>Bearing wear on harbour machinery</h1>{posts}"
            f"<div id='footer'><ul>{menu}</ul><p>Powered by ForumSoft</p></div></body></html>")
    return html, bodies


def test_every_post_of_a_thread_is_main_text_and_user_boxes_are_not():
    html, bodies = _forum()
    assert 20_000 <= len(html) <= 60_000
    text, _ = extract_main_text(html, "https://forum.invalid/t/1")
    missing = [b[:20] for b in bodies if b not in text]
    assert not missing, f"{len(missing)} of {len(bodies)} posts lost, e.g. {missing[:3]}"
    assert "Joined:" not in text and "Harbour works crew" not in text and "Report" not in text
    assert text.index(bodies[0]) < text.index(bodies[1]) < text.index(bodies[-1])  # thread order


def test_a_forum_laid_out_in_tables_with_numbered_ids_keeps_only_the_posts():
    """vBulletin 3's shape: one table per post, the user box in one cell, the body in a
    ``div id="post_message_N"`` without a class; trafilatura writes each post as a table row."""
    bodies = [_reply(i) for i in range(30)]
    posts = "".join(f"""<table class="tborder" id="post{900 + i}"><tr><td class="thead">{i % 28 + 1}.02.2024</td>
<td class="thead">#{i + 1}</td></tr><tr><td class="alt2"><a class="bigusername" href="/u/{i}">fitter{i}</a>
<div class="smallfont">Registriert seit: Jan 2019</div><div class="smallfont">Beitr&auml;ge: {i * 13}</div></td>
<td class="alt1" id="td_post_{900 + i}"><div class="smallfont"><strong>AW: Lagerverschlei&szlig;</strong></div>
<div id="post_message_{900 + i}">{body}</div></td></tr></table>""" for i, body in enumerate(bodies))
    menu = "".join(f"<li><a href='/f/{k}'>Forum {k}</a></li>" for k in range(80))
    html = (f"<!DOCTYPE html><html lang='de'><head><title>Lager</title></head><body><ul>{menu}</ul>"
            f"<div id='posts'>{posts}</div><ul>{menu}</ul></body></html>")
    assert 20_000 <= len(html) <= 60_000
    text, _ = extract_main_text(html, "https://forum.invalid/t/2")
    assert all(b in text for b in bodies)
    assert "Registriert seit" not in text and "fitter3" not in text and "|" not in text


def _article_with_comments(n_comments: int = 60) -> tuple[str, list[str], list[str]]:
    paras = [f"Paragraph {k} of the report: the new breakwater at Selm took {k + 2} months longer than "
             f"planned because the granite blocks from quarry {k} failed the frost test and were "
             f"replaced by basalt shipped from the north." for k in range(8)]
    comments = [f"Comment {j}: I walked the breakwater on day {j} and the basalt looks darker than "
                f"the old granite, but the fishermen say it is already full of crabs." for j in range(n_comments)]
    article = "".join(f"<p>{p}</p>" for p in paras)
    thread = "".join(f"<li class='comment'><div class='comment-author'>reader{j}</div>"
                     f"<div class='comment-content'><p>{c}</p></div><a href='#' class='reply'>Reply</a></li>"
                     for j, c in enumerate(comments))
    html = (f"<!DOCTYPE html><html lang='en'><head><title>Breakwater opens late</title></head><body>"
            f"<nav>{''.join(f'<a href=/s/{k}>Section {k}</a>' for k in range(40))}</nav>"
            f"<article><h1>Breakwater opens late</h1><div class='entry-content'>{article}</div></article>"
            f"<section id='comments'><h2>{n_comments} comments</h2><ol class='comment-list'>{thread}</ol></section>"
            f"<footer><p>Selm Gazette</p></footer></body></html>")
    return html, paras, comments


def test_an_article_keeps_its_comments_out_even_when_they_outweigh_it():
    html, paras, comments = _article_with_comments()
    assert 20_000 <= len(html) <= 60_000
    assert sum(map(len, comments)) > 3 * sum(map(len, paras))
    text, _ = extract_main_text(html, "https://news.invalid/a")
    assert all(p in text for p in paras)
    assert not any(c[:30] in text for c in comments)


def test_render_breaks_lines_at_blocks_and_skips_scripts():
    from lxml import html as lxml_html

    el = lxml_html.fromstring("<div class='content'>First line<br>second <b>bold</b> line"
                              "<script>var x = 1;</script><p>a paragraph</p>tail text<ul><li>item</li></ul></div>")
    assert render(el) == "First line\nsecond bold line\na paragraph\ntail text\nitem"


def test_the_parse_worker_never_imports_the_reader():
    """The reader<->parse_worker import circle stays broken: a worker loads the parsing modules
    only, and the reader module re-exports the names callers used to import from it."""
    code = ("import sys, orig_local.retrieval.parse_worker, orig_local.retrieval.parsepage; "
            "assert 'orig_local.retrieval.reader' not in sys.modules, 'worker imported reader'; "
            "from orig_local.retrieval.reader import ParseWorkers, ParseTimeout, WebPageReader, decode_html, "
            "extract_main_text, parse_response, now_iso, cap_text, page_title, looks_like_bot_wall")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_render_keeps_the_text_after_an_html_comment_and_counts_it():
    """A caller's tree may hold comments (``<!-- -->``, and ``<?...?>``, which the HTML parser
    reads as one): the text after one is part of its element, in render and in the size a group
    is measured by (the same as :func:`own_size` counts)."""
    from lxml import etree
    from lxml import html as lxml_html

    from orig_local.retrieval.threads import _SKIP, _walk, own_size

    el = lxml_html.fromstring("<div class='content'>First <!-- ad slot --> after the comment<p>para <!-- x -->"
                              "rest of para</p><?php echo 1 ?>after the instruction <b>bold</b><!-- end --> end"
                              "<script>var a = 1;<!-- hidden -->not text</script> <a href='/x'>link<!--c-->text</a></div>")
    assert render(el) == "First after the comment\npara rest of para\nafter the instruction bold end linktext"
    sizes: dict = {}
    for _, node in etree.iterwalk(el, events=("end",)):
        sizes[node] = own_size(node, sizes, _SKIP)
    assert _walk(el)[1:] == sizes[el]
