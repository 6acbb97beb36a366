"""`make demo` as a newcomer sees it: scripts/demo.py then scripts/demo_eval.py (tiny models,
local corpus, simulated backbone for orig), end to end, plus the demo diagnostic's rules."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

# issue 12: "the demo prints under ~25 lines": both scripts together, leaving room for the two
# command lines `make demo` echoes (a first run adds one line: the tiny models being built)
LINE_BUDGET = 23


def _run(script: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--out", str(out), "--quiet", *extra],
                          check=False, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """What `make demo` runs, once for the module: (out folder, stdout+stderr lines of both)."""
    out = tmp_path_factory.mktemp("demo") / "demo"
    first = _run("demo.py", out)
    assert first.returncode == 0, first.stderr[-3000:]
    second = _run("demo_eval.py", out / "eval", "--bootstrap", "50")
    assert second.returncode == 0, second.stderr[-3000:]
    lines = (first.stdout + first.stderr + second.stdout + second.stderr).splitlines()
    return out, lines


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_demo_is_a_short_story_without_noise(demo):
    out, lines = demo
    text = "\n".join(lines)
    assert len(lines) <= LINE_BUDGET, f"{len(lines)} lines:\n{text}"
    assert "Traceback" not in text and "WARNING" not in text and "Warning" not in text, text
    # what ran and where: the three steps, each with its output folder
    assert "1/3 chat" in text and str(out / "chat.json") in text
    assert str(out / "agent-tiny" / "trace.html") in text and str(out / "agent-simulated" / "trace.html") in text
    assert "SIMULATED backbone" in text  # every stand-in is labelled
    # the tiny backbone's errors: one line per failed stage, each stage named once
    trace = json.loads((out / "agent-tiny" / "trace.json").read_text())
    stages = {e.split(":", 1)[0] for e in trace["stage_errors"]}
    assert stages, "the tiny backbone is expected to fail some stages"
    for stage in stages:
        assert sum(line.strip().startswith(f"{stage}:") for line in lines) == 1, (stage, text)
    assert (out / "agent-tiny" / "image.png").is_file() and (out / "agent-simulated" / "image.png").is_file()
    assert str(out / "eval" / "report" / "report.md") in text


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_demo_shows_a_labelled_difference_between_direct_and_orig(demo):
    out, lines = demo
    text = "\n".join(lines)
    agent = {run: [json.loads(x) for x in (out / "eval" / run / "agent.jsonl").read_text().splitlines()]
             for run in ("direct", "orig")}
    # the real cause: orig's prompts carry corpus-only facts, direct's are the raw prompts
    assert any("teal" in r["final_prompt"] for r in agent["orig"])
    assert all(r["final_prompt"] == r["prompt"] for r in agent["direct"])
    m = re.search(r"direct (\d+)/(\d+) .*; orig (\d+)/(\d+)", text)
    assert m, text
    direct_n, total, orig_n = int(m[1]), int(m[2]), int(m[3])
    assert direct_n == 0 and 0 < orig_n <= total and "demo diagnostic" in text and "not a paper metric" in text
    report = (out / "eval" / "report" / "report.md").read_text()
    demo_at, status_at = report.index("## Demo:"), report.index("## Status")
    assert demo_at < status_at  # the newcomer reads it first
    section = report[demo_at:status_at]
    assert "not a paper metric" in section and "SIMULATED backbone" in section and "tiny random-weight" in section
    assert f"| **all** | {total} | – | " in section and f"| 0 (0%) | {orig_n} (" in section
    # the gallery shows the prompts that make the difference
    assert "teal" in (out / "eval" / "report" / "gallery" / "orig.html").read_text()


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_demo_explains_why_image_scores_do_not_differ_and_shows_a_false_verdict(demo):
    out, lines = demo
    text = "\n".join(lines)
    assert "red card -> True, blue card -> False" in text  # the tiny judge answers by colour
    assert re.search(r"wrong verdict: mini_landmark q5 .*\(expected False\) judged True in direct, orig", text), text
    judged = [json.loads(x) for x in (out / "eval" / "direct" / "judge.jsonl").read_text().splitlines()]
    wrong = [v for r in judged for v in r["verdicts"] if v["correct"] is False]
    assert [v["qid"] for v in wrong] == ["q5"] and wrong[0]["expected"] is False
    assert "True (expected False)" in (out / "eval" / "report" / "gallery" / "direct.html").read_text()
    report = (out / "eval" / "report" / "report.md").read_text()
    assert "cannot differ" in report and "plain blue card → `False`" in report
    assert "Retrieval accuracy (Eq. 12)" in report and "machinery only" in report


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_demo_eval_writes_table_figure_gallery(demo):
    out, _ = demo
    report = out / "eval" / "report"
    table = (report / "accuracy.md").read_text()
    assert "| direct |" in table and "| orig |" in table
    assert (report / "figures" / "classes.png").stat().st_size > 1000
    page = (report / "gallery" / "orig.html").read_text()
    assert "mini_landmark" in page and "mini_landmark.png" in page
    for run in ("direct", "orig"):
        assert len((out / "eval" / run / "judge.jsonl").read_text().splitlines()) == 3


# --- the demo diagnostic's rules (fast) ---------------------------------------------------

def test_fact_reaches_counts_content_words_beyond_the_prompt():
    from demo_eval import fact_reaches

    prompt = "A photo of the Veltrane Harbor Lighthouse at dusk"
    fact = "The Veltrane Harbor Lighthouse is painted in teal and orange spiral bands."
    assert fact_reaches(fact, prompt, prompt) is False  # the raw prompt says none of it
    assert fact_reaches(fact, prompt, prompt + ". Its tower is painted in teal and orange spiral bands.") is True
    assert fact_reaches(fact, prompt, prompt + ". Painted teal, orange and spiral band.") is True  # plural ~ singular
    assert fact_reaches(fact, prompt, prompt + ". The tower is teal.") is False  # 1 of 5 words
    assert fact_reaches("The Veltrane Harbor Lighthouse.", prompt, "anything") is None  # adds nothing


def test_demo_section_labels_the_diagnostic_and_reports_what_it_measured(tmp_path):
    from demo_eval import demo_section, fact_table

    from orig_local.evaluation.items import BenchmarkItem, GoldFact

    item = BenchmarkItem(id="x", prompt="A photo of the Veltrane Harbor Lighthouse", category="landmarks",
                         facts=[GoldFact(id="1", text="It is painted in teal and orange spiral bands."),
                                GoldFact(id="2", text="Its light flashes green.")])
    runs = {}
    for run, prompt, evidence in (("direct", item.prompt, None),
                                  ("orig", item.prompt + ". Painted in teal and orange spiral bands.",
                                   ["It is painted in teal and orange spiral bands. Its light flashes green."])):
        run_dir = tmp_path / run
        run_dir.mkdir()
        row = {"id": "x", "status": "ok", "prompt": item.prompt, "final_prompt": prompt}
        if evidence:
            (run_dir / "evidence").mkdir()
            (run_dir / "evidence" / "x.json").write_text(json.dumps({"texts": evidence, "images": []}))
            row["evidence"] = "evidence/x.json"
        (run_dir / "agent.jsonl").write_text(json.dumps(row) + "\n")
        runs[run] = run_dir
    table = fact_table([item], runs)
    assert (table["direct"]["x"]["in_prompt"], table["orig"]["x"]["in_prompt"]) == (0, 1)
    assert table["orig"]["x"]["in_evidence"] == 2 and table["orig"]["x"]["dropped"] == ["Its light flashes green."]
    section = demo_section([item], runs, table, [(166, 134, 145), (166, 135, 145)], (True, False), [],
                           {"direct": {"All": "93.3"}, "orig": {"All": "93.3"}}, {"orig": {"retrieval_acc": "1.0"}},
                           "stand-ins")
    assert "not a paper metric" in section and "| x | 2 | – (no retrieval) | 2 | 0 | 1 |" in section
    assert "\"Its light flashes green.\"" in section  # in the evidence, not in the prompt: named
    assert "largest per-channel spread across prompts and runs: 1" in section
    assert "`orig` 100.0" in section and "machinery only" in section


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_demo_reruns_over_an_older_demos_output_made_with_other_settings(demo):
    # `git pull` then `make demo` again: a default the agent reads has changed since the first
    # demo. The run folder is the demo's own output, so it starts again; it is not refused with
    # a traceback (the harness rightly never mixes rows of different settings in one run)
    out, _ = demo
    meta_path = out / "eval" / "orig" / "run.json"
    meta = json.loads(meta_path.read_text())
    meta["settings"]["agent"]["agent.images.visual_features"] = 401_408  # the default before issue 22
    meta_path.write_text(json.dumps(meta))
    again = _run("demo_eval.py", out / "eval", "--bootstrap", "50")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "an older demo's output: starting it again" in again.stdout
    assert "orig (SIMULATED backbone" in again.stdout and "agent 3 ok" in again.stdout
    assert json.loads(meta_path.read_text())["settings"]["agent"]["agent.images.visual_features"] != 401_408

