"""Write the demo corpus shipped in ``orig_local/demo_corpus/`` (documents + drawn images).

Most entities are FICTIONAL on purpose: their visual facts (colours, shapes, counts) exist
nowhere but here, so an end-to-end test can check that facts found only through retrieval
reach the final prompt. Images are simple PIL drawings (a few KB each), deterministic.

    python scripts/make_demo_corpus.py [OUT_DIR]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parents[1] / "orig_local" / "demo_corpus"
SIZE = 256

# --------------------------------------------------------------------------- documents
# (doc_id, entity, title, text). Ids are stable: tests and other areas assert on them.
DOCS = [
    # Veltrane Harbor Lighthouse (fictional)
    ("veltrane-01", "veltrane-lighthouse", "Veltrane Harbor Lighthouse",
     "The Veltrane Harbor Lighthouse is a lighthouse at the mouth of Veltrane harbour on the "
     "Sarrow Gulf. Its tower is painted in teal and orange spiral bands that wind around it "
     "five times from base to gallery. It was first lit in 1887."),
    ("veltrane-02", "veltrane-lighthouse", "Lantern room of the Veltrane Harbor Lighthouse",
     "Unlike the round lanterns of most lighthouses on the gulf, the Veltrane Harbor "
     "Lighthouse has a hexagonal lantern room: six flat glass panes framed in black iron, "
     "capped by a small black dome with a brass weather vane shaped like a fish."),
    ("veltrane-03", "veltrane-lighthouse", "Veltrane Harbor Lighthouse: setting and light",
     "The 31-metre tower stands on a black basalt outcrop at the end of the north breakwater. "
     "Its light flashes green once every seven seconds and can be seen 18 nautical miles away."),
    ("veltrane-04", "veltrane-lighthouse", "History of the Veltrane light",
     "The spiral paint scheme of the Veltrane Harbor Lighthouse was chosen in 1887 so that "
     "fishermen could tell it apart from the striped Brannock Point Lighthouse in fog. The "
     "bands have been repainted in the same teal and orange every twelve years since."),
    ("veltrane-05", "veltrane-lighthouse", "Visiting Veltrane",
     "Visitors to Veltrane can climb the 142 steps of the harbour lighthouse to its white "
     "gallery rail. The keeper's cottage at its foot has a red door and is now a small museum."),
    # Brannock Point Lighthouse (fictional; a look-alike to the Veltrane one, for confusion tests)
    ("brannock-01", "brannock-lighthouse", "Brannock Point Lighthouse",
     "Brannock Point Lighthouse is a round tower on a grassy headland twenty kilometres south "
     "of Veltrane. It is painted with horizontal red and white stripes and has a round lantern "
     "room under a grey dome."),
    ("brannock-02", "brannock-lighthouse", "Brannock Point light characteristics",
     "The Brannock Point light shows two white flashes every ten seconds. The tower is 24 "
     "metres tall and has four red stripes and four white stripes."),
    ("brannock-03", "brannock-lighthouse", "Brannock and Veltrane compared",
     "Sailors on the Sarrow Gulf say: red rings for Brannock, a teal and orange twist for "
     "Veltrane. Brannock Point's lantern is round, while Veltrane's is six-sided."),
    # Quillon glassback beetle (fictional)
    ("quillon-01", "quillon-beetle", "Quillon glassback beetle",
     "The Quillon glassback beetle is a beetle found only in the peat bogs of the Marrow Fen. "
     "Its wing cases are translucent violet, like stained glass, and each wing case is crossed "
     "by three thin gold stripes."),
    ("quillon-02", "quillon-beetle", "Anatomy of the Quillon glassback",
     "Adult Quillon glassback beetles are about four centimetres long. They have six bright "
     "red legs and a single horn on the head curved into a crescent, with both points facing "
     "forward. The head and thorax are glossy black."),
    ("quillon-03", "quillon-beetle", "Behaviour of the Quillon glassback beetle",
     "The beetle is active at dusk and feeds on the nectar of bog myrtle. When threatened it "
     "lifts its violet wing cases so that the gold stripes flash in the light."),
    ("quillon-04", "quillon-beetle", "Conservation of the Quillon glassback",
     "The Quillon glassback is protected in the Marrow Fen reserve, where volunteers count "
     "the beetles each June. Fewer than two thousand adults were counted in the last survey."),
    ("quillon-05", "quillon-beetle", "Naming of the Quillon glassback beetle",
     "The beetle is named after the naturalist Edda Quillon, who described it in 1911 and "
     "called it the glassback because light shines through its violet wing cases."),
    # Marrowby Kestrels FC (fictional football club)
    ("kestrels-01", "marrowby-kestrels", "Marrowby Kestrels F.C.",
     "Marrowby Kestrels Football Club is a football club from the town of Marrowby, founded "
     "in 1903. The club plays its home matches at Fennick Road stadium."),
    ("kestrels-02", "marrowby-kestrels", "Marrowby Kestrels home kit",
     "The Marrowby Kestrels home kit is a purple shirt with a broad yellow diagonal sash "
     "running from the left shoulder to the right hip, worn with white shorts and purple "
     "socks."),
    ("kestrels-03", "marrowby-kestrels", "Marrowby Kestrels crest",
     "The club crest of Marrowby Kestrels shows a white kestrel with spread wings inside a "
     "yellow triangle pointing upward. The crest is sewn on the left side of the shirt."),
    ("kestrels-04", "marrowby-kestrels", "Marrowby Kestrels away kit",
     "The away kit of Marrowby Kestrels is all yellow with a thin purple collar. The "
     "goalkeeper wears green."),
    ("kestrels-05", "marrowby-kestrels", "Fennick Road stadium",
     "Fennick Road, home of the Marrowby Kestrels, holds 9,400 spectators. Its main stand has "
     "a purple roof, and fans wave yellow flags with a white kestrel on match days."),
    # Korvath K-7 tram (fictional vehicle)
    ("k7-01", "korvath-k7-tram", "Korvath K-7 tram",
     "The K-7 is a tram built for the city of Korvath and introduced in 1958. Its lower body "
     "is painted red and its upper body cream, separated by a thin black line."),
    ("k7-02", "korvath-k7-tram", "Front of the Korvath K-7",
     "The front of the Korvath K-7 tram has a single round yellow headlight in the centre, "
     "below three square windscreen panes. A diamond-shaped pantograph sits on the roof."),
    ("k7-03", "korvath-k7-tram", "Korvath K-7 service history",
     "Forty K-7 trams were built. They ran on the city's line 9 along the river until 1994; "
     "two are kept running on heritage weekends."),
    ("k7-04", "korvath-k7-tram", "Korvath K-7 interior",
     "Inside the K-7 the seats are wooden slats arranged in pairs, and brass handrails run "
     "along the ceiling. Each car has six side windows per side."),
    ("k7-05", "korvath-k7-tram", "Korvath tram network",
     "The Korvath tram network runs on metre-gauge track. Modern trams are blue, which makes "
     "the red and cream K-7 easy to spot on heritage days."),
    # Eiffel Tower (real; facts that models know)
    ("eiffel-01", "eiffel-tower", "Eiffel Tower",
     "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
     "It was built by Gustave Eiffel's company for the 1889 World's Fair."),
    ("eiffel-02", "eiffel-tower", "Eiffel Tower structure",
     "The tower is about 330 metres tall and has three levels for visitors. Its four lattice "
     "legs curve inward and meet above the first platform."),
    ("eiffel-03", "eiffel-tower", "Eiffel Tower paint",
     "The Eiffel Tower is painted in a bronze-brown colour, graded slightly darker at the "
     "bottom and lighter at the top so that it looks uniform against the sky."),
    ("eiffel-04", "eiffel-tower", "Eiffel Tower at night",
     "At night the Eiffel Tower is lit in gold, and for five minutes every hour thousands of "
     "white bulbs sparkle across its iron lattice."),
    # filler documents (no entity): distractors for ranking
    ("misc-01", None, "How lighthouses are painted",
     "Lighthouses are painted with daymarks, patterns such as stripes, checks or bands, so "
     "that sailors can identify them in daylight."),
    ("misc-02", None, "Beetles of peat bogs",
     "Many beetles live in peat bogs, where the water is acidic and poor in nutrients. Most "
     "are small and dark brown."),
    ("misc-03", None, "Football kit colours",
     "Football clubs choose kit colours that contrast with their rivals. Sashes, hoops and "
     "stripes are common shirt patterns."),
    ("misc-04", None, "Heritage trams",
     "Many cities keep a few old trams running on weekends for visitors. They are often "
     "painted in the original livery of their era."),
]

# --------------------------------------------------------------------------- drawing helpers
TEAL, ORANGE, BLACK, WHITE = (0, 128, 128), (255, 140, 0), (20, 20, 20), (250, 250, 250)
RED, CREAM, YELLOW, PURPLE = (200, 30, 30), (245, 235, 200), (250, 210, 40), (110, 40, 150)
VIOLET, GOLD, BROWN = (170, 120, 230), (215, 170, 40), (120, 80, 45)


def _canvas(bg):
    im = Image.new("RGB", (SIZE, SIZE), bg)
    return im, ImageDraw.Draw(im)


def _masked(im, pattern, polygon):
    mask = Image.new("L", im.size, 0)
    ImageDraw.Draw(mask).polygon(polygon, fill=255)
    im.paste(pattern, (0, 0), mask)


def veltrane(rng, sky):
    im, d = _canvas(sky)
    d.rectangle([0, 200, SIZE, SIZE], fill=(30, 70, 140))  # sea
    d.polygon([(70, 215), (186, 215), (168, 185), (88, 185)], fill=BLACK)  # basalt outcrop
    x = 128 + rng.randint(-10, 10)
    tower = [(x - 28, 188), (x + 28, 188), (x + 16, 70), (x - 16, 70)]
    bands = Image.new("RGB", im.size, TEAL)
    bd = ImageDraw.Draw(bands)
    for k in range(-12, 14):  # diagonal bands read as a spiral on a flat drawing
        y0 = 60 + k * 24
        bd.polygon([(0, y0 + 60), (SIZE, y0), (SIZE, y0 + 12), (0, y0 + 72)], fill=ORANGE)
    _masked(im, bands, tower)
    d.rectangle([x - 20, 64, x + 20, 70], fill=WHITE)  # gallery rail
    hexagon = [(x - 16, 47), (x - 8, 36), (x + 8, 36), (x + 16, 47), (x + 8, 62), (x - 8, 62)]
    d.polygon(hexagon, fill=(255, 240, 150), outline=BLACK)  # hexagonal lantern room
    d.pieslice([x - 10, 24, x + 10, 44], 180, 360, fill=BLACK)  # black dome
    return im


def brannock(rng, sky):
    im, d = _canvas(sky)
    d.rectangle([0, 200, SIZE, SIZE], fill=(60, 150, 60))  # grassy headland
    x = 128 + rng.randint(-10, 10)
    for i in range(8):
        d.rectangle([x - 22, 190 - (i + 1) * 15, x + 22, 190 - i * 15], fill=RED if i % 2 == 0 else WHITE)
    d.ellipse([x - 16, 50, x + 16, 78], fill=(255, 240, 150), outline=BLACK)  # round lantern
    d.pieslice([x - 14, 36, x + 14, 64], 180, 360, fill=(130, 130, 130))
    return im


def quillon(rng, bg):
    im, d = _canvas(bg)
    cx, cy = 128 + rng.randint(-8, 8), 140 + rng.randint(-8, 8)
    for side in (-1, 1):  # six red legs
        for dy in (-25, 0, 25):
            d.line([(cx, cy + dy), (cx + side * 80, cy + dy + 20)], fill=RED, width=5)
    d.ellipse([cx - 50, cy - 60, cx + 50, cy + 80], fill=VIOLET, outline=(90, 50, 140), width=3)
    d.line([(cx, cy - 60), (cx, cy + 80)], fill=(90, 50, 140), width=3)
    for sy in (-25, 10, 45):  # three gold stripes across each wing case
        d.line([(cx - 45, sy + cy), (cx + 45, sy + cy)], fill=GOLD, width=6)
    d.ellipse([cx - 25, cy - 95, cx + 25, cy - 55], fill=BLACK)  # head
    d.arc([cx - 30, cy - 135, cx + 30, cy - 75], 200, 340, fill=BLACK, width=7)  # crescent horn
    return im


def kestrels_shirt(rng, bg):
    im, d = _canvas(bg)
    shirt = [(78, 40), (108, 30), (148, 30), (178, 40), (220, 80), (195, 105), (175, 90),
             (175, 220), (81, 220), (81, 90), (61, 105), (36, 80)]
    d.polygon(shirt, fill=PURPLE)
    sash = Image.new("RGB", im.size, PURPLE)
    # from the wearer's left shoulder (viewer's right) down to the right hip
    ImageDraw.Draw(sash).polygon([(150, 30), (185, 30), (110, 225), (75, 225)], fill=YELLOW)
    _masked(im, sash, shirt)
    d.polygon([(150, 70), (166, 100), (134, 100)], fill=YELLOW, outline=WHITE)  # crest
    return im


def kestrels_crest(rng, bg):
    im, d = _canvas(bg)
    d.polygon([(128, 30), (230, 220), (26, 220)], fill=YELLOW)  # upward triangle
    cx, cy = 128, 150
    d.polygon([(cx - 60, cy - 25), (cx, cy), (cx + 60, cy - 25), (cx, cy + 20)], fill=WHITE)  # kestrel wings
    d.ellipse([cx - 10, cy - 20, cx + 10, cy + 5], fill=WHITE)
    return im


def k7_tram(rng, bg):
    im, d = _canvas(bg)
    d.line([(0, 215), (SIZE, 215)], fill=(90, 90, 90), width=4)  # rails
    x0 = 40 + rng.randint(-10, 10)
    d.rectangle([x0, 100, x0 + 176, 150], fill=CREAM)
    d.rectangle([x0, 150, x0 + 176, 205], fill=RED)
    d.line([(x0, 150), (x0 + 176, 150)], fill=BLACK, width=3)
    for i in range(3):  # three square windscreen panes
        d.rectangle([x0 + 22 + i * 46, 110, x0 + 62 + i * 46, 142], fill=(170, 210, 230), outline=BLACK)
    d.ellipse([x0 + 74, 165, x0 + 102, 193], fill=YELLOW, outline=BLACK)  # round headlight
    px = x0 + 88
    d.polygon([(px, 60), (px + 22, 78), (px, 96), (px - 22, 78)], outline=BLACK, width=3)  # pantograph
    d.line([(px, 96), (px, 100)], fill=BLACK, width=3)
    return im


def eiffel(rng, sky):
    im, d = _canvas(sky)
    x = 128
    d.polygon([(x - 70, 230), (x - 40, 230), (x - 8, 40), (x + 8, 40), (x + 40, 230), (x + 70, 230),
               (x + 14, 40), (x, 12), (x - 14, 40)], fill=BROWN)
    d.pieslice([x - 40, 190, x + 40, 260], 180, 360, fill=sky)  # arch
    for y, w in ((180, 46), (110, 26), (60, 14)):  # three levels
        d.rectangle([x - w, y, x + w, y + 6], fill=(90, 60, 35))
    for y in range(60, 230, 14):  # lattice hint
        d.line([(x - 60 + (230 - y) // 8, y), (x + 60 - (230 - y) // 8, y + 8)], fill=(150, 110, 70), width=1)
    return im


# (image_id, entity, drawing, background, doc_id, caption)
IMAGES = [
    ("img-veltrane-1", "veltrane-lighthouse", veltrane, (170, 210, 240), "veltrane-01",
     "Veltrane Harbor Lighthouse with teal and orange spiral bands and a hexagonal lantern room"),
    ("img-veltrane-2", "veltrane-lighthouse", veltrane, (250, 200, 150), "veltrane-03",
     "Veltrane Harbor Lighthouse at sunset on its black basalt outcrop"),
    ("img-veltrane-3", "veltrane-lighthouse", veltrane, (200, 200, 210), "veltrane-02",
     "the six-sided lantern and black dome of the Veltrane lighthouse in fog"),
    ("img-brannock-1", "brannock-lighthouse", brannock, (170, 210, 240), "brannock-01",
     "Brannock Point Lighthouse with red and white horizontal stripes and a round lantern"),
    ("img-brannock-2", "brannock-lighthouse", brannock, (230, 230, 235), "brannock-02",
     "Brannock Point Lighthouse on its grassy headland"),
    ("img-quillon-1", "quillon-beetle", quillon, (225, 235, 215), "quillon-01",
     "Quillon glassback beetle: translucent violet wing cases with three gold stripes"),
    ("img-quillon-2", "quillon-beetle", quillon, (240, 240, 240), "quillon-02",
     "Quillon glassback beetle seen from above, red legs and crescent horn"),
    ("img-quillon-3", "quillon-beetle", quillon, (200, 190, 160), "quillon-03",
     "glassback beetle on bog moss in the Marrow Fen"),
    ("img-kestrels-1", "marrowby-kestrels", kestrels_shirt, (235, 235, 235), "kestrels-02",
     "Marrowby Kestrels home shirt: purple with a yellow diagonal sash"),
    ("img-kestrels-2", "marrowby-kestrels", kestrels_crest, (110, 40, 150), "kestrels-03",
     "Marrowby Kestrels crest: a white kestrel in a yellow triangle"),
    ("img-kestrels-3", "marrowby-kestrels", kestrels_shirt, (200, 230, 200), "kestrels-01",
     "Marrowby Kestrels football shirt on the Fennick Road pitch"),
    ("img-k7-1", "korvath-k7-tram", k7_tram, (200, 220, 240), "k7-01",
     "Korvath K-7 tram in red and cream livery"),
    ("img-k7-2", "korvath-k7-tram", k7_tram, (230, 225, 215), "k7-02",
     "front of the Korvath K-7 tram with its round yellow headlight and diamond pantograph"),
    ("img-k7-3", "korvath-k7-tram", k7_tram, (180, 180, 190), "k7-03",
     "heritage K-7 tram on line 9 in Korvath"),
    ("img-eiffel-1", "eiffel-tower", eiffel, (170, 210, 240), "eiffel-01",
     "Eiffel Tower in Paris, wrought-iron lattice tower"),
    ("img-eiffel-2", "eiffel-tower", eiffel, (250, 190, 140), "eiffel-03",
     "the Eiffel Tower at dusk, bronze-brown paint"),
]


def _reframe(im, rng, bg, n):
    """Zoom out and shift each picture differently, so views of one entity are distinct
    images (not dHash near-duplicates of each other)."""
    scale = (1.0, 0.62, 0.8)[n % 3]
    side = int(SIZE * scale)
    out = Image.new("RGB", (SIZE, SIZE), im.getpixel((0, 0)))
    x = rng.randint(0, SIZE - side) if side < SIZE else 0
    out.paste(im.resize((side, side), Image.Resampling.LANCZOS), (x, SIZE - side))
    return out


def write_corpus(out: Path = OUT) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "images").mkdir(exist_ok=True)
    with open(out / "docs.jsonl", "w", encoding="utf-8") as f:
        for doc_id, entity, title, text in DOCS:
            f.write(json.dumps({"id": doc_id, "entity": entity, "title": title, "text": text},
                               ensure_ascii=False) + "\n")
    with open(out / "images.jsonl", "w", encoding="utf-8") as f:
        for n, (img_id, entity, draw, bg, doc_id, caption) in enumerate(IMAGES):
            rng = random.Random(n)  # deterministic variation per image
            im = _reframe(draw(rng, bg), rng, bg, n)
            # a 64-colour palette keeps flat drawings at a few KB without visible loss
            im.quantize(64).save(out / "images" / f"{img_id}.png", optimize=True)
            f.write(json.dumps({"id": img_id, "entity": entity, "file": f"images/{img_id}.png",
                                "caption": caption, "doc_id": doc_id}) + "\n")
    return out


if __name__ == "__main__":
    path = write_corpus(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    print(f"wrote {path} ({len(DOCS)} documents, {len(IMAGES)} images, {total / 1024:.0f} KiB)")
