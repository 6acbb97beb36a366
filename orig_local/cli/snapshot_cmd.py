"""`orig snapshot pack|unpack|verify`: move evidence snapshots around as one archive file."""

from __future__ import annotations

import argparse

HELP = "pack, unpack or verify an evidence snapshot (recorded with --record / retrieval.record)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("pack", help="write snapshot folder DIR as one .tar.gz with a hash manifest")
    p.add_argument("dir")
    p.add_argument("archive")
    u = sub.add_parser("unpack", help="extract ARCHIVE into DIR and verify every hash")
    u.add_argument("archive")
    u.add_argument("dir")
    v = sub.add_parser("verify", help="check the hashes of a snapshot folder or archive")
    v.add_argument("path")


def run(args: argparse.Namespace) -> int:
    import sys

    from orig_local.retrieval.evidence import SnapshotError, pack, unpack, verify

    try:
        if args.action == "pack":
            print(pack(args.dir, args.archive))
        elif args.action == "unpack":
            store = unpack(args.archive, args.dir)
            print(f"unpacked and verified: {store.root}")
        else:
            problems = verify(args.path)
            for problem in problems:
                print(f"! {problem}", file=sys.stderr)
            print("ok" if not problems else f"{len(problems)} problem(s)")
            return 1 if problems else 0
    except (SnapshotError, FileNotFoundError) as exc:
        print(f"orig snapshot: {exc}", file=sys.stderr)
        return 1
    return 0
