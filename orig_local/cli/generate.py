"""`orig generate "prompt"`: run the agent on one prompt and write its output folder."""

from __future__ import annotations

HELP = "run ORIG (or a baseline/ablation) on one prompt and write image, prompt, references, trace"


def add_arguments(parser) -> None:
    from orig_local.cli import add_config_arguments

    parser.add_argument("prompt", help="the text prompt, e.g. \"Tesla Optimus shaking hands with Unitree G1\"")
    parser.add_argument("--condition", choices=["direct", "prompt_enhanced", "orig", "orig_txt", "orig_img"],
                        help="shortcut for --set agent.condition=... (oracle needs a benchmark item: use `orig eval`)")
    parser.add_argument("--out", "-o", default=None,
                        help="output folder (default: runs/generate/<timestamp>-<prompt words>)")
    add_config_arguments(parser)


def _default_out(prompt: str) -> str:
    import re
    import time

    slug = "-".join(re.findall(r"[a-z0-9]+", prompt.lower())[:6]) or "prompt"
    return f"runs/generate/{time.strftime('%Y%m%d-%H%M%S')}-{slug}"


def run(args) -> int:
    from orig_local.agent.factory import run_agent
    from orig_local.cli import config_from_args

    if args.condition:
        args.overrides = list(args.overrides) + [f"agent.condition={args.condition}"]
    config = config_from_args(args)
    out = args.out or _default_out(args.prompt)
    result = run_agent(args.prompt, config=config, out_dir=out)
    print(result.final_prompt)
    print(f"\nwrote {out}/ (trace.html, trace.json, prompt.txt"
          + (", image.png" if result.image is not None else "")
          + f", {len(result.references)} reference image(s))")
    print(f"condition={result.condition} stop={result.stop_reason} rounds={result.rounds} "
          f"stage errors={len(result.trace.errors())}" + (f" error={result.error}" if result.error else ""))
    for note in result.notes:
        print(f"note: {note}")
    return 1 if result.error else 0
