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

Cost: on most pages no group can be the posts, and that is told without a Python walk of the
tree: lxml's C iteration visits the container elements only, a C-serialised upper bound of
each group's text drops the groups too small to be a share of trafilatura's, and a group none of
whose first members is in trafilatura's text is dropped before it is measured. Only the groups
left are read, each member once: one walk renders it and counts its text and link characters.
The cost is linear in the page and small beside trafilatura's (``benchmarks/bench_retrieval.py``
prints the share).
"""

from __future__ import annotations

import re
import sys
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
GROUPS_CHECKED = 8      # largest groups by text; only these are compared with trafilatura's text
MIN_POSTS_ALL_INSIDE = 3  # all posts already in trafilatura's text: a thread, not two text boxes
PROSE_LINE = 100        # a line this long is a paragraph, not a user box, date or signature
MAX_PROSE_OUTSIDE = 0.1  # share of the posts' text that may stand outside them as prose
FIRST_CHECKED = 3       # members looked at before rendering a whole group
WITHIN_SHARE = 0.9      # share of a post's three-word runs found in trafilatura's text: it is there


class _Group:
    """The elements of one (tag, class) group in document order; its members are the outermost
    of them, found as far as asked (most groups are dropped after their first few)."""

    def __init__(self, els: list[Any]):
        self.els = els
        self._outer = [els[0]]  # nothing before the first element of a group can hold it
        self._seen = 1
        self._all = set(els)

    def _next_outer(self) -> bool:
        """Find the next outermost member; False when there is none. An element is inside a
        member when one of its ancestors is in the group: the walk up stops at the first (the
        parent, in a chain of nested replies), so it is short either way."""
        while self._seen < len(self.els):
            el = self.els[self._seen]
            self._seen += 1
            if not any(a in self._all for a in el.iterancestors(el.tag)):
                self._outer.append(el)
                return True
        return False

    def members(self, upto: int | None = None) -> list[Any]:
        """The first ``upto`` outermost members (all: None)."""
        while (upto is None or len(self._outer) < upto) and self._next_outer():
            pass
        return self._outer if upto is None else self._outer[:upto]

    def has_text(self, least: float) -> bool:
        """Whether the members may hold ``least`` characters of text: their whole text,
        serialised in C, is an upper bound (:func:`own_size` counts each of those text nodes
        stripped, and none under a script or the like). Members are found only as far as
        needed."""
        from lxml import etree

        total, i = 0, 0
        while i < len(self._outer) or self._next_outer():
            total += len(etree.tostring(self._outer[i], method="text", encoding=str, with_tail=False))
            if total >= least:
                return True
            i += 1
        return False


def _groups(root: Any, least: float) -> list[_Group]:
    """The (tag, class) groups with two or more outermost members and possibly ``least``
    characters of text, in the order they first appear; no element walked in Python. lxml's C
    iteration with a tag filter visits the container elements only (not the links, spans and
    paragraphs that make up most of a page), and an upper bound of each group's text
    (:meth:`_Group.has_text`) leaves out the menus, user boxes and dates before anything is
    measured."""
    by_key: dict[tuple[str, str], list[Any]] = {}
    for el in root.iter(*_CONTAINERS):
        key = _group_key(el, el.tag)
        if key is not None:
            by_key.setdefault(key, []).append(el)
    groups = [_Group(els) for els in by_key.values() if len(els) >= 2]
    return [g for g in groups if g.has_text(least) and len(g.members(2)) == 2]


def _end_key(el: Any) -> tuple[int, ...]:
    """Where ``el`` ends, comparable between elements: its path of child positions from the
    root, then a number above any position (an element ends after everything it holds)."""
    path = [sys.maxsize]
    parent = el.getparent()
    while parent is not None:
        path.append(parent.index(el))
        el, parent = parent, parent.getparent()
    return tuple(reversed(path))


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
    return _walk(el)[0]


def _walk(el: Any) -> tuple[str, int, int]:
    """:func:`render`'s text, and the element's (text characters, characters inside links) as
    :func:`own_size` counts them, from one walk: a group's size costs nothing beside reading
    it. A comment (``<!-- -->``, or ``<?...?>``, which the HTML parser reads as one) is no text,
    but the text after it is its parent's: lxml reports it only when asked for comment events."""
    from lxml import etree

    parts: list[str] = []
    skip_depth = 0
    open_sizes: list[list[int]] = []  # [chars, links] of each element open on the way down
    size = (0, 0)
    for event, node in etree.iterwalk(el, events=("start", "end", "comment", "pi")):
        if event in ("comment", "pi"):
            tail = node.tail or ""
            open_sizes[-1][0] += len(tail.strip())
            if not skip_depth:
                parts.append(tail)
            continue
        tag = node.tag
        if not isinstance(tag, str):
            tag = ""
        if event == "start":
            text = node.text or ""  # read once: each read copies the string out of the tree
            open_sizes.append([len(text.strip()), 0])
            if skip_depth or tag in _SKIP or not tag:
                skip_depth += 1
                continue
            if tag in _BLOCK:
                parts.append("\n")
            parts.append(text)
            continue
        chars, links = open_sizes.pop()
        size = (0, 0) if not tag or tag in _SKIP else (chars, chars if tag == "a" else links)
        tail = (node.tail or "") if open_sizes else ""  # the walked element's own tail is no part of it
        if open_sizes:
            open_sizes[-1][0] += size[0] + len(tail.strip())
            open_sizes[-1][1] += size[1]
        if skip_depth:
            skip_depth -= 1
            if skip_depth:  # still inside a skipped element
                continue
        elif tag in _BLOCK:
            parts.append("\n")
        parts.append(tail)
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line), *size


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _flat_len(words: list[str]) -> int:
    """``len(_flat(text))`` for the words of ``text``: joined by single spaces (str.split and
    ``\\s`` agree on what whitespace is), with no string built."""
    return sum(map(len, words)) + len(words) - 1 if words else 0


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


class _Main:
    """trafilatura's text as members are compared with it, and each member read once (text,
    text characters, link characters): the first members are read before a group is measured,
    and again with the rest."""

    def __init__(self, main_text: str):
        self.text = main_text
        self.chars = len(_flat(main_text))
        self._index: tuple[set[tuple[str, ...]], set[str]] | None = None  # built only when a group is read
        self._read: dict[Any, tuple[str, int, int]] = {}

    def read(self, member: Any) -> tuple[str, int, int]:
        if member not in self._read:
            self._read[member] = _walk(member)
        return self._read[member]

    def holds(self, words: list[str]) -> bool:
        if self._index is None:
            main = self.text.split()
            self._index = _shingles(main), set(main)
        return _within(words, *self._index)

    def leads(self, members: list[Any]) -> bool:
        """Whether one of a group's first members is in the text. trafilatura keeps the first
        post when it keeps any (it takes the first match), so a group none of whose first
        members it kept is not the posts (comments, say): a few renders instead of all."""
        return any(self.holds(self.read(m)[0].split()) for m in members[:FIRST_CHECKED])

    def size(self, members: list[Any]) -> tuple[int, int]:
        """(text characters, characters inside links) of a group, as :func:`own_size` counts."""
        reads = [self.read(m) for m in members]
        return sum(r[1] for r in reads), sum(r[2] for r in reads)


def _checked_groups(root: Any, main: _Main, least: float) -> list[list[Any]]:
    """The groups worth reading, largest first: two or more outermost members, ``least``
    characters of text or more, few of them in links; the ``GROUPS_CHECKED`` largest.

    Most pages have no group with that much text, and an upper bound (C-level string values)
    tells without a walk. Where no more than ``GROUPS_CHECKED`` groups are left, no cut is to be
    made, so a group whose first members trafilatura dropped is out whatever its size and is
    not measured; the result is the same as measuring all of them."""
    groups = _groups(root, least)
    if len(groups) <= GROUPS_CHECKED:
        groups = [g for g in groups if main.leads(g.members(FIRST_CHECKED))]
    groups.sort(key=lambda g: _end_key(g.els[0]))  # ties in size keep the order the groups end in
    sized = [(g, *main.size(g.members())) for g in groups]
    kept = sorted(((g, c) for g, c, k in sized if c >= least and k <= MAX_LINK_SHARE * c),
                  key=lambda gc: gc[1], reverse=True)
    return [g.members() for g, _ in kept[:GROUPS_CHECKED]]


def all_posts(root: Any, main_text: str) -> str | None:
    """The posts of a thread page, without what surrounds each, or None for a page that is no
    thread. Two shapes: ``main_text`` (trafilatura's) holds some posts and misses others, or it
    holds all of them with each poster's user box, date and signature between them, and no
    prose of its own outside the posts.

    Where several groups qualify (``div.post`` > ``div.postbody`` > ``div.content`` nest, and
    each holds the posts), the one of densest prose wins: the body alone, without the dates,
    user boxes and signatures around it, which are short lines."""
    if not main_text.split():
        return None
    main = _Main(main_text)
    # a group with less text than its share of trafilatura's needs no strings built (user boxes,
    # dates and signatures are groups too); 0.75: the two measures count whitespace differently
    least = max(MIN_GROUP_CHARS, 0.75 * MIN_SHARE_OF_MAIN * main.chars)
    found: list[tuple[list[str], list[list[str]], bool]] = []  # texts, their words, all inside
    for group in _checked_groups(root, main, least):
        if not main.leads(group):  # read already, unless more than GROUPS_CHECKED were measured
            continue
        texts = [t for t in (main.read(m)[0] for m in group) if t]
        words = [t.split() for t in texts]
        inside = [w for w in words if main.holds(w)]
        if inside and sum(map(_flat_len, inside)) >= MIN_SHARE_OF_MAIN * main.chars and (
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
