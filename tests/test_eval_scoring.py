"""Scoring as the paper defines it, checked against hand-computed tables."""

import math

import pytest

from orig_local.evaluation.scoring import (
    bootstrap_ci,
    class_scores,
    concept_scores,
    overall,
    paired_difference,
    prompt_score,
    retrieval_accuracy,
    table_row,
)

# (id, class, [(concept, correct)])
RUN = [
    ("a", "animal", [("PF", True), ("PF", False), ("CC", True)]),          # S=2/3 PF=1/2 CC=1
    ("b", "animal", [("PF", True), ("TC", False)]),                        # S=1/2 PF=1  TC=0
    ("c", "sports", [("CC", False), ("CC", False), ("CC", True), ("TC", True)]),  # S=1/2 CC=1/3 TC=1
]


def scores(run=RUN, errors="exclude"):
    return [prompt_score(i, c, o, errors=errors) for i, c, o in run]


@pytest.mark.parametrize("pid,expected", [("a", 2 / 3), ("b", 1 / 2), ("c", 1 / 2)])
def test_per_prompt_accuracy(pid, expected):
    s = {p.id: p for p in scores()}
    assert s[pid].s == pytest.approx(expected)


def test_class_scores_are_macro_over_prompts():
    assert class_scores(scores()) == pytest.approx({"animal": 7 / 12, "sports": 1 / 2})


def test_concepts_macro_over_prompts_and_skip_prompts_lacking_the_concept():
    got = concept_scores(scores())
    # PF: only a (1/2) and b (1) have PF questions; c is left out, not counted as 0.
    assert got["PF"] == pytest.approx(0.75)
    # CC: mean of per-prompt CC accuracies (1 and 1/3) = 2/3, NOT the pooled 2/4.
    assert got["CC"] == pytest.approx(2 / 3)
    assert got["TC"] == pytest.approx(0.5)


def test_all_is_mean_of_classes_not_of_prompts():
    row = table_row(scores(), ["animal", "sports"])
    assert row["All"] == pytest.approx((7 / 12 + 1 / 2) / 2)  # 13/24
    prompt_mean = (2 / 3 + 1 / 2 + 1 / 2) / 3
    assert not math.isclose(row["All"], prompt_mean)


def test_table_row_has_ten_classes_in_paper_order_with_nan_for_missing():
    row = table_row(scores())
    assert list(row)[:10] == ["animal", "sports", "transportation", "landmarks", "food",
                              "people", "plant", "product", "culture", "event"]
    assert math.isnan(row["food"])
    assert list(row)[10:] == ["PF", "CC", "TC", "All"]
    assert row["All"] == pytest.approx(13 / 24)  # mean over the classes present


def test_judge_errors_excluded_or_counted_false_never_silent():
    run = RUN[:2] + [("c", "sports", RUN[2][2] + [("TC", None)])]
    excl = {p.id: p for p in scores(run)}
    assert excl["c"].s == pytest.approx(1 / 2) and excl["c"].errors == 1
    false = {p.id: p for p in scores(run, errors="false")}
    assert false["c"].s == pytest.approx(2 / 5) and false["c"].errors == 1


def test_prompt_with_only_errors_is_left_out_of_its_class():
    run = RUN + [("d", "sports", [("PF", None)])]
    assert class_scores(scores(run))["sports"] == pytest.approx(0.5)


def test_overall_ignores_absent_classes():
    assert overall({"animal": 0.4, "food": 0.8}, ["animal", "food", "event"]) == pytest.approx(0.6)


def test_bootstrap_is_seeded_and_brackets_the_point():
    s = scores()
    a = bootstrap_ci(s, ["animal", "sports"], n_boot=300, seed=1)
    b = bootstrap_ci(s, ["animal", "sports"], n_boot=300, seed=1)
    assert a == b
    row = table_row(s, ["animal", "sports"])
    for cell in ("animal", "All", "PF"):
        lo, hi = a[cell]
        assert lo <= row[cell] <= hi
    # one prompt in sports: resampling within the class cannot move it
    assert a["sports"] == pytest.approx((0.5, 0.5))


def test_paired_difference_uses_common_ids_and_is_zero_against_itself():
    s = scores()
    same = paired_difference(s, s, ["animal", "sports"], n_boot=200)
    assert same["All"] == pytest.approx((0.0, 0.0, 0.0))
    better = [prompt_score("a", "animal", [("PF", True)] * 3), *scores()[1:],
              prompt_score("z", "animal", [("PF", True)])]  # z: only in one run -> ignored
    diff = paired_difference(s, better, ["animal", "sports"], n_boot=200)
    assert diff["animal"][0] == pytest.approx((1 + 1 / 2) / 2 - 7 / 12)
    assert diff["animal"][1] <= diff["animal"][0] <= diff["animal"][2]


def test_retrieval_accuracy():
    assert retrieval_accuracy([True, False, True, None]) == pytest.approx(2 / 3)
    assert math.isnan(retrieval_accuracy([None]))


def test_concept_cells_cover_the_same_prompts_as_the_class_columns_and_their_ci():
    # FIG-Eval's 20 "others" prompts (judged with include_others) are not one of the 10 table
    # classes: they are out of "All", so they must be out of PF/CC/TC too, or the point value
    # and its bootstrap interval describe different prompt sets.
    run = scores() + [prompt_score("o", "others", [("PF", False), ("TC", False)])]
    row = table_row(run)
    assert row["PF"] == pytest.approx((1 / 2 + 1) / 2)  # prompts a and b only
    assert row["TC"] == pytest.approx((0 + 1) / 2)
    ci = bootstrap_ci(run, n_boot=200, seed=1)
    for c in ("PF", "CC", "TC"):
        assert ci[c][0] - 1e-9 <= row[c] <= ci[c][1] + 1e-9
