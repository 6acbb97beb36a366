"""Write the 3-item mini benchmark used by `scripts/demo_eval.py` and the tests:
orig_local/evaluation/data/mini.jsonl (our JSONL format) + small drawn reference images.

The items are about entities of the bundled demo corpus (orig_local/demo_corpus), so the
offline agent can retrieve their facts. One question is a false statement (``"answer": false``):
the tiny judge answers by colour and says "true" to the demo's reddish noise images, so the demo
shows a wrong verdict with a known cause. Deterministic; rerun after editing.
"""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parents[1] / "orig_local" / "evaluation" / "data"


def lighthouse(path: Path) -> None:
    im = Image.new("RGB", (64, 64), (170, 200, 230))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 52, 63, 63], fill=(30, 30, 30))  # basalt
    for k in range(6):  # teal / orange bands
        d.rectangle([26, 16 + 6 * k, 38, 22 + 6 * k], fill=(0, 128, 128) if k % 2 else (240, 130, 30))
    d.regular_polygon((32, 11, 6), 6, fill=(250, 250, 210), outline=(0, 0, 0))  # hexagonal lantern
    im.save(path)


def beetle(path: Path) -> None:
    im = Image.new("RGB", (64, 64), (235, 235, 220))
    d = ImageDraw.Draw(im)
    d.ellipse([18, 14, 46, 54], fill=(140, 80, 200))  # violet wing cases
    for x in (24, 32, 40):
        d.line([x, 18, x, 50], fill=(220, 180, 40), width=2)  # gold stripes
    d.ellipse([26, 6, 38, 16], fill=(10, 10, 10))  # black head
    for y in (24, 34, 44):
        d.line([18, y, 8, y + 4], fill=(200, 20, 20), width=2)
        d.line([46, y, 56, y + 4], fill=(200, 20, 20), width=2)  # red legs
    im.save(path)


def kit(path: Path) -> None:
    im = Image.new("RGB", (64, 64), (90, 160, 90))
    d = ImageDraw.Draw(im)
    d.rectangle([18, 10, 46, 40], fill=(110, 40, 150))  # purple shirt
    d.line([18, 10, 46, 40], fill=(250, 220, 0), width=5)  # yellow sash
    d.rectangle([20, 40, 44, 52], fill=(250, 250, 250))  # white shorts
    im.save(path)


ITEMS = [
    {
        "id": "mini_landmark", "class": "landmarks",
        "prompt": "A photo of the Veltrane Harbor Lighthouse at dusk",
        "reference_text": "The Veltrane Harbor Lighthouse is painted in teal and orange spiral bands.\n"
                          "Its lantern room is hexagonal, capped by a black dome.\n"
                          "It stands on a black basalt outcrop.\nIts light flashes green.",
        "draw": lighthouse,
        "questions": [
            {"id": "q1", "text": "True or False: The lighthouse tower has teal and orange spiral bands.", "concept": "PF"},
            {"id": "q2", "text": "True or False: The lighthouse stands on a dark rock outcrop by the water.", "concept": "CC"},
            {"id": "q3", "text": "True or False: The sky shows dusk, with the light lit.", "concept": "TC"},
            {"id": "q4", "text": "True or False: The lighthouse looks like the one in the reference image.",
             "concept": "PF", "modality": "image", "reference_image": "mini_refs/mini_landmark_0.png"},
            # A false statement (the corpus says the light flashes green): a judge that answers
            # "true" whatever the image shows gets it wrong, so the demo shows a wrong verdict.
            {"id": "q5", "text": "True or False: The lighthouse's light flashes red.", "concept": "PF",
             "answer": False},
        ],
    },
    {
        "id": "mini_animal", "class": "animal",
        "prompt": "A close-up of a Quillon glassback beetle on a leaf",
        "reference_text": "The Quillon glassback beetle has translucent violet wing cases.\n"
                          "Each wing case has three gold stripes.\nIt has six red legs and a glossy black head.",
        "draw": beetle,
        "questions": [
            {"id": "q1", "text": "True or False: The beetle's wing cases are violet.", "concept": "PF"},
            {"id": "q2", "text": "True or False: The beetle has six red legs.", "concept": "PF"},
            {"id": "q3", "text": "True or False: The beetle sits on a leaf.", "concept": "CC"},
            {"id": "q4", "text": "True or False: The beetle matches the reference image.",
             "concept": "PF", "modality": "image", "reference_image": "mini_refs/mini_animal_0.png"},
        ],
    },
    {
        "id": "mini_sports", "class": "sports",
        "prompt": "A Marrowby Kestrels player celebrating a goal in the home kit",
        "reference_text": "The Marrowby Kestrels home kit is a purple shirt with a yellow diagonal sash.\n"
                          "The home kit has white shorts and purple socks.\n"
                          "The crest is a white kestrel in a yellow triangle.",
        "draw": kit,
        "questions": [
            {"id": "q1", "text": "True or False: The player wears a purple shirt with a yellow diagonal sash.", "concept": "PF"},
            {"id": "q2", "text": "True or False: The player wears white shorts.", "concept": "PF"},
            {"id": "q3", "text": "True or False: The player is shown celebrating after scoring.", "concept": "TC"},
            {"id": "q5", "text": "True or False: The kit looks like the one in the reference image.",
             "concept": "CC", "modality": "image", "reference_image": "mini_refs/mini_sports_0.png"},
        ],
    },
]


def main() -> None:
    (OUT / "mini_refs").mkdir(parents=True, exist_ok=True)
    lines = []
    for item in ITEMS:
        row = {k: v for k, v in item.items() if k != "draw"}
        ref = f"mini_refs/{item['id']}_0.png"
        item["draw"](OUT / ref)
        row["reference_images"] = [ref]
        lines.append(json.dumps(row, ensure_ascii=False))
    (OUT / "mini.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT / 'mini.jsonl'} and {len(ITEMS)} reference images")


if __name__ == "__main__":
    main()
