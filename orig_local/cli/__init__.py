"""The ``orig`` command: a thin layer over library functions.

Each subcommand is one module in this package with ``help``, ``add_arguments(parser)`` and
``run(args) -> int``. Modules import nothing heavy at top level, so ``orig --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# name -> module; a new subcommand is a new file plus one line here.
COMMANDS = {
    "config": "orig_local.cli.config_cmd",
    "models": "orig_local.cli.models",
    "search": "orig_local.cli.search",
    "corpus": "orig_local.cli.corpus_cmd",
    "snapshot": "orig_local.cli.snapshot_cmd",
    "generate": "orig_local.cli.generate",
    "eval": "orig_local.cli.eval_cmd",
    "merge": "orig_local.cli.merge_cmd",
    "report": "orig_local.cli.report_cmd",
    "agreement": "orig_local.cli.agreement_cmd",
    "serve": "orig_local.cli.serve",
    "chat": "orig_local.cli.chat",
    "image": "orig_local.cli.image",
    "study": "orig_local.cli.study_cmd",
}


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The config options every run-type subcommand accepts."""
    parser.add_argument("--config", "-c", action="append", default=[],
                        help="YAML config file or packaged config name (repeatable; later wins)")
    parser.add_argument("--set", "-s", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override one config value, e.g. backbone.preset=qwen2.5-vl-32b")
    parser.add_argument("--offline", action="store_true",
                        help="use the offline preset: tiny local models + bundled demo corpus, no network")


def config_from_args(args: argparse.Namespace):
    from orig_local.config import load_config

    paths = (["offline"] if getattr(args, "offline", False) else []) + list(args.config)
    config = load_config(paths, args.overrides)
    if getattr(args, "quiet", False):
        config.progress = False
    return config


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orig", description="ORIG, local and open: retrieval-augmented factual image generation.")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    parser.add_argument("--quiet", "-q", action="store_true", help="no logs below WARNING, no progress bars")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    level = "WARNING" if args.quiet else args.log_level.upper()
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from orig_local.configbase import ConfigError
    from orig_local.errors import OrigError

    try:
        return int(args._run(args) or 0)
    except ConfigError as exc:
        print(f"orig: config error: {exc}", file=sys.stderr)
        return 2
    except OrigError as exc:  # user-fixable: one line, no traceback
        print(f"orig: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
