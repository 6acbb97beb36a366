"""`orig merge`: join shard outputs (one run folder, or run folders from several machines)."""

from __future__ import annotations

HELP = "merge <phase>.shard-i-of-n.jsonl files / run folders into one run without duplicates"


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", help="run folder(s) holding shard files")
    parser.add_argument("--out", help="merged run folder (default: the first run)")


def run(args) -> int:
    from orig_local.evaluation.merge import merge_runs

    counts = merge_runs(args.runs, args.out)
    for name, n in counts.items():
        print(f"{name}: {n} rows")
    return 0
