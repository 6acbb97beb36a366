"""`orig image "prompt" [--ref img.png ...] --preset qwen-image-edit`: generate one image directly.

No agent, no retrieval: the prompt (and reference images) go straight to the generator, as in
the Direct and Oracle conditions. Useful for trying a preset or debugging a prompt.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "generate one image from a prompt (and optional reference images) with a generator preset"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from orig_local.cli import add_config_arguments

    parser.add_argument("prompt", help="the text prompt")
    parser.add_argument("--ref", action="append", default=[], metavar="IMAGE",
                        help="reference image file, most informative first (repeatable)")
    parser.add_argument("--preset", "-p", help="generator preset (`orig models`) or hub id; default: generator.preset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--width", type=int)
    parser.add_argument("--height", type=int)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--guidance", type=float)
    parser.add_argument("--negative-prompt")
    parser.add_argument("--out", "-o", default="image.png", help="output file (default image.png); "
                        "the parameters are written beside it as <out>.json")
    add_config_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """0 image written; 1 the generator failed (one line, the error); 2 usage/config error;
    130 interrupted (cli.main)."""
    import sys

    from orig_local.cli import config_from_args
    from orig_local.configbase import ConfigError
    from orig_local.errors import OrigError
    from orig_local.generation import GenerationRequest, make_generator

    config = config_from_args(args)
    gen_config = config.generator
    if args.preset:
        gen_config = gen_config.model_copy(update={"preset": args.preset})
    missing = [r for r in args.ref if not Path(r).is_file()]
    if missing:
        raise ConfigError(f"reference image(s) not found: {', '.join(missing)}")
    generator = make_generator(gen_config, progress=config.progress)
    request = GenerationRequest(
        prompt=args.prompt, references=[Path(r) for r in args.ref], seed=args.seed, width=args.width,
        height=args.height, steps=args.steps, guidance=args.guidance, negative_prompt=args.negative_prompt,
    )
    out = Path(args.out)
    try:
        result = generator.generate(request)
        out.parent.mkdir(parents=True, exist_ok=True)
        result.image.save(out)
    except OrigError:
        raise
    except Exception as exc:  # the one item failed: say why on one line, exit 1
        print(f"orig image: FAILED: {type(exc).__name__}: {str(exc)[:500]}", file=sys.stderr)
        return 1
    record = {"prompt": args.prompt, "references": args.ref, "seconds": round(result.seconds, 3),
              "references_used": result.references_used, "notes": result.notes, "params": result.params}
    out.with_suffix(out.suffix + ".json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    for note in result.notes:
        print(f"note: {note}")
    print(f"{out} ({result.image.width}x{result.image.height}, {result.seconds:.1f} s, "
          f"{result.references_used} reference(s) used)")
    return 0
