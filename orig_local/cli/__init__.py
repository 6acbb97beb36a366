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
    "conditions": "orig_local.cli.conditions_cmd",
    "search": "orig_local.cli.search",
    "corpus": "orig_local.cli.corpus_cmd",
    "snapshot": "orig_local.cli.snapshot_cmd",
    "generate": "orig_local.cli.generate",
    "eval": "orig_local.cli.eval_cmd",
    "merge": "orig_local.cli.merge_cmd",
    "report": "orig_local.cli.report_cmd",
    "view": "orig_local.cli.view_cmd",
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
                        help="use the offline preset: bundled demo corpus, SIMULATED backbone, tiny local models, no network")
    parser.add_argument("--tiny-backbone", action="store_true",
                        help="with --offline: the tiny random-weight Qwen2.5-VL as backbone instead of the simulated "
                             "stand-in (its replies fail every schema: shows the failure path)")


def config_from_args(args: argparse.Namespace):
    from orig_local.config import load_config

    paths = (["offline"] if getattr(args, "offline", False) else []) + list(args.config)
    overrides = list(args.overrides)
    if getattr(args, "tiny_backbone", False):  # before the user's --set, which wins
        overrides.insert(0, "backbone.backend=transformers")
    config = load_config(paths, overrides)
    if getattr(args, "quiet", False):
        config.progress = False
    return config


def _global_options(parser: argparse.ArgumentParser, top: bool) -> None:
    """Options accepted before or after the subcommand (``orig --quiet eval`` and ``orig eval
    --quiet``). On subcommands they default to SUPPRESS, so a value given before the
    subcommand is not reset by the subparser."""
    d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
    parser.add_argument("--log-level", default=d("INFO"), help="DEBUG, INFO, WARNING, ERROR (DEBUG also shows tracebacks)")
    parser.add_argument("--quiet", "-q", action="store_true", default=d(False),
                        help="no logs below WARNING, no progress bars")
    parser.add_argument("--debug", action="store_true", default=d(False),
                        help="show the full traceback of an error")


def library_root_chatter(record: logging.LogRecord) -> bool:
    """Logging filter: drop INFO and below sent to the *root* logger. Our code logs through named
    loggers; libraries that log through the root (open_clip: eleven ``INFO root`` lines per
    model load) would bury the progress lines. Warnings pass; ``--log-level DEBUG`` shows all."""
    return not (record.name == "root" and record.levelno < logging.WARNING)


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake on one line (what is wrong, and where help is) instead of
    the usage block; subcommand parsers inherit it."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _version() -> str:
    from orig_local.provenance import package_version

    return package_version()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="orig", description="ORIG, local and open: retrieval-augmented factual image generation.")
    _global_options(parser, top=True)
    parser.add_argument("--version", action="version", version=f"orig {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        _global_options(p, top=False)
        p.set_defaults(_run=module.run)
    return parser


INTERRUPTED = "orig: interrupted — rerun the same command to resume"
OUT_OF_MEMORY = ("orig: error: out of memory (select fewer runs or items with --ids/--classes, or use a machine "
                 "with more memory; finished rows on disk are intact and a rerun resumes)")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _user_error(exc: BaseException) -> str | None:
    """The one-line message for an error a user can fix that is not (yet) an OrigError;
    None for anything else (a bug: it keeps its traceback)."""
    from orig_local.loaderrors import model_not_cached

    cached = model_not_cached(exc)
    if cached is not None:
        return cached.one_line()
    import errno
    import json

    if isinstance(exc, OSError) and exc.filename and exc.strerror:  # disk full, permissions...
        return f"{exc.strerror}: {exc.filename} (fix it and rerun the same command; --debug shows where it happened)"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO):
        # a write on an open file names no file: still the disk's fault, not a bug
        return f"{exc.strerror or exc} (free space and rerun the same command; --debug shows where it happened)"
    if isinstance(exc, json.JSONDecodeError):  # a corrupt file read without a friendlier check
        path = _file_in_traceback(exc)
        return f"{path or 'a JSON file'} is not valid JSON ({_one_line(exc)}) (fix or remove the file; --debug shows where it was read)"
    return None


def _file_in_traceback(exc: BaseException) -> str | None:
    """The JSON file the failing code was reading: a ``.json``/``.jsonl`` path held by a local
    variable of the innermost frame that has one."""
    import os
    from pathlib import PurePath

    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            if isinstance(value, (str, PurePath)) and str(value).endswith((".json", ".jsonl")) \
                    and len(str(value)) < 4096 and os.path.isfile(value):
                return str(value)
    return None


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # during imports or argument parsing (the run has its own)
        print(INTERRUPTED, file=sys.stderr)
        return 130


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    level = "WARNING" if args.quiet else args.log_level.upper()
    debug = args.debug or level == "DEBUG"
    try:
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    except ValueError:
        print(f"orig: error: --log-level {args.log_level!r}: use DEBUG, INFO, WARNING or ERROR", file=sys.stderr)
        return 2
    if level != "DEBUG":
        for handler in logging.getLogger().handlers:
            handler.addFilter(library_root_chatter)
    from orig_local.configbase import ConfigError
    from orig_local.errors import OrigError

    try:
        return int(args._run(args) or 0)
    except KeyboardInterrupt:
        return _fail(INTERRUPTED, 130, debug)
    except ConfigError as exc:
        return _fail(f"orig: config error: {exc.one_line()}", 2, debug)
    except OrigError as exc:  # user-fixable: one line, no traceback
        return _fail(f"orig: error: {exc.one_line()}", exc.exit_code, debug)
    except MemoryError:
        # nothing here may allocate much: building a message (or importing) would raise again
        return _fail(OUT_OF_MEMORY, 1, debug)
    except Exception as exc:
        message = _user_error(exc)
        if message is None:
            raise  # a bug: keep the traceback
        return _fail(f"orig: error: {message}", 2, debug)


def _fail(line: str, code: int, debug: bool) -> int:
    """One line on stderr (after the traceback with ``--debug`` / ``--log-level debug``)."""
    if debug:
        import traceback

        traceback.print_exc()
    print(line, file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
