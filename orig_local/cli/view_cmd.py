"""`orig view RUN...`: a local, self-contained HTML page comparing runs item by item."""

from __future__ import annotations

HELP = "compare runs item by item in a local self-contained HTML viewer (images, P̂, verdicts, raw replies)"


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", help="run folders (orig eval --out ...)")
    parser.add_argument("--out", "-o", help="the HTML file (default: <run>/view.html for one run; required for several)")
    parser.add_argument("--judge-name", help="read judge-<name>.jsonl instead of judge.jsonl")
    parser.add_argument("--thumb", type=int, default=320,
                        help="thumbnail side in px embedded in the page (0: no pictures, smaller file)")
    parser.add_argument("--no-open", action="store_true", help="write the page only, do not open a browser")


def run(args) -> int:
    from orig_local.evaluation.viewer import write_viewer

    path = write_viewer(args.runs, args.out, judge_name=args.judge_name, thumb=args.thumb)
    print(f"viewer: {path}")
    if not args.no_open:
        import webbrowser

        if not webbrowser.open(path.resolve().as_uri()):
            print("(no browser found here: open the file above in one)")
    return 0
