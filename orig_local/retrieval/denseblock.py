"""Two structural repairs of trafilatura's main text: wiki apparatus out, and a densest-block
fallback when its text is loose fragments from all over the page.

*Apparatus*: reference lists, footnote lists, navboxes, category and portal bars are not the
article's text (on the set's wiki pages they cost 0.15 precision) and reach the backbone as
bibliography noise. They are removed from the tree before trafilatura reads it, with the heading
("References", "Note", ...) that introduces a reference list. Infoboxes stay: their facts help.

*Loose fragments*: on pages trafilatura finds no content block in (a product page: gallery, buy
box, tabs, one section per topic) it falls back to every paragraph it can see, so its text is
the buy box's stock line, the description, the delivery note and "recently viewed", without the
description's heading or the spec list (0.74 F1 on the set's product page). The trigger is
measured, not guessed from the site: the elements trafilatura's lines come from are found by
their leading text, and when their nearest common ancestor is the page body (lines from both
inside and outside every content block: a stock line, a delivery note, a footer), the text is
replaced by the *densest block*: the element holding the most paragraph prose (readability's
score: a paragraph counts fully for its parent, half for its grandparent), with its adjacent
siblings that read as content (a section opening with a heading, few links, no form controls,
not named as comments, reviews, related items or sharing), rendered as headings, paragraphs, list items (``- ``) and
table rows (``| ``). The fallback is kept only if it holds the block trafilatura itself kept
most text from and at least three quarters of trafilatura's paragraphs (lines of 80+ characters):
it may drop stray lines, never a second block of the article.
"""

from __future__ import annotations

import re
from typing import Any

from orig_local.retrieval.threads import own_size

_SPACE = re.compile(r"\s+")
# class/id tokens of apparatus lists and bars (MediaWiki names and their usual translations)
_APPARATUS_LIST = re.compile(r"(?i)(?:^|[\s_-])(references?|reflist|refs|footnotes?|citations?"
                             r"|einzelnachweise|referencias|r[ée]f[ée]rences)(?:$|[\s_-])")
# "notes" only on a numbered list: footnotes are numbered, a recipe's or a guide's notes are content
_APPARATUS_NOTES = re.compile(r"(?i)(?:^|[\s_-])notes?(?:$|[\s_-])")
_APPARATUS_BAR = re.compile(r"(?i)(?:^|[\s_-])(navbox\w*|catlinks|categories|portal[eis]?)(?:$|[\s_-])")
MAX_BAR_CHARS = 300      # a bar is short or mostly links; a "categories" block of prose is content
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LEAF = frozenset({"p", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "pre", "blockquote",
                   "figcaption", "caption"})
_SKIP = frozenset({"script", "style", "noscript", "template", "nav", "header", "footer", "form", "select",
                   "button", "input", "textarea", "label", "svg", "iframe", "h1", "img", "aside"})
_CONTROLS = ".//button|.//select|.//input|.//form|.//textarea"
# sibling blocks named like this are no article content (trafilatura's own discard vocabulary)
_NOT_CONTENT = re.compile(r"(?i)comment|review|related|recommend|recs\b|share|social|also|promo|newsletter"
                          r"|recent|sidebar|widget|advert|banner|cookie|breadcrumb|tabs?\b|gallery|buy|cart")
_TRAILING_BRACKETS = re.compile(r"\s*\[[^\]]{0,60}\]\s*$")
MIN_PARAGRAPH = 25       # readability's shortest scored paragraph
MAX_LINK_DENSITY = 0.25  # share of a block's text inside links above which it is navigation
KEY_CHARS = 20           # leading characters that find the element a line came from
LEAD_SCAN = 200          # raw characters normalised to find an element's leading ones
# text nodes that may begin an element's own text of KEY_CHARS characters or more (lxml's .text
# joins a run of adjacent text nodes: rare, as the parser merges them, but counted too)
_OWN_TEXT = f"descendant::text()[string-length() >= {KEY_CHARS} or following-sibling::node()[1][self::text()]]"
PROSE_LINE = 80          # a line this long is a paragraph, not a stock note, button or date
MIN_PROSE_KEPT = 0.75    # share of trafilatura's paragraphs the fallback must keep


def _norm(text: str | None) -> str:
    return _SPACE.sub(" ", text or "").strip()


def _names(el: Any) -> str:
    return f"{el.get('class') or ''} {el.get('id') or ''}"


def prune_apparatus(tree: Any) -> None:
    """Remove reference/footnote lists (and the heading right before one), navboxes, category
    and portal bars (short, or mostly links) from ``tree`` in place."""
    for el in list(tree.iter("ol", "ul", "div", "table")):
        if el.getparent() is None:
            continue
        names = _names(el)
        if el.tag in ("ol", "ul") and (_APPARATUS_LIST.search(names)
                                        or (el.tag == "ol" and _APPARATUS_NOTES.search(names))):
            _drop_heading_before(el)
            el.drop_tree()
        elif el.tag in ("div", "table") and _APPARATUS_BAR.search(names) and _is_bar(el):
            el.drop_tree()


def _is_bar(el: Any) -> bool:
    chars = len(_norm(el.text_content()))
    return chars < MAX_BAR_CHARS or _link_density(el, chars) > 0.5


def _drop_heading_before(el: Any) -> None:
    node = el
    while node.getprevious() is None and node.getparent() is not None and len(node.getparent()) == 1:
        node = node.getparent()
    prev = node.getprevious()
    if prev is not None and prev.tag in _HEADINGS and len(_norm(prev.text_content())) < 40:
        prev.drop_tree()


def densest_block(tree: Any, text: str) -> str | None:
    """The densest block's text when ``text`` (trafilatura's) is loose fragments of ``tree``;
    ``None`` when it is not, or when the fallback would not be better-founded."""
    sources = _line_sources(tree, text)
    if len(sources) < 3:
        return None
    body = tree.find("body")
    if body is None or _common_ancestor([el for el, _ in sources]) is not body:
        return None
    by_parent: dict[Any, int] = {}
    for el, n in sources:
        by_parent[el.getparent()] = by_parent.get(el.getparent(), 0) + n
    top_parent = max(by_parent, key=by_parent.__getitem__)
    block = _densest(body)
    if block is None or not _contains(block, top_parent):
        return None
    lines = [line for part in _content_run(block) for line in _render(part)]
    return "\n".join(lines) if _keeps_prose(text, lines) else None


def _keeps_prose(text: str, lines: list[str]) -> bool:
    """Whether ``lines`` hold most of the paragraphs of ``text``: the fallback may drop stray
    lines (a stock note, a footer), not a second block of the article."""
    kept = {line.lstrip("-| ")[:KEY_CHARS] for line in lines}
    prose = [line for line in text.splitlines() if len(line) >= PROSE_LINE]
    total = sum(map(len, prose))
    return total > 0 and sum(len(line) for line in prose if line[:KEY_CHARS] in kept) >= MIN_PROSE_KEPT * total


def _line_sources(tree: Any, text: str) -> list[tuple[Any, int]]:
    """(element, characters) for the lines of ``text`` whose leading characters begin an
    element's own text: a dict lookup per line. Only text nodes that may be long enough reach
    Python (lxml's XPath picks them, no element visited in Python), and only the head of each
    element's text is normalised (a page's stylesheet or JSON state runs to tens of KB)."""
    starts: dict[str, Any] = {}
    for node in tree.xpath(_OWN_TEXT):
        if not node.is_text:  # a tail: text after an element, not the start of one's own text
            continue
        el = node.getparent()
        lead = _lead(el.text)
        if len(lead) >= KEY_CHARS:
            starts.setdefault(lead, el)
    found = []
    for line in text.splitlines():
        line = line.lstrip("-| ").strip()
        el = starts.get(line[:KEY_CHARS]) if len(line) >= KEY_CHARS else None
        if el is not None:
            found.append((el, len(line)))
    return found


def _lead(raw: str) -> str:
    """``_norm(raw)[:KEY_CHARS]``, normalising only a head of ``raw`` where that gives enough
    (the normalised head is a prefix of the normalised whole)."""
    head = _norm(raw[:LEAD_SCAN])
    if len(head) < KEY_CHARS and len(raw) > LEAD_SCAN:
        head = _norm(raw)
    return head[:KEY_CHARS]


def _common_ancestor(elements: list[Any]) -> Any:
    path = list(elements[0].iterancestors())[::-1] + [elements[0]]
    for el in elements[1:]:
        ancestors = set(el.iterancestors()) | {el}
        while path and path[-1] not in ancestors:
            path.pop()
    return path[-1] if path else None


def _densest(body: Any) -> Any:
    scores: dict[Any, float] = {}
    for p in body.iter("p"):
        chars = len(_norm(p.text_content()))
        if chars < MIN_PARAGRAPH or _link_density(p, chars) > MAX_LINK_DENSITY:
            continue
        score = 1 + chars / 100
        parent = p.getparent()
        if parent is not None:
            scores[parent] = scores.get(parent, 0) + score
            grand = parent.getparent()
            if grand is not None:
                scores[grand] = scores.get(grand, 0) + score / 2
    return max(scores, key=scores.__getitem__) if scores else None


def _link_density(el: Any, chars: int) -> float:
    linked = sum(len(_norm(a.text_content())) for a in el.iter("a"))
    return linked / chars if chars else 1.0


def _contains(outer: Any, inner: Any) -> bool:
    return inner is outer or any(a is outer for a in inner.iterancestors())


def _content_run(block: Any) -> list[Any]:
    """``block`` and the unbroken run of content siblings on either side of it."""
    run = [block]
    for step in ("getprevious", "getnext"):
        node = getattr(block, step)()
        while node is not None and _is_content(node):
            run.append(node)
            node = getattr(node, step)()
    return sorted(run, key=lambda el: list(block.getparent()).index(el)) if block.getparent() is not None else run


def _is_content(el: Any) -> bool:
    if not isinstance(el.tag, str) or el.tag in _SKIP or _NOT_CONTENT.search(_names(el)):
        return False
    first = next((child for child in el if isinstance(child.tag, str)), None)
    if first is None or first.tag not in _HEADINGS:
        return False  # a sibling section continues the outline; an unheaded one is a bar or footer
    chars = len(_norm(el.text_content()))
    return chars > 0 and _link_density(el, chars) <= MAX_LINK_DENSITY and not el.xpath(_CONTROLS)


def _render(root: Any) -> list[str]:
    """Lines of ``root`` as the reader writes them: headings and paragraphs, ``- `` list items,
    ``| `` table rows; navigation-like blocks, form controls and the page title left out. One
    walk, no recursion (a hostile page nests thousands of elements deep), link shares from one
    bottom-up measure."""
    from lxml import etree

    sizes = _sizes(root)
    lines: list[str] = []
    skip = 0
    for event, el in etree.iterwalk(root, events=("start", "end")):
        if event == "start":
            if skip:
                skip += 1
                continue
            line, descend = _open(el, sizes)
            if line:
                lines.append(line)
            skip = 0 if descend else 1
            continue
        if skip:
            skip -= 1
            if skip:
                continue
        tail = _norm(el.tail) if el is not root else ""
        if tail:
            lines.append(tail)
    return lines


def _open(el: Any, sizes: dict[Any, tuple[int, int]]) -> tuple[str, bool]:
    """(line to write on entering ``el``, whether to walk into it)."""
    if not isinstance(el.tag, str) or el.tag in _SKIP or _NOT_CONTENT.search(_names(el)):
        return "", False
    chars, links = sizes.get(el, (0, 0))
    if el.tag in ("div", "section", "ul", "ol", "table", "tbody") and chars and links > MAX_LINK_DENSITY * chars:
        return "", False
    if el.tag == "tr":
        cells = [_norm(c.text_content()) for c in el if c.tag in ("td", "th")]
        return ("| " + " | ".join(cells) + " |" if any(cells) else ""), False
    if el.tag in _LEAF:
        line = _norm(el.text_content())
        if el.tag in _HEADINGS:
            line = _TRAILING_BRACKETS.sub("", line)  # a wiki heading's "[edit]"-style links
        return (("- " if el.tag == "li" and line else "") + line), False
    return _norm(el.text), True


def _sizes(root: Any) -> dict[Any, tuple[int, int]]:
    """(text characters, characters inside links) of every element under ``root``, bottom-up."""
    from lxml import etree

    sizes: dict[Any, tuple[int, int]] = {}
    for _, el in etree.iterwalk(root, events=("end",)):
        sizes[el] = own_size(el, sizes, _SKIP)  # a script's or a form's text is no share of what is read
    return sizes
