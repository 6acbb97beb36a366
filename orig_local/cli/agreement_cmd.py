"""`orig agreement`: judge vs human labels (or vs another judge) on one run."""

from __future__ import annotations

HELP = "item accuracy, Cohen's kappa and class-level Pearson/Spearman/Kendall: judge vs humans"


def add_arguments(parser) -> None:
    parser.add_argument("run", help="run folder with judge verdicts")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--human", help="labels CSV: id,question_id,human[,annotator] (see docs/evaluation.md)")
    group.add_argument("--against-judge", metavar="NAME",
                       help="compare with judge-NAME.jsonl of the same run instead of humans")
    parser.add_argument("--judge-name", help="judge whose verdicts are compared (default judge.jsonl)")
    parser.add_argument("--out", help="write agreement.md and agreement.json here")


def run(args) -> int:
    import json
    from pathlib import Path

    from orig_local.errors import DataError
    from orig_local.evaluation.agreement import human_agreement, judge_agreement, to_markdown

    if not Path(args.run).is_dir():
        raise DataError(f"run folder not found: {args.run}", hint="pass the --out folder of an `orig eval` run")
    if args.human:
        result = human_agreement(args.run, args.human, args.judge_name)
        title = f"Judge vs human labels ({Path(args.human).name})"
    else:
        result = judge_agreement(args.run, args.judge_name, args.against_judge)
        title = f"Judge {args.judge_name or 'default'} vs judge {args.against_judge}"
    md = to_markdown(result, title)
    print(md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "agreement.md").write_text(md, encoding="utf-8")
        (out / "agreement.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0
