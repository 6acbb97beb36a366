"""Product pages keep their description, headings and spec list and lose the buy box; wiki pages
lose their reference lists and navboxes but keep the infobox; an ordinary article is left to
trafilatura (orig_local/retrieval/denseblock.py, extract.py). Pages at realistic scale
(20-60k characters)."""

from __future__ import annotations

import pytest

pytest.importorskip("trafilatura")

from trafilatura.utils import load_html  # noqa: E402

from orig_local.retrieval.denseblock import densest_block, prune_apparatus  # noqa: E402
from orig_local.retrieval.reader import extract_main_text  # noqa: E402

SPECS = [f"Spec {k}: value {k * 7} units of measured output" for k in range(12)]


def _chrome(n: int, word: str) -> str:
    return "".join(f"<li><a href='/{word}/{k}'>{word.title()} {k}</a></li>" for k in range(n))


def _product() -> str:
    paras = "".join(f"<p>The Tidewater lamp number {k} is cast in brass and spun copper, with a hand-blown "
                    f"glass shade that throws a warm pool of light across a reading chair or desk.</p>"
                    for k in range(6))
    recs = "".join(f"<li><a href='/p/{k}'>Matching shade {k} &ndash; &pound;{k + 20}.00</a></li>"
                   for k in range(40))
    return f"""<!DOCTYPE html><html lang="en"><head><title>Tidewater lamp</title></head><body>
<div class="promo-bar">Free delivery over &pound;50 &middot; <a href="/s">Student discount</a></div>
<header><nav><ul>{_chrome(250, 'category')}</ul></nav></header>
<div class="product">
 <div class="gallery"><img src="/a.jpg" alt=""><button>Zoom</button></div>
 <div class="buy-box"><h1>Tidewater brass lamp</h1><div class="price">&pound;89.00</div>
  <p class="stock">In stock &ndash; order within 2 hrs for next-day delivery</p>
  <label>Quantity <select><option>1</option></select></label><button>Add to basket</button>
  <p class="klarna">Or 3 interest-free payments of &pound;29.67 with Klarna. <a href="#">Learn more</a></p></div>
 <div class="tabs"><a href="#d">Description</a> <a href="#s">Specifications</a></div>
 <section id="d" class="description"><h2>About this lamp</h2>{paras}</section>
 <section id="s" class="specifications"><h2>Technical details</h2><ul>{''.join(f'<li>{s}</li>' for s in SPECS)}</ul></section>
 <section class="reviews-widget"><h2>Reviews</h2><p>Lovely lamp, arrived quickly and well packed.</p></section>
</div>
<section class="recs"><h2>Customers also bought</h2><ul>{recs}</ul></section>
<section class="recently-viewed"><h2>Recently viewed</h2><p>You have no recently viewed items.</p></section>
<footer><ul>{_chrome(200, 'help')}</ul><p>&copy; 2024 Lamps Direct Ltd. VAT no. GB 123.</p></footer>
</body></html>"""


def test_a_product_page_keeps_its_specs_and_headings_and_drops_the_buy_box():
    html = _product()
    assert 20_000 <= len(html) <= 60_000
    text, _ = extract_main_text(html, "https://shop.invalid/lamp")
    missing = [s for s in SPECS if s not in text]
    assert not missing, f"spec lines lost: {missing[:3]}"
    assert "The Tidewater lamp number 0" in text and "The Tidewater lamp number 5" in text
    assert "About this lamp" in text and "Technical details" in text
    for chrome in ("In stock", "Klarna", "Add to basket", "Quantity", "recently viewed", "Matching shade",
                   "Category 3", "VAT no"):
        assert chrome not in text, f"{chrome!r} kept"
    assert text.index("number 5") < text.index(SPECS[0])  # document order


def _wiki(n_refs: int = 120) -> tuple[str, list[str]]:
    sections = "".join(
        f"<h2><span class='mw-headline'>Period {k}</span><span class='mw-editsection'>[<a href='#'>edit</a>]</span></h2>"
        f"<p>In period {k} the keepers of the Skerry light rebuilt the lantern gallery and recorded "
        f"{k + 3} storms, the worst of which broke {k + 1} panes of the lens housing.<sup class='reference'>"
        f"<a href='#c{k}'>[{k + 1}]</a></sup></p>" for k in range(12))
    refs = [f"Author{k}, A. ({1900 + k}). Annals of the lighthouse service, volume {k}. Harbour Press. p. {k * 3}."
            for k in range(n_refs)]
    html = f"""<!DOCTYPE html><html lang="en"><head><title>Skerry light - OpenWiki</title></head><body>
<div id="mw-panel"><ul>{_chrome(60, 'portal')}</ul></div>
<div id="content" class="mw-body"><h1 id="firstHeading">Skerry light</h1>
<div id="mw-content-text">
<table class="infobox"><tr><th>Height</th><td>31 metres</td></tr><tr><th>Lit</th><td>1871</td></tr>
<tr><th>Range</th><td>18 nautical miles</td></tr></table>
<p>The Skerry light is a stone lighthouse on a tidal reef off the western cape, first lit in 1871.</p>
{sections}
<h2><span class="mw-headline">References</span></h2>
<div class="reflist"><ol class="references">{''.join(f'<li id="c{k}">{r}</li>' for k, r in enumerate(refs))}</ol></div>
<div class="navbox"><b>Lighthouses of the cape</b>: {' &middot; '.join(f'<a href="#">Light {k}</a>' for k in range(30))}</div>
<div id="catlinks">Categories: <a href="#">Lighthouses</a> | <a href="#">Buildings of 1871</a></div>
</div></div>
<div id="footer"><p>Text is available under a free licence.</p></div></body></html>"""
    return html, refs


def test_a_wiki_page_drops_its_reference_list_and_navbox_and_keeps_the_infobox():
    html, refs = _wiki()
    assert 20_000 <= len(html) <= 60_000
    text, _ = extract_main_text(html, "https://wiki.invalid/Skerry_light")
    kept = [r for r in refs if r[:30] in text]
    assert not kept, f"{len(kept)} of {len(refs)} references kept, e.g. {kept[0]!r}"
    assert "References" not in text and "Light 7" not in text and "Lighthouses of the cape" not in text
    assert "In period 0 the keepers" in text and "In period 11 the keepers" in text
    assert "31 metres" in text and "18 nautical miles" in text  # the infobox's facts stay
    assert "Period 4" in text and "[edit]" not in text and "[3]" not in text


def test_an_article_trafilatura_reads_well_is_not_rebuilt():
    """The fallback fires on loose fragments only: an article whose lines all come from one
    block (with a byline and a related-links box around it) is left as trafilatura wrote it."""
    paras = "".join(f"<p>Paragraph {k} of the harbour report: the dredger cleared {k * 40} cubic metres "
                    f"of silt from the inner basin and the depth at low water rose to {k + 2} metres.</p>"
                    for k in range(60))
    html = (f"<html><head><title>Harbour report</title></head><body><nav><ul>{_chrome(200, 'section')}</ul></nav>"
            f"<article><h1>Harbour report</h1><p class='byline'>By the harbour desk</p>{paras}</article>"
            f"<aside class='related'><ul>{_chrome(40, 'story')}</ul></aside><footer>Harbour Times</footer></body></html>")
    assert 20_000 <= len(html) <= 60_000
    tree = load_html(html)
    text, _ = extract_main_text(html, "https://news.invalid/a")
    assert "Paragraph 0 of the harbour report" in text and "Paragraph 59 of the harbour report" in text
    assert densest_block(tree, text) is None


def test_a_footer_sibling_without_a_heading_is_left_out_of_the_dense_block():
    """A sibling of the densest block joins it only as a headed section: a footer of plain
    paragraphs next to the content (named so trafilatura does not know it) stays out."""
    paras = "".join(f"<p>The tower's bell number {k} was recast in {1600 + k} after a fire in the belfry "
                    f"damaged its rim and changed its note by a semitone.</p>" for k in range(8))
    html = (f"<html><head><title>Tower</title></head><body><div id='colonna'><ul>{_chrome(500, 'voce')}</ul></div>"
            f"<div id='contenuto'><h1>Tower</h1>{paras}<h2>Descrizione</h2><p>La torre ha pianta quadrata.</p></div>"
            f"<div id='pie'><p>Questa pagina è stata modificata per l'ultima volta il 2 febbraio 2024.</p>"
            f"<p>Il testo è disponibile secondo la licenza Creative Commons.</p></div></body></html>")
    assert len(html) >= 20_000
    text, _ = extract_main_text(html, "https://wiki.invalid/Torre")
    assert "bell number 0" in text and "bell number 7" in text
    assert "modificata per l'ultima volta" not in text and "licenza Creative Commons" not in text


def test_an_article_in_two_unheaded_blocks_under_the_body_keeps_both():
    """Two sibling text blocks straight under ``<body>`` (and a stray stock-like line): the
    densest block alone would lose the second block's paragraphs, so trafilatura's text stands."""
    def paras(tag: str, n: int) -> str:
        return "".join(f"<p>{tag} paragraph {k}: the survey boat sounded the channel at {k + 4} metres and "
                       f"marked the shoal with a green buoy moored on a {k + 9} metre chain.</p>" for k in range(n))

    html = (f"<html><head><title>Survey</title></head><body><ul>{_chrome(450, 'menu')}</ul>"
            f"<p class='note'>Printed from the survey office archive</p>"
            f"<div id='a'>{paras('First', 12)}</div><div id='b'>{paras('Second', 9)}</div></body></html>")
    assert len(html) >= 20_000
    text, _ = extract_main_text(html, "https://survey.invalid/a")
    assert "First paragraph 0" in text and "Second paragraph 8" in text


def test_a_recipe_keeps_its_notes_list_and_a_category_intro():
    """Apparatus is named narrowly: an unnumbered "notes" list and a long "categories" block of
    prose are content, not footnotes or a category bar."""
    steps = "".join(f"<p>Step {k}: rub the cold butter into the flour until it looks like fine crumbs, then "
                    f"stir in the sugar and rest the dough for {k + 5} minutes before cutting.</p>" for k in range(14))
    notes = "".join(f"<li>Cook's note {k}: frozen butter grated on a box grater keeps the layers flaky.</li>"
                    for k in range(5))
    intro = " ".join(f"Our scone recipes, sentence {k}, come from farmhouse kitchens across the west." for k in range(6))
    html = (f"<html><head><title>Scones</title></head><body><nav><ul>{_chrome(400, 'recipe')}</ul></nav>"
            f"<div class='categories-intro'><p>{intro}</p></div>"
            f"<article><h1>Scones</h1>{steps}<h2>Notes</h2><ul class='recipe-notes'>{notes}</ul></article>"
            f"<footer>Farmhouse Bakes</footer></body></html>")
    assert len(html) >= 20_000
    tree = load_html(html)
    prune_apparatus(tree)
    kept = " ".join(tree.itertext())
    assert "Cook's note 4" in kept and "Notes" in kept and "sentence 5" in kept
    text, _ = extract_main_text(html, "https://bake.invalid/scones")
    assert "Cook's note 0" in text and "Step 13" in text
