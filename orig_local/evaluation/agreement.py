"""Judge-vs-human agreement: ``orig agreement --human labels.csv RUN``.

Labels CSV (header required; extra columns ignored)::

    id,question_id,human[,annotator]
    sports_0,question_1,true
    sports_0,question_1,false,ann2

``human`` is the person's answer to the question (true/false, also 1/0, yes/no). Several rows
for one (id, question_id) - several annotators - are majority-voted; ties are left out and
counted. Computed:

* item level: accuracy of the judge's answer against the human answer, and Cohen's kappa;
* class level (the paper's figure): per class, the mean over prompts of S_i from the human
  answers vs from the judge's answers on the same questions; Pearson r, Spearman rho and
  Kendall tau across classes (scipy).

The same functions compare two judges (``--against-judge NAME``): the second judge's answers
take the humans' place.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

from orig_local.errors import DataError

TRUE = {"true", "1", "yes", "t", "y"}
FALSE = {"false", "0", "no", "f", "n"}


class LabelsError(DataError):
    pass


def read_labels(path: str | Path) -> tuple[dict[tuple[str, str], bool], int]:
    """(id, question_id) -> majority human answer; and the number of tied pairs left out."""
    votes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    if not Path(path).is_file():
        raise LabelsError(f"labels file not found: {path}",
                          hint="pass a CSV with columns id,question_id,human (see docs/evaluation.md)")
    try:
        # utf-8-sig: spreadsheet programs save CSV with a byte-order mark before "id"
        with Path(path).open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            fieldnames = reader.fieldnames
            rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise LabelsError(f"{path}: not a UTF-8 CSV file ({type(exc).__name__}: {exc})",
                          hint="save it as CSV (UTF-8) with columns id,question_id,human") from exc
    need = {"id", "question_id", "human"}
    if not fieldnames or not need <= set(fieldnames):
        raise LabelsError(f"{path}: header must contain {sorted(need)}; got {fieldnames}")
    for n, row in enumerate(rows, 2):
        if row["id"] is None or row["question_id"] is None or row["human"] is None:
            raise LabelsError(f"{path}:{n}: the row has fewer columns than the header")
        value = row["human"].strip().lower()
        if value in TRUE:
            votes[(row["id"].strip(), row["question_id"].strip())].append(True)
        elif value in FALSE:
            votes[(row["id"].strip(), row["question_id"].strip())].append(False)
        else:
            raise LabelsError(f"{path}:{n}: human label {row['human']!r} is not true/false")
    labels, ties = {}, 0
    for key, vs in votes.items():
        yes = sum(vs)
        if yes * 2 == len(vs):
            ties += 1
        else:
            labels[key] = yes * 2 > len(vs)
    return labels, ties


def judge_answers(run_dir: str | Path, judge_name: str | None = None) -> tuple[dict, dict, dict]:
    """((id, qid) -> judge answer bool, (id, qid) -> expected answer, id -> class)."""
    from orig_local.evaluation.rows import JudgeRow
    from orig_local.evaluation.run_rows import _by_id, read_all_rows

    answers, expected, classes = {}, {}, {}
    # an id with several rows (main + shard files) is left out: which one the human labelled
    # cannot be told, and "first row wins" would decide it silently
    read = [r for r in read_all_rows(Path(run_dir), "judge", judge_name) if isinstance(r, JudgeRow)]
    for row in _by_id(read, "judge", []).values():
        if row.duplicate:
            continue
        classes[row.id] = row.category or ""
        for v in row.verdicts if isinstance(row.verdicts, list) else []:
            if not isinstance(v, dict) or not v.get("qid"):
                continue
            if isinstance(v.get("answer"), bool) and v.get("error") is None:
                answers[(row.id, v["qid"])] = v["answer"]
            expected[(row.id, v["qid"])] = v.get("expected", True)
    return answers, expected, classes


def cohen_kappa(a: list[bool], b: list[bool]) -> float:
    """Cohen's kappa of two raters' true/false answers; NaN where it is undefined: no items, or
    chance agreement 1 (both raters constant and equal: 0/0 in the standard definition, as
    sklearn's cohen_kappa_score gives). Never 1.0 for raters that show no variation."""
    n = len(a)
    if not n:
        return math.nan
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    return math.nan if pe == 1 else (po - pe) / (1 - pe)


def agreement(judge: dict, human: dict, expected: dict, classes: dict) -> dict:
    """All agreement numbers for answers keyed by (id, qid)."""
    from scipy import stats

    keys = sorted(set(judge) & set(human))
    j = [judge[k] for k in keys]
    h = [human[k] for k in keys]
    out: dict = {
        "items": len(keys),
        "human_only": len(set(human) - set(judge)),  # no usable judge answer (missing or error)
        "accuracy": (sum(x == y for x, y in zip(j, h, strict=True)) / len(keys)) if keys else math.nan,
        "cohen_kappa": cohen_kappa(j, h),
    }
    per_prompt: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for k in keys:
        exp = expected.get(k, True)
        per_prompt[k[0]].append((judge[k] == exp, human[k] == exp))
    by_class: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for pid, pairs in per_prompt.items():
        by_class[classes.get(pid, "?")].append((sum(p[0] for p in pairs) / len(pairs),
                                                 sum(p[1] for p in pairs) / len(pairs)))
    cls = {c: (sum(v[0] for v in vs) / len(vs), sum(v[1] for v in vs) / len(vs)) for c, vs in sorted(by_class.items())}
    out["classes"] = {c: {"judge": a, "human": b, "prompts": len(by_class[c])} for c, (a, b) in cls.items()}
    xs, ys = [v[0] for v in cls.values()], [v[1] for v in cls.values()]
    if len(cls) >= 3 and len(set(xs)) > 1 and len(set(ys)) > 1:
        out["pearson"] = float(stats.pearsonr(xs, ys)[0])
        out["spearman"] = float(stats.spearmanr(xs, ys)[0])
        out["kendall"] = float(stats.kendalltau(xs, ys)[0])
    else:  # correlation is undefined on fewer than 3 classes or constant scores
        out["pearson"] = out["spearman"] = out["kendall"] = math.nan
    return out


def human_agreement(run_dir: str | Path, labels_csv: str | Path, judge_name: str | None = None) -> dict:
    human, ties = read_labels(labels_csv)
    judge, expected, classes = judge_answers(run_dir, judge_name)
    out = agreement(judge, human, expected, classes)
    out["ties"] = ties
    return out


def judge_agreement(run_dir: str | Path, judge_a: str | None, judge_b: str | None) -> dict:
    a, expected, classes = judge_answers(run_dir, judge_a)
    b, _, _ = judge_answers(run_dir, judge_b)
    return agreement(a, b, expected, classes)


def to_markdown(result: dict, title: str) -> str:
    f = lambda v: "–" if isinstance(v, float) and math.isnan(v) else f"{v:.3f}"  # noqa: E731
    lines = [f"# {title}", "",
             f"Items compared: {result['items']} (labelled but without a judge answer: {result['human_only']}"
             + (f"; annotator ties left out: {result['ties']}" if "ties" in result else "") + ")", "",
             "| item accuracy | Cohen's κ | Pearson r | Spearman ρ | Kendall τ |", "|---|---|---|---|---|",
             f"| {f(result['accuracy'])} | {f(result['cohen_kappa'])} | {f(result['pearson'])} | "
             f"{f(result['spearman'])} | {f(result['kendall'])} |", "",
             "| class | prompts | judge S | human S |", "|---|---|---|---|"]
    for c, v in result["classes"].items():
        lines.append(f"| {c} | {v['prompts']} | {100 * v['judge']:.1f} | {100 * v['human']:.1f} |")
    return "\n".join(lines) + "\n"
