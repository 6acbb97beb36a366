"""Threads whose posts trafilatura prunes as comments: keep the posts, not the navigation.

With comments off, trafilatura removes every container named like a comment section
(``comment``, ``comments``, ``comment-list``, ``disqus_thread``, ...) before it looks for the main
text. On a page whose *posts* sit in such containers (Reddit-like threads, forums and Q&A sites
built on a comment system, a discussion page of nothing but comments) that is the whole
discussion, and its main text became the navigation menu, the page title and perhaps the opening
post. The reader keeps the tree trafilatura ran on a copy of, so the posts are still there.

The rule is structural, as in :mod:`orig_local.retrieval.threads`: a *post group* (outermost
elements sharing a tag and class, mostly text, repeated) that stands inside (or is) an element
named like comments, none of whose first members trafilatura kept, and that holds more text than
the prose trafilatura kept, is the discussion. It replaces the lost main text when what
trafilatura kept reads as one post, not as an article: its prose (lines of ``PROSE_LINE``
characters or more) is at most ``OPENING_MAX`` characters and at most ``OPENING_POSTS`` times the
median post. The main text is then trafilatura's lines that are not the text of a link (the
opening post or question, the heading; not the menu) followed by every post in document order,
of nested groups (``comment`` > ``comment-body``) the one of densest prose, as in ``threads``.

It runs before the post-sequence rule: on such a page trafilatura's text is menus and sidebar,
whose boxes that rule may read as posts. The two never claim the same group: that rule needs
members trafilatura kept, this one none of the first three.

An article with reader comments is left alone: its text is several times a comment (a news
report is a dozen comments long, a blog post longer), so the prose test fails, however many
comments there are. A short news brief under long comments can pass it; then the comments are
added after the brief, which stays (the cost there is precision, never the article). Lines of
trafilatura's text that are no link stay as they are, a sidebar's prose among them if it kept one.

Cost: on a page whose trafilatura text holds more prose than ``OPENING_MAX`` (most articles) the
rule reads that text only; otherwise one XPath over the class and id attributes finds the
elements named like comments, and only when their text (serialised in C) may hold the posts are
the groups found (lxml's C iteration, C-serialised bounds); when none of them may pass the
median-post test (a C-serialised bound again) none is measured. ``bench_retrieval.py`` prints the
share; a thread it reads costs one walk of each nesting level of its post markup.
"""

from __future__ import annotations

import statistics
from typing import Any

from orig_local.retrieval.threads import MAX_LINK_SHARE, MIN_GROUP_CHARS, _flat, _groups, _Main, _mean_line

PROSE_LINE = 80        # a line this long is a paragraph, not a menu item, a heading or a date
OPENING_MAX = 1200     # prose above this is an article (a news report, a blog post), not an opening post
OPENING_POSTS = 3      # an opening post is no longer than a few replies; an article is many comments long

# the class and id attributes naming comment sections and their posts, either case: a class with
# "omment" ("comment", "Comments", "comment-list", "wpd-comment"), an id with that, "isqus"
# ("disqus_thread") or "epl" ("replies", "reply-17"). An XPath over these attributes alone, the
# fewest contains() on the class, the most numerous: ~0.1 ms on a 64 KB page, about a fourth of
# a predicate on every element (each contains() copies the attribute's value out of the tree)
_CLASS_WORDS = ("omment",)
_ID_WORDS = ("omment", "isqus", "epl")
_NAMED_ATTRS = " | ".join(f"//@{attr}[{' or '.join(f'contains(., {word!r})' for word in words)}]"
                          for attr, words in (("class", _CLASS_WORDS), ("id", _ID_WORDS)))


def pruned_posts(root: Any, main_text: str) -> str | None:
    """The posts of a discussion trafilatura pruned as comments, after the opening text it kept
    (without the lines that are link text: the menu), or None when the page is no such thread."""
    opening = sum(len(line) for line in main_text.splitlines() if len(line.strip()) >= PROSE_LINE)
    least = max(MIN_GROUP_CHARS, opening)
    if opening > OPENING_MAX or _named_text(root) < least:
        return None
    texts = _pruned_group(root, _Main(main_text), least, opening)
    if texts is None or opening > OPENING_POSTS * statistics.median(map(len, texts)):
        return None
    return "\n".join([*_not_links(root, main_text), *texts])


def _pruned_group(root: Any, main: _Main, least: float, opening: int) -> list[str] | None:
    """The texts of the post group of densest prose among those inside comment-named elements
    that trafilatura dropped, hold ``least`` characters or more and few links; None if none, or
    if none of them may pass the opening-post test (then nothing is measured: a short article
    under thousands of comments costs C-level serialising, not a walk of every comment)."""
    groups = [g.members() for g in _groups(root, least) if _inside_named(g.els[0])]
    # trafilatura kept a group's first members: not pruned (threads.all_posts' case)
    groups = [members for members in groups if not main.leads(members)]
    if not any(opening <= OPENING_POSTS * _median_bound(members) for members in groups):
        return None
    found: list[list[str]] = []
    for members in groups:
        chars, links = main.size(members)
        texts = [t for t in (main.read(m)[0] for m in members) if t]
        if chars >= least and links <= MAX_LINK_SHARE * chars and len(texts) >= 2:
            found.append(texts)
    if not found:
        return None
    most = max(sum(map(len, texts)) for texts in found)
    return max((t for t in found if sum(map(len, t)) >= most / 2), key=_mean_line)


def _median_bound(members: list[Any]) -> float:
    """An upper bound of the median length of the members' rendered texts: twice the median of
    their whole text serialised in C (a render joins words by one space or line break: at most as
    many separators as word characters), over the members with any text. (A member whose text
    is all script or style renders empty but counts here: a page of such members is no thread.)"""
    from lxml import etree

    sizes = [len(etree.tostring(m, method="text", encoding=str, with_tail=False).strip()) for m in members]
    return 2 * statistics.median([n for n in sizes if n] or [0])


def _named_text(root: Any) -> int:
    """An upper bound of the text in comment-named elements (the outermost ones, serialised in
    C): the posts must hold more than the prose trafilatura kept, so most pages end here without
    a Python walk."""
    from lxml import etree

    named = {attr.getparent() for attr in root.xpath(_NAMED_ATTRS)}
    outermost = (el for el in named if not any(a in named for a in el.iterancestors()))
    return sum(len(etree.tostring(el, method="text", encoding=str, with_tail=False)) for el in outermost)


def _inside_named(el: Any) -> bool:
    return any(_is_named(a) for a in (el, *el.iterancestors()))


def _is_named(el: Any) -> bool:
    cls, ident = el.get("class") or "", el.get("id") or ""
    return any(w in cls for w in _CLASS_WORDS) or any(w in ident for w in _ID_WORDS)


def _not_links(root: Any, main_text: str) -> list[str]:
    """The lines of ``main_text`` that are not the whole text of a link (menus, tag and board
    lists); list and table prefixes aside."""
    from lxml import etree

    links = {_flat(etree.tostring(a, method="text", encoding=str, with_tail=False)) for a in root.iter("a")}
    return [line for line in main_text.splitlines()
            if line.strip() and _flat(line.lstrip("-| ")) not in links]
