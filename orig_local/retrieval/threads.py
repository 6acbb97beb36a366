"""Pages made of repeated posts (forum threads, Q&A pages): keep every post, not the first.

trafilatura looks for the article body by class and takes the *first* match (``@class='post'``,
``post-body``, ...). On a forum thread or a Q&A page every post matches, so its main text is the
opening post (with the poster's user box and signature) and every reply is lost: 0.41 F1 on the
forum page of the extraction set, where the replies hold the answer the user searched for.

Where trafilatura falls back to a larger block instead (its readability comparison), it keeps
every post but with each poster's user box, join date, post count and signature between them:
0.66 precision on a phpBB-style thread.

The rule here is structural, not per site. A *post group* is the set of outermost elements that
share a tag and a class (``div.content``, ``div.s-prose``, ``div.cooked`` ...; without a class,
a numbered id: ``div#post_message_88100``), hold mostly
text (few links), and repeat. When the posts make up a large share of trafilatura's text and
either some are missing from it, or all are there and nothing outside them reads as prose, the
page is a sequence of posts and its main text is every member, in document order. An article
with reader comments is left alone: trafilatura's text is the article, which is no comment, so
no comment group makes up a share of it.

One pass over the tree measures every element's text and link length (bottom-up, no string
built); strings are built only for the few largest groups, so the cost is linear in the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# Elements that wrap a post's body on real forums and Q&A sites.
_CONTAINERS = frozenset({"div", "article", "section", "td", "li", "blockquote"})
_SKIP = frozenset({"script", "style", "noscript", "template", "nav", "header", "footer", "form",
                   "select", "button", "svg", "iframe"})
_BLOCK = frozenset({"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr",
                    "table", "blockquote", "pre", "section", "article", "dd", "dt", "hr"})
_SPACE = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")

MIN_GROUP_CHARS = 200   # a group with less text than a short paragraph is page furniture
MAX_LINK_SHARE = 0.3    # menus, tag clouds and link lists repeat too; posts are text
MIN_SHARE_OF_MAIN = 0.4  # the posts found must be most of trafilatura's text (the rest: user boxes)
GROUPS_CHECKED = 8      # largest groups by text; strings are built for these only
MIN_POSTS_ALL_INSIDE = 3  # all posts already in trafilatura's text: a thread, not two text boxes
PROSE_LINE = 100        # a line this long is a paragraph, not a user box, date or signature
MAX_PROSE_OUTSIDE = 0.1  # share of the posts' text that may stand outside them as prose
FIRST_CHECKED = 3       # members looked at before rendering a whole group
WITHIN_SHARE = 0.9      # share of a post's three-word runs found in trafilatura's text: it is there


@dataclass
class _Group:
    members: list[Any] = field(default_factory=list)
    chars: int = 0
    links: int = 0


def _measure(root: Any) -> dict[tuple[str, str], _Group]:
    """Outermost members of each (tag, class) group, with their text and link lengths."""
    from lxml import etree

    sizes: dict[Any, tuple[int, int]] = {}
    groups: dict[tuple[str, str], _Group] = {}
    open_count: dict[tuple[str, str], int] = {}
    outer: set[Any] = set()
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag if isinstance(el.tag, str) else ""
        key = _group_key(el, tag) if tag in _CONTAINERS else None
        if event == "start":
            if key is not None:
                if not open_count.get(key):
                    outer.add(el)
                open_count[key] = open_count.get(key, 0) + 1
            continue
        chars, links = own_size(el, sizes, _SKIP, forget=True)
        sizes[el] = (chars, links)
        if key is not None:
            open_count[key] -= 1
            if el in outer:
                group = groups.setdefault(key, _Group())
                group.members.append(el)
                group.chars += chars
                group.links += links
    return groups


def _group_key(el: Any, tag: str) -> tuple[str, str] | None:
    """(tag, class), else (tag, id with its digits masked): vBulletin's ``post_message_88100``
    and many CMS' ``comment-5001`` carry no class, only a numbered id."""
    cls = el.get("class")
    if cls:
        return tag, cls
    ident = el.get("id")
    if ident and _DIGITS.search(ident):
        return tag, "#" + _DIGITS.sub("0", ident)
    return None


def own_size(el: Any, sizes: dict[Any, tuple[int, int]], skip: frozenset[str], *,
             forget: bool = False) -> tuple[int, int]:
    """(text characters, characters inside links) of ``el``, from its children's entries in
    ``sizes`` (a bottom-up walk fills it); an element whose tag is in ``skip`` (or a comment)
    counts nothing. ``forget``: drop each child's entry once read, for a caller that keeps only
    the outermost elements (the dict stays small)."""
    tag = el.tag if isinstance(el.tag, str) else ""
    read = sizes.pop if forget else sizes.get
    chars, links = len((el.text or "").strip()), 0
    for child in el:
        c, k = read(child, (0, 0))
        chars += c + len((child.tail or "").strip())
        links += k
    if not tag or tag in skip:
        return 0, 0
    return chars, (chars if tag == "a" else links)


def render(el: Any) -> str:
    """An element's text, one line per block (paragraph, list item, line break, heading)."""
    from lxml import etree

    parts: list[str] = []
    skip_depth = 0
    for event, node in etree.iterwalk(el, events=("start", "end")):
        tag = node.tag if isinstance(node.tag, str) else ""
        if event == "start":
            if skip_depth or tag in _SKIP or not tag:
                skip_depth += 1
                continue
            if tag in _BLOCK:
                parts.append("\n")
            parts.append(node.text or "")
            continue
        if skip_depth:
            skip_depth -= 1
            if skip_depth:  # still inside a skipped element
                continue
        elif tag in _BLOCK:
            parts.append("\n")
        if node is not el:
            parts.append(node.tail or "")
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return set(zip(words, words[1:], words[2:], strict=False))


def _within(words: list[str], main_shingles: set[tuple[str, ...]], main_words: set[str]) -> bool:
    """Whether a member's text is in trafilatura's text: nearly all its runs of three words are
    (trafilatura rewrites a little inside a paragraph). Hash look-ups, so a thread of thousands
    of posts costs time linear in its text, not posts x text."""
    shingles = _shingles(words)
    if not shingles:
        return all(w in main_words for w in words)
    return len(shingles & main_shingles) >= WITHIN_SHARE * len(shingles)


def all_posts(root: Any, main_text: str) -> str | None:
    """The posts of a thread page, without what surrounds each, or None for a page that is no
    thread. Two shapes: ``main_text`` (trafilatura's) holds some posts and misses others, or it
    holds all of them with each poster's user box, date and signature between them, and no
    prose of its own outside the posts.

    Where several groups qualify (``div.post`` > ``div.postbody`` > ``div.content`` nest, and
    each holds the posts), the one of densest prose wins: the body alone, without the dates,
    user boxes and signatures around it, which are short lines."""
    main = main_text.split()
    if not main:
        return None
    main_shingles, main_words, main_chars = _shingles(main), set(main), len(_flat(main_text))
    # a group with less text than its share of trafilatura's needs no strings built (user boxes,
    # dates and signatures are groups too); 0.75: the two measures count whitespace differently
    least = max(MIN_GROUP_CHARS, 0.75 * MIN_SHARE_OF_MAIN * main_chars)
    groups = [g for g in _measure(root).values()
              if len(g.members) >= 2 and g.chars >= least and g.links <= MAX_LINK_SHARE * g.chars]
    found: list[tuple[list[str], list[list[str]], bool]] = []  # texts, their words, all inside
    for group in sorted(groups, key=lambda g: g.chars, reverse=True)[:GROUPS_CHECKED]:
        # trafilatura keeps the first post when it keeps any (it takes the first match), so a
        # group none of whose first members is in its text is not the posts (comments, say):
        # that costs a few renders instead of all
        if not any(_within(render(m).split(), main_shingles, main_words) for m in group.members[:FIRST_CHECKED]):
            continue
        texts = [t for t in (render(m) for m in group.members) if t]
        words = [t.split() for t in texts]
        inside = [t for t, w in zip(texts, words, strict=True) if _within(w, main_shingles, main_words)]
        if inside and sum(len(_flat(t)) for t in inside) >= MIN_SHARE_OF_MAIN * main_chars and (
                len(inside) < len(texts) or len(texts) >= MIN_POSTS_ALL_INSIDE):
            found.append((texts, words, len(inside) == len(texts)))
    if not found:
        return None
    most = max(sum(map(len, texts)) for texts, _, _ in found)
    found = [f for f in found if sum(map(len, f[0])) >= most / 2]
    for texts, words, all_inside in sorted(found, key=lambda f: _mean_line(f[0]), reverse=True):
        # the prose check last, and only until a group passes: it reads all of trafilatura's text
        if not all_inside or not _prose_outside(main_text, words, MAX_PROSE_OUTSIDE * sum(map(len, texts))):
            return "\n".join(texts)
    return None


def _prose_outside(main_text: str, posts: list[list[str]], limit: float) -> bool:
    """Whether ``main_text`` has more than ``limit`` characters outside every post in
    paragraph-long runs (``PROSE_LINE`` or more): an article's own text, which user boxes, dates
    and signatures never are. A word is in a post when a run of three words around it is; a line
    break or a table cell border (how trafilatura writes a forum laid out in tables) ends a run."""
    post_shingles = set().union(*(_shingles(w) for w in posts))
    total = 0
    for cell in (c for line in main_text.split("\n") for c in line.split("|")):
        if len(cell) < PROSE_LINE:  # user boxes, dates, signatures: most lines of a thread
            continue
        words = cell.split()
        covered = [False] * len(words)
        for i, shingle in enumerate(zip(words, words[1:], words[2:], strict=False)):
            if shingle in post_shingles:
                covered[i] = covered[i + 1] = covered[i + 2] = True
        run = 0
        for word, inside in zip(words, covered, strict=True):
            total, run = (total + (run if run >= PROSE_LINE else 0), 0) if inside else (total, run + len(word) + 1)
        total += run if run >= PROSE_LINE else 0
        if total > limit:
            return True
    return False


def _mean_line(texts: list[str]) -> float:
    lines = [line for t in texts for line in t.split("\n")]
    return sum(map(len, lines)) / len(lines)
