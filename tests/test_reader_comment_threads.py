"""Discussions whose posts sit in comment-named containers keep their posts; articles keep their
reader comments out (orig_local/retrieval/commentposts.py). With comments off, trafilatura
prunes every container named like a comment section, so on these threads its text was the
navigation menu. Pages at realistic scale (20-60k characters, site chrome, menus, sidebars)."""

from __future__ import annotations

import pytest

pytest.importorskip("trafilatura")

from orig_local.retrieval.reader import extract_main_text  # noqa: E402

BOATS = ["the clinker pram", "the gaff cutter", "the Drascombe lugger", "the sea kayak", "the dory"]
MENU_ITEMS = ["Home", "Popular", "All boards", "Restoration", "Sails and rigging", "Engines", "Moorings",
              "Classifieds", "Events", "Wiki", "Rules", "Contact"]


def _reply(i: int) -> str:
    return (f"Reply {i}: on {BOATS[i % len(BOATS)]} I stripped the old varnish in week {i + 2}, sanded with "
            f"{120 + 20 * (i % 5)} grit and laid {3 + i % 4} thin coats at fifteen degrees. The haze came back only "
            f"where the fog got in before the coat had skinned, so now I keep the shed door shut for {4 + i % 6} hours.")


def _menu(prefix: str, n: int) -> str:
    return "<ul class='menu'>" + "".join(f"<li><a href='/{prefix}/{k}'>{MENU_ITEMS[k % len(MENU_ITEMS)]} {k}</a></li>"
                                         for k in range(n)) + "</ul>"


def _sidebar() -> str:
    rules = "".join(f"<li>Rule {k}: keep posts about wooden boats, be kind to beginners, no selling in threads "
                    f"outside the classifieds board.</li>" for k in range(6))
    return (f"<aside class='side'><div class='side-box'><h2>About this board</h2><ol>{rules}</ol></div>"
            f"<div class='side-box'><h2>Related boards</h2>{_menu('r', 25)}</div></aside>")


def _page(title: str, main: str, lang: str = "en") -> str:
    state = ",".join(f'{{"id":{i},"k":"v{i * 31 % 997}"}}' for i in range(120))
    return (f"<!DOCTYPE html><html lang='{lang}'><head><title>{title}</title><script>window.__S__=[{state}]</script>"
            f"</head><body><header class='site-header'><a class='logo' href='/'>Boatshed</a><nav>{_menu('b', 40)}</nav>"
            f"<div class='login'><a href='/login'>Log in</a> <a href='/join'>Sign up</a></div></header>"
            f"<div class='content'>{main}{_sidebar()}</div>"
            f"<footer class='site-footer'>{_menu('f', 20)}<p>Boatshed is run by volunteers.</p></footer></body></html>")


def _read(html: str) -> str:
    assert 20_000 <= len(html) <= 60_000, len(html)
    return extract_main_text(html, "https://boats.invalid/t/1")[0]


def _tree_thread(bodies: list[str]) -> str:
    """Reddit's old markup: every reply a ``div.comment`` (nested under its parent), its body in
    ``div.usertext-body``, a tagline and a row of action links around it."""
    def comment(i: int, children: str) -> str:
        return (f"<div class='thing comment' id='thing_t1_{i}'><div class='entry'><p class='tagline'>"
                f"<a class='author' href='/u/{i}'>shipwright{i % 9}</a> <span class='score'>{30 - i} points</span> "
                f"<time>{i + 1} hours ago</time></p><form class='usertext'><div class='usertext-body'><div class='md'>"
                f"<p>{bodies[i]}</p></div></div></form><ul class='flat-list buttons'><li><a href='#'>permalink</a></li>"
                f"<li><a href='#'>save</a></li><li><a href='#'>report</a></li><li><a href='#'>reply</a></li></ul></div>"
                f"<div class='child'><div class='sitetable'>{children}</div></div></div>")

    out = ""
    for top in range(0, len(bodies), 3):  # each top-level reply with a chain of two under it
        chain = ""
        for i in reversed(range(top + 1, min(top + 3, len(bodies)))):
            chain = comment(i, chain)
        out += comment(top, chain)
    return out


@pytest.mark.parametrize("opening_class", ["selftext", "usertext-body", None])
def test_a_thread_whose_replies_are_classed_comment_keeps_every_reply_and_the_opening_post(opening_class):
    """The opening post is short (it asks), the replies hold the answer; the replies' containers
    (``commentarea``, ``comment``) are what trafilatura prunes with comments off. The opening
    post in a block of its own (``selftext``), in the replies' class (old Reddit: there the
    post-sequence rule finds the replies from it), or absent (a page of comments only)."""
    opening = ("My varnish goes milky a week after the last coat on two transoms. The shed is unheated and "
               "foggy in the mornings. What am I doing wrong?")
    bodies = [_reply(i) for i in range(45)]
    inner = f"<div class='md'><p>{opening}</p></div>" if opening_class == "usertext-body" else f"<p>{opening}</p>"
    post = (f"<div class='expando'><div class='{opening_class}'>{inner}</div></div>"
            if opening_class else "")
    main = (f"<div class='siteTable'><div class='thing link self'><p class='title'><a href='/t/1'>Milky varnish on "
            f"transoms</a></p><p class='tagline'>submitted 5 hours ago by harbourwatch</p>{post}</div></div>"
            f"<div class='commentarea'><div class='panestack-title'><span class='title'>all {len(bodies)} comments"
            f"</span></div><div class='sitetable nestedlisting'>{_tree_thread(bodies)}</div></div>")
    text = _read(_page("Milky varnish on transoms", main))
    missing = [b[:12] for b in bodies if text.count(b) != 1]
    assert not missing, f"{len(missing)} of {len(bodies)} replies lost or doubled, e.g. {missing[:3]}"
    assert [text.index(b) for b in bodies] == sorted(text.index(b) for b in bodies)  # thread order
    if opening_class:
        assert opening in text and text.index(opening) < text.index(bodies[0])
    for chrome in ("Popular 1", "Sails and rigging", "Rule 3", "points", "permalink", "shipwright3", "Log in"):
        assert chrome not in text, f"{chrome!r} kept"


def _disqus_article(paras: list[str], comments: list[str]) -> str:
    """An article with its comments rendered server-side by the Disqus plugin (``#disqus_thread``,
    ``#dsq-comments``, ``li.post``, ``div.post-message``), as WordPress sites serve them."""
    posts = "".join(f"<li class='post' id='post-{900 + j}'><div class='post-content'><div class='avatar'>"
                    f"<img src='/a/{j}.png' alt=''></div><div class='post-body'><header><span class='post-byline'>"
                    f"<a class='author' href='/u/{j}'>reader{j}</a></span> <a class='time-ago' href='#'>{j + 2} days ago"
                    f"</a></header><div class='post-message'><p>{c}</p></div><footer><a href='#'>Reply</a> "
                    f"<a href='#'>Share</a></footer></div></div></li>" for j, c in enumerate(comments))
    main = (f"<main><article class='post'><h1>The harbour crane returns</h1><div class='byline'>By Ann Rook, "
            f"12 June 2024</div><div class='entry'>{''.join(f'<p>{p}</p>' for p in paras)}</div></article>"
            f"<div id='disqus_thread'><div id='dsq-content'><h3>{len(comments)} comments</h3>"
            f"<ul id='dsq-comments'>{posts}</ul></div></div></main>")
    return _page("The harbour crane returns", main)


def test_an_article_with_disqus_comments_keeps_the_article_and_leaves_the_comments_out():
    """A news report several comments long under comments that outweigh it threefold: the report
    is the main text, the comments are not (they are no opening post)."""
    paras = [f"Paragraph {k}: the restored steam crane on the north quay lifted its first load since 1987 on "
             f"Saturday, a {k + 3} tonne granite block, watched by some {200 + 40 * k} people from the harbour wall."
             for k in range(9)]
    comments = [f"Comment {j}: my grandfather drove that crane in the sixties and would have loved to see it "
                f"working again; thank you to the volunteers of the harbour trust." for j in range(50)]
    html = _disqus_article(paras, comments)
    assert sum(map(len, comments)) > 3 * sum(map(len, paras))  # the shape under test
    text = _read(html)
    assert all(p in text for p in paras)
    assert not any(c[:25] in text for c in comments)


def test_a_news_brief_under_long_comments_keeps_the_comments_out():
    """A brief of four short paragraphs under long comments: still several comments long (the
    median comment is a fifth of it), so an article, not an opening post."""
    paras = [f"Brief {k}: the harbour crane lifted a {k + 3} tonne block on Saturday, its first load since 1987, "
             f"before some two hundred people on the harbour wall." for k in range(6)]
    comments = [f"Comment {j}: the crane is a treasure and the volunteers deserve every bit of praise they get." for j in range(60)]
    text = _read(_disqus_article(paras, comments))
    assert all(p in text for p in paras)
    assert not any(c[:25] in text for c in comments)


def test_a_blog_post_under_comments_as_long_as_a_third_of_it_keeps_them_out():
    """Long comments (each a third of the post): the post is no more than three comments long,
    but at over 1,200 characters of prose it is an article, not an opening post."""
    paras = [f"Part {k}: we lifted the old crane's jib with two mobile cranes, checked every rivet of the lattice "
             f"for corrosion, replaced {k + 4} of them with bolts of the same head shape, and painted the whole "
             f"jib in the red oxide the harbour board used in 1952, mixed to the shade of a surviving panel." for k in range(6)]
    comments = [f"Comment {j}: " + " ".join(f"I remember the crane in {1960 + j + k}, when it still lifted coal "
                                           f"from the colliers on the north quay." for k in range(8)) for j in range(24)]
    text = _read(_disqus_article(paras, comments))
    assert all(p in text for p in paras)
    assert not any(c[:25] in text for c in comments)


def test_a_qa_page_whose_answers_are_classed_comment_keeps_the_question_and_every_answer():
    """Q&A built on a comment system: the question in its own block, each answer a
    ``div.comment`` with a vote count and a user card, in a ``#comments`` list."""
    question = ("I am restoring a 1950s clinker dinghy. Which varnish holds up best on transoms that stay wet "
                "for days, and how many coats should go on bare mahogany before the first season?")
    answers = [[f"Answer {a}, part {k}: for a transom that stays wet I use a two-part varnish thinned {5 + a} percent "
                f"for the first coat, then {6 + a % 3} full coats, sanding lightly between each once it is hard."
                for k in range(1 + a % 3)] for a in range(24)]
    cards = "".join(f"""<div class="comment answer" id="comment-{300 + a}"><div class="vote"><button>Up</button>
<span class="vote-count">{40 - a}</span><button>Down</button></div><div class="comment-main"><div class="comment-body">
{''.join(f'<p>{p}</p>' for p in paras)}</div><div class="comment-meta"><a href="/u/{a}">boatwright{a}</a>
<span>{120 + a * 7} reputation</span> answered {a + 1} days ago</div></div></div>""" for a, paras in enumerate(answers))
    main = (f"<div class='question'><h1>Best varnish for a wet transom?</h1><div class='question-body'><p>{question}</p>"
            f"</div><div class='question-meta'>asked by harbourwatch, viewed 4,210 times</div></div>"
            f"<div id='comments' class='comments'><h2>{len(answers)} Answers</h2>{cards}</div>")
    text = _read(_page("Best varnish for a wet transom?", main))
    missing = [p[:16] for paras in answers for p in paras if p not in text]
    assert not missing, f"{len(missing)} answer paragraphs lost, e.g. {missing[:3]}"
    assert question in text
    for chrome in ("reputation", "boatwright3", "Popular 1", "Rule 3", "viewed 4,210"):
        assert chrome not in text, f"{chrome!r} kept"


def test_a_thread_of_short_line_replies_near_the_opening_post_bound_keeps_its_replies():
    """The cheap bound that spares measuring (a group's median reply, from its text serialised
    in C) must not turn away a thread the rule is for: replies written as many short lines (a
    cutting list) render longer than their raw text, one line break per line, and the opening
    post here is just under three rendered replies but over three raw ones."""
    replies = [[f"{k:02d}x{i:02d}cm" for k in range(50)] for i in range(30)]  # 50 lines of 7 characters
    raw, rendered = len("".join(replies[0])), len("\n".join(replies[0]))
    opening_lines = [f"Line {k} of the question: which lengths of oak do I cut for the floorboards of a twelve "
                     f"foot dinghy?" for k in range(11)]
    opening = sum(map(len, opening_lines))
    assert 3 * raw < opening <= 3 * rendered <= 1200, (raw, rendered, opening)  # the shape under test
    cards = "".join(f"<li class='comment' id='comment-{i}'><div class='comment-author'>joiner{i % 8}</div>"
                    f"<div class='comment-content'>{''.join(f'<p>{line}</p>' for line in r)}</div></li>"
                    for i, r in enumerate(replies))
    main = (f"<div class='question'><h1>Cutting list for floorboards</h1><div class='question-body'>"
            f"{''.join(f'<p>{line}</p>' for line in opening_lines)}</div></div>"
            f"<ol class='comment-list'>{cards}</ol>")
    text = _read(_page("Cutting list for floorboards", main))
    assert all(line in text.splitlines() for r in replies for line in r)
    assert all(line in text for line in opening_lines)  # (the user boxes are lines as short as the replies')
