"""`orig view` (issue 24, point 3): items x runs side by side in one self-contained page; filters
and the "runs differ most" order, checked in a real headless browser when one is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _eval_fakes import FakeAgent, FakeGenerator, colour_of, make_mini_benchmark, scripted_judge

from orig_local.cli import main
from orig_local.config import Config
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.orchestrate import run_phases

HOSTILE = '</script><img src="https://tracker.invalid/x.png" onerror="window.PWNED=1">'


def _run(tmp_path, bench, name):
    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = "orig"
    cfg.generator.preset = "fake"
    cfg.eval.benchmark = "jsonl"
    cfg.eval.data = str(bench)
    cfg.eval.label = name
    run = tmp_path / name
    run_phases(cfg, run, load_benchmark("jsonl", bench), ("agent", "generate", "judge"), agent=FakeAgent(),
               generator=FakeGenerator(), judge=scripted_judge())
    return run


def _rewrite(path: Path, fn) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(fn(r)) + "\n" for r in rows))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("view")
    bench = make_mini_benchmark(tmp / "bench", n=6)
    a, b = _run(tmp, bench, "a"), _run(tmp, bench, "b")

    def flip(row):  # run b: item_1 every verdict the other way; item_4's q2 an error; hostile text
        for v in row["verdicts"]:
            if row["id"] == "item_1":
                v["answer"], v["correct"] = (not v["answer"]), (not v["correct"])
            if row["id"] == "item_4" and v["qid"] == row["verdicts"][1]["qid"]:
                v["error"], v["correct"] = "unparseable verdict: 'maybe'", None
            v["raw"] = [HOSTILE]
        if row["id"] == "item_1":
            row["score"] = 1.0 - row["score"]
        return row

    _rewrite(b / "judge.jsonl", flip)
    _rewrite(b / "agent.jsonl", lambda r: {**r, "final_prompt": HOSTILE + r["final_prompt"]})
    return tmp, a, b


def _page(tmp, a, b, name="view.html") -> Path:
    out = tmp / name
    assert main(["-q", "view", str(a), str(b), "--out", str(out), "--no-open"]) == 0
    return out


def _data(page: Path) -> dict:
    text = page.read_text()
    blob = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1)
    return json.loads(blob)


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs = []

    def handle_starttag(self, tag, attrs):
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]


def test_page_is_self_contained_and_hostile_text_stays_text(runs):
    tmp, a, b = runs
    page = _page(tmp, a, b)
    text = page.read_text()
    assert "default-src 'none'" in text  # the browser itself refuses any fetch
    parser = _Refs()
    parser.feed(text)
    assert parser.refs == []  # no external script, style, font or image in the static page
    assert HOSTILE not in text  # the raw reply cannot close the data block
    data = _data(page)
    cells = {i["id"]: i["cells"] for i in data["items"]}
    assert cells["item_0"]["b"]["final_prompt"].startswith(HOSTILE)  # kept, as text
    assert cells["item_0"]["a"]["image"].startswith("data:image/jpeg;base64,")
    assert cells["item_0"]["a"]["trace"] is None or not cells["item_0"]["a"]["trace"].startswith("http")


def test_disagreement_and_spread_are_computed_per_item(runs):
    tmp, a, b = runs
    data = _data(_page(tmp, a, b))
    items = {i["id"]: i for i in data["items"]}
    n_q = len(items["item_1"]["questions"])
    assert items["item_1"]["differing"] == 3  # every question judged the other way in b
    s_a = items["item_1"]["cells"]["a"]["score"]
    assert items["item_1"]["spread"] == pytest.approx(abs(s_a - (1 - s_a)))
    assert items["item_1"]["spread"] > 0
    assert items["item_4"]["differing"] >= 1  # an error where a answered
    assert items["item_0"]["differing"] == 0 and items["item_0"]["spread"] == 0
    q = items["item_1"]["questions"][0]
    assert "expected" in q and q["text"]
    assert n_q == 3


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.handlers = [], []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.imgs += [v for k, v in attrs if k == "src"]
        self.handlers += [k for k, _ in attrs if k.startswith("on")]


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _dom(page: Path, fragment: str = "") -> str:
    exe = _chromium()
    if exe is None:
        pytest.skip("no headless chromium installed (apt-get install -y chromium; .ci/run installs it)")
    proc = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND",
                           "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri() + fragment],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _shown(dom: str) -> list[str]:
    return re.findall(r'class="item-box" data-id="([^"]+)"', dom)


def test_in_a_real_browser_runs_side_by_side_sorted_by_difference_and_filtered(runs):
    tmp, a, b = runs
    page = _page(tmp, a, b, "browser.html")
    dom = _dom(page)
    shown = _shown(dom)
    assert len(shown) == 6 and shown[0] == "item_1"  # the item where the runs differ most comes first
    assert shown.index("item_4") < shown.index("item_0")
    assert 'data-run="a"' in dom and 'data-run="b"' in dom  # one column per run
    assert "expected true" in dom and "raw: " in dom  # verdicts with expected answer and the raw reply
    tags = _Tags()
    tags.feed(dom)
    assert tags.imgs and all(src.startswith("data:") for src in tags.imgs)  # no picture from anywhere else
    assert not tags.handlers  # the hostile text made no element (no onerror anywhere)
    assert "&lt;/script&gt;&lt;img src=" in dom  # it is shown, as text
    # filters (from the address): disagreement only; a class; verdict "error"
    assert sorted(_shown(_dom(page, "#disagree=1"))) == ["item_1", "item_4"]
    animal = _shown(_dom(page, "#class=animal&sort=id"))
    assert animal == ["item_0", "item_3"]
    assert _shown(_dom(page, "#verdict=error")) == ["item_4"]
    wrong = set(_shown(_dom(page, "#verdict=wrong")))
    assert "item_1" in wrong and all(colour_of(i) == "blue" for i in wrong - {"item_1"})
    assert "6 of 6 items" in dom
