"""The benchmarks' yardsticks are right (benchmarks/_bench.py, _extraction.py, bench_agent.py,
bench_dedup.py). Correctness only: no timing is asserted."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _bench  # noqa: E402 - benchmarks/ is put on the path first
import _extraction  # noqa: E402

# --------------------------------------------------------------------------- _bench


def test_measure_runs_warmup_untimed_then_repeats():
    calls = []
    samples = _bench.measure(lambda: calls.append(1) or len(calls), repeats=3, warmup=2)
    assert len(calls) == 5
    assert samples.results == [3, 4, 5]  # the warm-up rounds are not among the samples
    assert len(samples.wall) == len(samples.cpu) == 3
    assert all(w >= 0 for w in samples.wall)
    with pytest.raises(ValueError):
        _bench.measure(lambda: None, repeats=0)


def test_cpu_time_is_measured():
    def busy():
        x = 0
        for i in range(300_000):
            x += i * i
        return x

    samples = _bench.measure(busy, repeats=2, warmup=0)
    assert all(c > 0 for c in samples.cpu)


def test_spread_and_goal_verdicts(capsys):
    assert _bench.spread([3.0, 1.0, 2.0]) == (1.0, 2.0, 3.0)
    with pytest.raises(ValueError):
        _bench.spread([])
    med = _bench.figure("rate", [10.0, 30.0, 20.0], "img/s", goal=25.0)
    out = capsys.readouterr().out
    assert med == 20.0
    assert "min 10.0" in out and "max 30.0" in out and "n=3" in out and "MISSED" in out
    _bench.figure("ratio", [1.1, 1.0, 1.2], "x", goal=1.15, higher_is_better=False)
    assert "<= 1.15: MET" in capsys.readouterr().out
    _bench.figure("one", [5.0], "s")
    assert "no spread" in capsys.readouterr().out


def test_rates_per_round():
    s = _bench.Samples()
    s.add(wall=2.0, cpu=4.0)
    s.add(wall=1.0, cpu=2.0)
    r = _bench.rates(s, items=10)
    assert r["per_s"] == [5.0, 10.0]
    assert r["per_cpu_s"] == [2.5, 5.0]
    assert r["cpu_ms_each"] == [400.0, 200.0]


def test_load_line_flags_a_busy_machine(monkeypatch):
    monkeypatch.setattr(_bench.os, "getloadavg", lambda: (9.0, 5.0, 2.0))
    monkeypatch.setattr(_bench, "cores", lambda: 2)
    assert "BUSY" in _bench.load_line() and "9.00" in _bench.load_line()
    monkeypatch.setattr(_bench.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert "BUSY" not in _bench.load_line()


# --------------------------------------------------------------------------- bench_agent


def test_agent_bound_is_a_lower_bound():
    import bench_agent

    # N prompts with concurrency C: at least the longest prompt, at least total work / C
    assert bench_agent.lower_bound([1.0, 1.0, 1.0, 1.0], 2) == 2.0
    assert bench_agent.lower_bound([5.0, 1.0, 1.0], 32) == 5.0


def test_critical_path_follows_sequential_records_with_scripted_costs():
    import bench_agent

    from orig_local.agent.trace import StageRecord, Trace

    trace = Trace()
    # a plan (LLM), then two searches in parallel (web), then a filter call (LLM) after both
    trace.add(StageRecord(stage="planning", step="plan", started_s=0.0, latency_s=0.3, attempts=1))
    trace.add(StageRecord(stage="retrieval", step="search_text", started_s=0.31, latency_s=0.15, searches_text=1))
    trace.add(StageRecord(stage="retrieval", step="search_image", started_s=0.31, latency_s=0.12, searches_image=1))
    trace.add(StageRecord(stage="accumulation", step="text_filter", started_s=0.47, latency_s=0.5, attempts=2))
    trace.add(StageRecord(stage="retrieval", step="dedup_images", started_s=0.98, latency_s=0.2))  # no call
    # measured latencies (0.95 s along the chain) include overhead; the path uses the scripted
    # ones: 0.2 + 0.1 + 2 x 0.2; parallel searches count once; CPU-only steps add nothing
    assert bench_agent.critical_path(trace, llm=0.2, web=0.1) == pytest.approx(0.7)


# --------------------------------------------------------------------------- extraction scoring


def test_tokens_split_words_and_cjk_characters():
    assert _extraction.tokens("The Eiffel-Tower, 1889!") == ["the", "eiffel", "tower", "1889"]
    assert _extraction.tokens("石桥 bridge") == ["石", "桥", "bridge"]
    assert _extraction.tokens("# Title\n\n* item | cell") == ["title", "item", "cell"]


def test_score_values():
    s = _extraction.score("a b c d", "a b c d")
    assert (s.precision, s.recall, s.f1) == (1.0, 1.0, 1.0)
    s = _extraction.score("a b x y", "a b c d")  # 2 of 4 right, 2 of 4 found
    assert (s.precision, s.recall) == (0.5, 0.5) and s.f1 == pytest.approx(0.5)
    s = _extraction.score("a a b", "a b b")  # multiset overlap: one a, one b
    assert s.precision == pytest.approx(2 / 3) and s.recall == pytest.approx(2 / 3)
    assert _extraction.score("", "a b").f1 == 0.0
    assert _extraction.score("x y", "a b").f1 == 0.0


def test_extraction_set_is_complete_and_gold_is_page_text():
    pages = _extraction.load_pages()
    assert len(pages) >= 12
    langs = {re.search(r'<html[^>]*lang="([a-z]{2})', p.html).group(1) for p in pages}
    assert {"en", "de", "fr", "es", "it", "zh"} <= langs
    for page in pages:
        visible = _extraction.page_text(page.html)
        lines = [ln.strip() for ln in page.gold.splitlines() if ln.strip()]
        assert len(_extraction.tokens(page.gold)) >= 100, page.name
        for line in lines:
            assert re.sub(r"\s+", " ", line) in visible, (page.name, line)
        # the gold is a strict part of the page: boilerplate exists to be left out
        assert len(_extraction.tokens(visible)) > 1.3 * len(_extraction.tokens(page.gold)), page.name


def test_heldout_pages_are_what_the_generator_writes_and_gold_is_page_text():
    import _heldout_pages

    pages = _extraction.load_pages(_extraction.DATA / "heldout")
    makers = {"forum_varnish_en": _heldout_pages.forum_page, "qa_sourdough_en": _heldout_pages.qa_page,
              "news_comments_passerelle_fr": _heldout_pages.news_comments_page,
              "forum_cadena_es": _heldout_pages.discourse_page, "forum_silikon_de": _heldout_pages.vbulletin_page,
              "qa_cotto_it": _heldout_pages.wordpress_qa_page}
    assert {p.name for p in pages} == set(makers)
    for page in pages:
        assert (page.html, page.gold) == makers[page.name](), page.name  # files not edited by hand
        assert 20_000 <= len(page.html) <= 60_000, page.name
        visible = _extraction.page_text(page.html)
        for line in filter(None, (ln.strip() for ln in page.gold.splitlines())):
            assert re.sub(r"\s+", " ", line) in visible, (page.name, line)
        assert len(_extraction.tokens(visible)) > 1.3 * len(_extraction.tokens(page.gold)), page.name


def test_load_extractor_accepts_the_reader_shapes(tmp_path, monkeypatch):
    mod = tmp_path / "fake_extractors.py"
    mod.write_text(
        "class Cls:\n    def __call__(self, html, url): return ('Title', 'body ' + url)\n"
        "def as_str(html, url): return 'plain'\n"
        "class Doc:\n    text = 'from object'\n"
        "def as_obj(html, url): return Doc()\n"
        "def as_none(html, url): return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _extraction.load_extractor("fake_extractors:Cls")("<p>", "u") == "body u"
    assert _extraction.load_extractor("fake_extractors:as_str")("<p>", "u") == "plain"
    assert _extraction.load_extractor("fake_extractors:as_obj")("<p>", "u") == "from object"
    assert _extraction.load_extractor("fake_extractors:as_none")("<p>", "u") == ""


def test_reader_default_spec_loads():
    pytest.importorskip("trafilatura")
    import bench_retrieval

    extract = _extraction.load_extractor(bench_retrieval.READER_EXTRACT)
    page = _extraction.load_pages()[0]
    assert _extraction.score(extract(page.html, "https://news.invalid/a"), page.gold).recall > 0.5


# --------------------------------------------------------------------------- bench_dedup set


def test_dedup_candidates_are_what_they_claim():
    import bench_dedup
    from PIL import Image, ImageChops, ImageOps

    from orig_local.imagehash import dhash64, hamming

    cands = {c["name"]: c for c in bench_dedup.candidates(n_distinct=4, n_varied=1)}

    def img(name):
        with Image.open(io.BytesIO(cands[name]["body"])) as im:
            return im.convert("RGB")

    base = img("scene0")
    assert cands["scene0/exact copy"]["body"] == cands["scene0"]["body"]
    assert cands["scene0/PNG re-encode"]["ctype"] == "image/png"
    assert img("scene0/resized 50%").size == (base.width // 2, base.height // 2)
    w, h = base.size
    assert img("scene0/crop 5% corner").size == (w - w // 20, h - h // 20)
    assert img("scene0/crop 5% centre").size == (w - 2 * (w // 40), h - 2 * (h // 40))
    flip = img("scene0/mirror flip")
    # a mirror image, and not the same picture (the scenes are not symmetric)
    from PIL import ImageStat

    assert max(ImageStat.Stat(ImageChops.difference(ImageOps.mirror(flip), base)).mean) < 3
    assert max(ImageStat.Stat(ImageChops.difference(flip, base)).mean) > 10
    assert hamming(dhash64(flip), dhash64(base)) > 6
    distinct = [bench_dedup.scene(k) for k in range(10)]
    hashes = [dhash64(im) for im in distinct]
    assert min(hamming(a, b) for i, a in enumerate(hashes) for b in hashes[i + 1:]) > 6


def test_speed_padding_reaches_typical_size_and_keeps_the_article():
    import bench_retrieval

    page = _extraction.load_pages()[0]
    heavy = bench_retrieval.pad(page.html, 60)
    assert len(heavy.encode()) >= 60 * 1024
    assert heavy.count("<a ") >= 150  # menu links, as on a real site
    first = page.gold.splitlines()[0]
    assert first in _extraction.page_text(heavy)
    assert heavy.index("</nav><style>") > heavy.index(first[:40])  # chrome goes after the article
