#!/usr/bin/env python
"""Build every tiny random-weight model into the tiny-model folder (idempotent).

    python scripts/make_tiny_models.py [--out DIR] [--only clip,qwen2_5_vl,...] [--force]

Each model is built from a config with a fixed seed; a ``.complete`` marker makes reruns skip
what is already there. The folder defaults to ``$ORIG_TINY_DIR`` or ``~/.cache/orig_local/tiny-models``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orig_local.paths import tiny_models_dir  # noqa: E402
from orig_local.tiny.build import build_all  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, default=tiny_models_dir())
    parser.add_argument("--only", default="", help="comma-separated builder names")
    parser.add_argument("--force", action="store_true", help="rebuild even if present")
    args = parser.parse_args()
    only = [s for s in args.only.split(",") if s] or None
    for name, path in build_all(args.out, only=only, force=args.force).items():
        print(f"{name:14s} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
