"""WISE's judges and scores: WiScore (legacy), WISE_Verified, and our statement accuracy."""

import asyncio
import json
import math

import pytest
from _eval_fakes import FakeGenerator, solid
from _wise_release import make_repo

from orig_local.config import Config
from orig_local.errors import DataError
from orig_local.evaluation.judge import Judge
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.orchestrate import direct_agent, run_phases
from orig_local.evaluation.rundir import read_phase
from orig_local.evaluation.wise_judge import VerifiedReply, WiScoreReply, wiscore
from orig_local.evaluation.wise_score import overall, run_summary, summarize, wise_report
from orig_local.llm.config import ChatConfig
from orig_local.llm.scripted import ScriptedChatModel

# WISE_Verified README / leadboard.md, rank 3: BAGEL (w/ CoT).
BAGEL = {"cultural": 0.7800, "time": 0.6333, "space": 0.5667, "biology": 0.3750, "physics": 0.5500,
         "chemistry": 0.5083}


def test_bagel_row_overall_by_wise_verified_weights():
    assert overall(BAGEL, "verified") == pytest.approx(0.628, abs=5e-4)
    assert overall(BAGEL, "statement") == pytest.approx(0.569, abs=5e-4)  # the unweighted mean it replaces


def test_legacy_weights_and_wiscore_formula():
    assert wiscore(2, 2, 2) == pytest.approx(1.0) and wiscore(0, 0, 0) == 0.0
    assert wiscore(2, 1, 0) == pytest.approx((0.7 * 2 + 0.2 * 1) / 2)
    # WISE_legacy README: FLUX.1-dev 0.48 0.58 0.62 0.42 0.51 0.35 -> Overall 0.50
    flux = dict(zip(BAGEL, [0.48, 0.58, 0.62, 0.42, 0.51, 0.35], strict=True))
    assert overall(flux, "wiscore") == pytest.approx(0.4 * .48 + .167 * .58 + .133 * .62 + .1 * (.42 + .51 + .35))
    assert round(overall(flux, "wiscore"), 2) == 0.50
    assert math.isnan(overall({k: v for k, v in flux.items() if k != "time"}, "wiscore"))


def _verified_rows(per_category: dict[str, tuple[int, int]]) -> list[dict]:
    """Judge rows: ``ones`` of ``n`` items per category scored 1 by WISE_Verified."""
    out = []
    for cat, (ones, n) in per_category.items():
        for k in range(n):
            s = int(k < ones)
            out.append({"id": f"wise_{cat}_{k}", "category": cat, "error": None,
                        "verdicts": [{"qid": "verified", "answer": {"score": s}, "correct": s == 1, "error": None}]})
    return out


def test_bagel_row_reproduced_from_1000_judged_items():
    # 312/400 cultural and 76, 68, 45, 66, 61 of 120: the README's category means
    rows = _verified_rows({"cultural": (312, 400), "time": (76, 120), "space": (68, 120), "biology": (45, 120),
                           "physics": (66, 120), "chemistry": (61, 120)})
    s = summarize(rows, "verified")
    assert s.items == 1000 and s.errors == 0 and s.complete
    assert {c: round(v, 4) for c, v in s.categories.items()} == BAGEL
    assert round(s.overall, 3) == 0.628


def test_failed_items_are_counted_never_scored_silently():
    rows = _verified_rows({c: (1, 2) for c in BAGEL})
    rows[0]["verdicts"][0].update(answer=None, correct=None, error="unparseable")
    rows[2] = {**rows[2], "error": "no image", "verdicts": []}
    s = summarize(rows, "verified")
    assert s.errors == 2 and not s.complete and set(s.error_ids) == {rows[0]["id"], rows[2]["id"]}
    assert s.scored["cultural"] == 1
    z = summarize(rows, "verified", errors="false")  # counted as 0 instead
    assert z.scored["cultural"] == 2 and z.categories["cultural"] == 0.0
    with pytest.raises(DataError, match="not a WISE category"):
        summarize([{"id": "wise_1", "category": "Cultural knowledge", "verdicts": []}], "verified")


# --------------------------------------------------------------------------- the judges


def rubric_reply(messages, schema):
    """A judge that grades by the image colour: red -> good."""
    r, _, b = messages[-1].images[0].to_pil().getpixel((0, 0))
    good = r > b
    if schema is WiScoreReply:
        g = 2 if good else 0
        return json.dumps({"consistency_reason": "x", "realism_reason": "y", "aesthetic_reason": "z",
                           "consistency": g, "realism": 1, "aesthetic_quality": 1})
    if schema is VerifiedReply:
        return json.dumps({"reason": "looks right" if good else "wrong", "score": int(good)})
    return "true" if good else "false"


def _judge(reply=rubric_reply):
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="scripted-judge"), replies=[reply], cycle=True)
    return Judge(chat, name="scripted"), chat


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("wise") / "WISE")


def test_schemas_put_reasons_before_scores():
    for schema, reasons, _scores in [(WiScoreReply, 3, 3), (VerifiedReply, 1, 1)]:
        props = list(schema.model_json_schema()["properties"])
        assert all("reason" in p for p in props[:reasons]) and not any("reason" in p for p in props[reasons:])


def test_the_judge_sees_prompt_explanation_and_image_once(repo):
    item = load_benchmark("wise", repo / "WISE_legacy", protocols=["wiscore", "verified", "statement"])[0]
    judge, chat = _judge()
    verdicts = asyncio.run(judge.judge_item(item, solid("red")))
    wis, ver, stm = verdicts
    assert wis.answer == {"consistency": 2, "realism": 1, "aesthetic_quality": 1, "wiscore": wiscore(2, 1, 1)}
    assert wis.correct is None and wis.error is None
    assert ver.answer == {"score": 1} and ver.correct is True
    assert stm.answer is True and stm.correct is True
    for req, schema in zip(chat.requests[:2], (WiScoreReply, VerifiedReply), strict=True):
        assert req["schema"] is schema and req["temperature"] == 0.0
        text = "\n".join(m.text for m in req["messages"])
        assert text.count(item.prompt) == 1 and text.count(item.reference_text.strip()) == 1
        assert len(req["messages"][-1].images) == 1


def test_a_malformed_judge_reply_is_an_error_not_a_score(repo):
    item = load_benchmark("wise", repo / "data_verified")[0]
    judge, _ = _judge(reply=lambda m, s: "Score: 1")
    verdicts = asyncio.run(judge.judge_item(item, solid("red")))
    assert all(v.error and v.answer is None and v.correct is None for v in verdicts)
    row = {"id": item.id, "category": item.category, "error": None, "verdicts": [v.to_row() for v in verdicts]}
    assert summarize([row], "verified").errors == 1 and summarize([row], "wiscore").errors == 1


def test_every_wise_template_renders():
    judge, _ = _judge()
    for stem in ("wise_wiscore", "wise_verified"):
        assert "PROMPT" in judge.render(f"{stem}_system.jinja")
        text = judge.render(f"{stem}.jinja", prompt="P1", explanation="E1")
        assert "P1" in text and "E1" in text


# --------------------------------------------------------------------------- a whole run and `orig report`


class ColourByIdGenerator(FakeGenerator):
    """Red for even prompt ids, blue for odd ones."""

    def generate(self, request):
        result = super().generate(request)
        pid = int(request.prompt.split("prompt ")[1].split(":")[0])
        result.image = solid("red" if pid % 2 == 0 else "blue")
        return result


def _run(repo, tmp_path, classes=None):
    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = "direct"
    cfg.generator.preset = "fake"
    cfg.eval.benchmark = "wise"
    items = load_benchmark("wise", repo / "data_verified", classes=classes)[::20]  # 50 prompts, all categories
    run = tmp_path / "run"
    judge, _ = _judge()
    run_phases(cfg, run, items, ["agent", "generate", "judge"], agent=direct_agent,
               generator=ColourByIdGenerator(), judge=judge)
    return run, items


def test_run_judges_and_report_prints_the_chosen_score(repo, tmp_path, capsys):
    from orig_local.cli import main

    run, items = _run(repo, tmp_path)
    rows = read_phase(run, "judge")
    assert all(r["error"] is None and r["n_errors"] == 0 for r in rows.values())
    expect = {}
    for it in items:
        red = int(it.id.split("_")[1]) % 2 == 0
        expect.setdefault(it.category, []).append(1.0 if red else 0.0)
    want = {c: sum(v) / len(v) for c, v in expect.items()}
    s = run_summary(run, "verified")
    assert s.categories == pytest.approx(want) and s.errors == 0
    assert s.overall == pytest.approx(0.4 * want["cultural"] + 0.12 * sum(v for c, v in want.items() if c != "cultural"))
    w = run_summary(run, "wiscore")
    assert w.categories["cultural"] == pytest.approx(
        sum(wiscore(2, 1, 1) if x else wiscore(0, 1, 1) for x in expect["cultural"]) / len(expect["cultural"]))

    assert main(["report", str(run), "--bootstrap", "0", "--no-gallery", "--wise-score", "verified"]) == 0
    out = capsys.readouterr().out
    assert "WISE_Verified" in out and f"{s.overall:.4f}" in out and "0.4·Cultural + 0.12·Time" in out
    assert (run / "report" / "wise.md").read_text().startswith("## WISE")
    assert main(["report", str(run), "--bootstrap", "0", "--no-gallery", "--wise-score", "wiscore"]) == 0
    out = capsys.readouterr().out
    assert "WiScore" in out and f"{w.overall:.4f}" in out and "0.167·Time" in out
    # the statement protocol was not judged in this run: a clear error, not a number
    assert main(["report", str(run), "--bootstrap", "0", "--no-gallery", "--wise-score", "statement"]) == 2
    assert "no statement accuracy (ours) verdicts" in capsys.readouterr().err


def test_report_marks_a_subset_and_failures(repo, tmp_path):
    run, _ = _run(repo, tmp_path, classes=["natural science"])
    text = wise_report([run], "verified")
    assert "no Overall" in text and "| — |" in text
    rows = (run / "judge.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first.update(error="judge down", verdicts=[])
    (run / "judge.jsonl").write_text("\n".join([json.dumps(first)] + rows[1:]) + "\n")
    assert "INCOMPLETE - 1 of" in wise_report([run], "verified")


def test_default_score_is_the_releases_own(repo, tmp_path):
    run, _ = _run(repo, tmp_path)
    assert run_summary(run).score == "verified"  # both judged, no release recorded
    meta = json.loads((run / "run.json").read_text())
    meta["data_source"] = {"loader": "wise", "release": "legacy", "variant": "base"}
    (run / "run.json").write_text(json.dumps(meta))
    assert run_summary(run).score == "wiscore"


def test_a_duplicated_item_is_an_error_not_first_row_wins(repo, tmp_path):
    # the same id in the main file and a shard file, with different verdicts: WISE's score must
    # not silently take the first one (issue 9.6: duplicates are never resolved silently)
    run, _ = _run(repo, tmp_path)
    rows = [json.loads(ln) for ln in (run / "judge.jsonl").read_text().splitlines()]
    before = run_summary(run, "verified")
    flipped = json.loads(json.dumps(rows[0]))
    for v in flipped["verdicts"]:
        if v["qid"] == "verified":
            v["answer"] = {"score": 1 - v["answer"]["score"]}
    (run / "judge.shard-1-of-2.jsonl").write_text(json.dumps(flipped) + "\n")
    s = run_summary(run, "verified")
    assert s.errors == before.errors + 1 and rows[0]["id"] in s.error_ids
    assert sum(s.scored.values()) == sum(before.scored.values()) - 1
    assert "INCOMPLETE" in wise_report([run], "verified")


def test_grades_outside_the_scale_or_not_numbers_are_errors_not_scores():
    from orig_local.evaluation.wise_score import item_value

    def row(qid, answer):
        return {"id": "wise_1", "category": "cultural", "error": None,
                "verdicts": [{"qid": qid, "answer": answer, "correct": None, "error": None}]}

    assert item_value(row("wiscore", {"consistency": 2, "realism": 1, "aesthetic_quality": 0}), "wiscore") == \
        pytest.approx(wiscore(2, 1, 0))
    for bad in ({"consistency": "2", "realism": 1, "aesthetic_quality": 0},
                {"consistency": 5, "realism": 1, "aesthetic_quality": 0},
                {"consistency": True, "realism": 1, "aesthetic_quality": 0}):
        assert item_value(row("wiscore", bad), "wiscore") is None, bad
    assert item_value(row("verified", {"score": 1}), "verified") == 1.0
    for bad in ({"score": True}, {"score": "1"}, {"score": 2}):
        assert item_value(row("verified", bad), "verified") is None, bad


def test_default_score_follows_the_release_of_the_data_run_json_names(repo, tmp_path):
    # both scores judged; run.json records only the data path: a legacy folder means WiScore
    run, _ = _run(repo, tmp_path)
    meta = json.loads((run / "run.json").read_text())
    meta["data"] = str(repo / "WISE_legacy" / "data")
    (run / "run.json").write_text(json.dumps(meta))
    assert run_summary(run).score == "wiscore"
    meta["data"] = str(repo / "data_verified")
    (run / "run.json").write_text(json.dumps(meta))
    assert run_summary(run).score == "verified"


def test_items_are_counted_in_the_category_the_authors_calculators_give_their_id():
    # WISE_Verified's calculator (and leadboard.md) go by prompt_id boundaries: 1-400 culture,
    # then blocks of 120. A row whose Category string disagrees is counted where the authors
    # count it, so the category means and Overall match theirs.
    rows = [{"id": f"wise_{pid}", "category": cat, "error": None,
             "verdicts": [{"qid": "verified", "answer": {"score": s}, "correct": s == 1, "error": None}]}
            for pid, cat, s in [(1, "cultural", 1), (450, "cultural", 0), (530, "space", 1),
                                (700, "biology", 1), (800, "physics", 0), (900, "chemistry", 1)]]
    s = summarize(rows, "verified", release="verified")
    assert s.categories == {"cultural": 1.0, "time": 0.0, "space": 1.0, "biology": 1.0, "physics": 0.0,
                            "chemistry": 1.0}
    # legacy: 701-800 biology, 801-900 physics, 901-1000 chemistry (wise_science.py)
    legacy = summarize(rows, "verified", release="legacy")
    assert (legacy.scored["biology"], legacy.scored["physics"], legacy.scored["chemistry"]) == (2, 1, 0)
    # unknown release: the rows' own categories
    assert summarize(rows, "verified").scored["cultural"] == 2


def test_a_run_judged_with_fewer_wise_protocols_is_checked_against_those(repo, tmp_path):
    # eval.wise_judge=[verified]: the items have one question each; checking the verdicts
    # against the loader's default protocols made every item a "data error" (report exit 1)
    from orig_local.evaluation.results import load_run

    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = "direct"
    cfg.generator.preset = "fake"
    cfg.eval.benchmark = "wise"
    cfg.eval.data = str(repo / "data_verified")
    cfg.eval.wise_judge = ["verified"]
    items = load_benchmark("wise", repo / "data_verified", protocols=["verified"])[::100]
    judge, _ = _judge()
    run = tmp_path / "run"
    run_phases(cfg, run, items, ["agent", "generate", "judge"], agent=direct_agent,
               generator=ColourByIdGenerator(), judge=judge)
    res = load_run(run)
    assert res.benchmark_checked and res.data_errors == [] and len(res.prompts) == len(items)


def test_ids_and_classes_restrict_the_wise_table_like_every_other_table(repo, tmp_path):
    run, items = _run(repo, tmp_path)
    every = run_summary(run, "verified")
    bio = run_summary(run, "verified", classes=["Biology"])  # the data's own spelling works too
    assert sum(bio.scored.values()) == sum(it.category == "biology" for it in items) > 0
    assert bio.categories["biology"] == pytest.approx(every.categories["biology"])
    assert math.isnan(bio.categories["cultural"]) and math.isnan(bio.overall)  # Overall needs all six
    science = run_summary(run, "verified", classes=["natural science"])
    assert {c for c, n in science.scored.items() if n} == {"biology", "physics", "chemistry"}
    one = run_summary(run, "verified", ids=[items[0].id])
    assert sum(one.scored.values()) == 1
    assert "| — |" in wise_report([run], "verified", classes=["biology"])
