"""`orig corpus build DIR`: index a local corpus (BM25 + CLIP image embeddings) once."""

from __future__ import annotations

import argparse

HELP = "index a local corpus folder for the `local` search backend"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from orig_local.cli import add_config_arguments

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = sub.add_parser("build", help="build (or load) the index of a corpus folder")
    build.add_argument("dir", nargs="?", help="corpus folder (docs.jsonl/images.jsonl or loose files); "
                                              "default: the packaged demo corpus")
    build.add_argument("--index-dir", help="where to save the index (default: DIR/.index)")
    build.add_argument("--no-images", action="store_true", help="text only: no CLIP model")
    add_config_arguments(build)


def run(args: argparse.Namespace) -> int:
    import time

    from orig_local.cli import config_from_args
    from orig_local.retrieval.backends.local import LocalBackend
    from orig_local.retrieval.corpus import Corpus

    config = config_from_args(args)
    local = config.retrieval.local.model_copy(update={
        "corpus": args.dir or config.retrieval.local.corpus,
        "index_dir": args.index_dir or config.retrieval.local.index_dir,
        "images": config.retrieval.local.images and not args.no_images,
    })
    start = time.monotonic()
    try:
        corpus = Corpus.load(local.corpus)
    except FileNotFoundError as exc:
        from orig_local.errors import DataError

        raise DataError(str(exc), hint="pass a folder with docs.jsonl/images.jsonl or loose files") from exc
    backend = LocalBackend(corpus, local, embedder=config.embed if local.images else None,
                           cache_dir=config.resolved_cache_dir())
    try:
        index = backend.build()
    except (FileNotFoundError, ImportError) as exc:
        import sys

        print(f"orig corpus: {exc}\n(tiny models: python scripts/make_tiny_models.py)", file=sys.stderr)
        return 2
    clip = index.clip_embeddings()
    where = index.dir if index.dir is not None else "(memory only: no writable place to save)"
    print(f"corpus {corpus.root}: {len(corpus.docs)} documents, {len(corpus.images)} images; "
          f"CLIP {f'{clip.shape[0]} x {clip.shape[1]}' if clip is not None else 'off'}; index {where}; "
          f"{time.monotonic() - start:.1f} s")
    return 0
