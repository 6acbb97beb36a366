"""`orig report`: tables, figures and galleries rebuilt from run folders.

Data-error policy: rows that cannot be scored as they are (a verdict that is not a boolean,
duplicate rows or question ids, verdicts missing for some of the benchmark's questions, ids
outside the benchmark) are left out of every score, counted in the tables and listed in
``data_errors.md``; the report is still written, and the command then exits 1 with one line
per run naming the first items (``--allow-data-errors``: exit 0).
"""

from __future__ import annotations

import sys
from pathlib import Path

HELP = "Table-3 accuracy (with CIs), differences, cost tables, figures, HTML gallery from runs"


def _csv_list(values):
    out = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out or None


def _whole_number(minimum: int, below: str):
    """An argparse type: a whole number of at least ``minimum`` (``below`` says why not)."""

    def parse(text: str) -> int:
        import argparse

        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value}{below}")
        return value

    return parse


_replicates = _whole_number(0, " is negative (0 = no CIs)")
_positive = _whole_number(1, ": need at least 1")


def _level(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (e.g. 0.95)")
    return value


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", help="run folders (several: compared side by side)")
    parser.add_argument("--out", help="report folder (default <run>/report for one run)")
    parser.add_argument("--judge-name", help="use judge-<name>.jsonl instead of judge.jsonl; several "
                        "comma-separated (default = judge.jsonl) compare judges side by side")
    parser.add_argument("--baseline", help="run the differences are taken against (default: the first)")
    parser.add_argument("--bootstrap", type=_replicates, default=1000, help="bootstrap replicates (0 = no CIs)")
    parser.add_argument("--ci", type=_level, default=0.95, help="confidence level, between 0 and 1 (default 0.95)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--errors", choices=["exclude", "false"], default="exclude",
                        help="unparseable verdicts: left out of S_i (default) or counted wrong")
    parser.add_argument("--no-gallery", action="store_true")
    parser.add_argument("--media", choices=["copy", "link", "reference"], default="copy",
                        help="gallery images: copy into <out>/media (hard links where possible; the folder "
                        "is self-contained, default), link (symlinks: no bytes copied, valid while the runs "
                        "stay put) or reference (pages point at the images where they are)")
    parser.add_argument("--gallery-page", type=_positive, default=200, metavar="N",
                        help="prompts per gallery page (default 200; images load lazily)")
    parser.add_argument("--wise-score", choices=["wiscore", "verified", "statement"],
                        help="WISE runs: WiScore (legacy), WISE_Verified, or our statement accuracy "
                        "(default: the release's own score among those judged)")
    parser.add_argument("--allow-mixed-judges", action="store_true",
                        help="compare runs judged by different judge models/revisions (refused otherwise)")
    parser.add_argument("--allow-data-errors", action="store_true",
                        help="exit 0 even when rows had to be left out as data errors")
    parser.add_argument("--allow-unjudged", action="store_true",
                        help="exit 0 for runs that were never judged (a report of their earlier phases)")
    parser.add_argument("--data", help="benchmark folder/file to check verdicts against (default: run.json's)")
    parser.add_argument("--benchmark", help="benchmark loader for --data (default: run.json's)")
    parser.add_argument("--ids", action="append", help="comma-separated item ids: tables over these only")
    parser.add_argument("--classes", action="append", help="comma-separated classes: tables over these only")


def run(args) -> int:
    from pathlib import Path

    from orig_local.evaluation.report import build_report
    from orig_local.evaluation.rundir import check_run_dir
    from orig_local.evaluation.seeds import expand_runs, seed_report
    from orig_local.labels import SIMULATED, TINY

    for run_dir in args.runs:  # a missing or empty folder: exit 2, and no report folder created
        check_run_dir(run_dir)
    run_dirs, seed_groups = expand_runs(args.runs)  # a multi-seed run (--seeds): each seed a row
    if seed_groups and args.out is None and len(run_dirs) > 1:
        args.out = str(Path(args.runs[0]) / "report")
    written = build_report(run_dirs, args.out, judge_name=args.judge_name, baseline=args.baseline,
                           n_boot=args.bootstrap, ci=args.ci, seed=args.seed, errors=args.errors,
                           gallery=not args.no_gallery, allow_mixed_judges=args.allow_mixed_judges,
                           data=args.data, benchmark=args.benchmark, ids=_csv_list(args.ids),
                           classes=_csv_list(args.classes), media_mode=args.media, page_size=args.gallery_page)
    report = Path(written["report"]).read_text(encoding="utf-8")
    for label in (SIMULATED, TINY):
        if label in report:
            print(f"NOTE: {label}")
    print(Path(written["status"]).read_text(encoding="utf-8"))
    print(Path(written["accuracy"]).read_text(encoding="utf-8"))
    if seed_groups:
        print(seed_report(seed_groups, Path(written["report"]).parent, judge_name=args.judge_name, errors=args.errors,
                          n_boot=args.bootstrap, ci=args.ci, seed=args.seed))
        written["seeds"] = Path(written["report"]).parent / "seeds.md"
    from orig_local.evaluation.wise_score import wise_report

    wise = wise_report(args.runs, args.wise_score, args.judge_name, args.errors, out=Path(written["accuracy"]).parent,
                       ids=_csv_list(args.ids), classes=_csv_list(args.classes))
    if wise:
        print(wise)
    for name, path in written.items():
        print(f"{name}: {path}")
    unjudged = never_judged_exit(run_dirs, args.judge_name)  # each seed of a --seeds run, not its parent
    return max(data_error_exit(written, args.allow_data_errors), 0 if args.allow_unjudged else unjudged)


def never_judged_exit(runs, judge_name: str | None) -> int:
    """1, with one line per run x judge on stderr, when a run has no judge rows at all: a table
    of dashes must not pass for a report."""
    from orig_local.evaluation.binding import has_rows, phase_key

    names = [None if n in ("", "default") else n for n in judge_name.split(",")] if judge_name else [None]
    missing = [(run, name) for run in runs for name in names if not has_rows(Path(run), phase_key("judge", name))]
    for run, name in missing:
        print(f"orig: run {run} was never judged (no {phase_key('judge', name)}.jsonl rows): no accuracy; "
              f"run `orig eval --phase judge --out {run}`" + (f" --judge-name {name}" if name else ""), file=sys.stderr)
    return 1 if missing else 0


def data_error_exit(written: dict, allow: bool) -> int:
    """One line per run with data errors on stderr (naming the first items); 1 unless allowed."""
    import json
    from pathlib import Path

    path = written.get("data_errors")
    if not path:
        return 0
    by_run: dict[str, list[str]] = {}
    for e in json.loads(Path(path).with_suffix(".json").read_text(encoding="utf-8")):
        by_run.setdefault(e["run"], []).append(f"{e['item']}: {e['problem']}")
    for run, problems in by_run.items():
        more = f" (+{len(problems) - 2} more)" if len(problems) > 2 else ""
        print(f"orig: data error: run {run}: {len(problems)} row(s) left out of the scores - "
              f"{'; '.join(problems[:2])}{more}; see {path}", file=sys.stderr)
    return 0 if allow else 1
