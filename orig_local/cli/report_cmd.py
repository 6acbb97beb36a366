"""`orig report`: tables, figures and galleries rebuilt from run folders."""

from __future__ import annotations

HELP = "Table-3 accuracy (with CIs), differences, cost tables, figures, HTML gallery from runs"


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", help="run folders (several: compared side by side)")
    parser.add_argument("--out", help="report folder (default <run>/report for one run)")
    parser.add_argument("--judge-name", help="use judge-<name>.jsonl instead of judge.jsonl; several "
                        "comma-separated (default = judge.jsonl) compare judges side by side")
    parser.add_argument("--baseline", help="run the differences are taken against (default: the first)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap replicates (0 = no CIs)")
    parser.add_argument("--ci", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--errors", choices=["exclude", "false"], default="exclude",
                        help="unparseable verdicts: left out of S_i (default) or counted wrong")
    parser.add_argument("--no-gallery", action="store_true")


def run(args) -> int:
    from pathlib import Path

    from orig_local.evaluation.report import build_report
    from orig_local.evaluation.rundir import check_run_dir

    for run_dir in args.runs:  # a missing or empty folder: exit 2, and no report folder created
        check_run_dir(run_dir)
    written = build_report(args.runs, args.out, judge_name=args.judge_name, baseline=args.baseline,
                           n_boot=args.bootstrap, ci=args.ci, seed=args.seed, errors=args.errors,
                           gallery=not args.no_gallery)
    print(Path(written["accuracy"]).read_text(encoding="utf-8"))
    for name, path in written.items():
        print(f"{name}: {path}")
    return 0
