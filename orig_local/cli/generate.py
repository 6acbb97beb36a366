"""`orig generate "prompt"`: run the agent on one prompt and write its output folder."""

from __future__ import annotations

HELP = "run ORIG (or a baseline/ablation) on one prompt and write image, prompt, references, trace"

# Exit status: 0 the condition ran (ok, or degraded: some replies invalid, said on stderr);
# 1 it failed (backbone unreachable, loop stopped on an error, generator raised: the output is a
# fallback such as the raw prompt) unless --allow-degraded; 2 usage/config error; 130 interrupted.


def add_arguments(parser) -> None:
    from orig_local.cli import add_config_arguments
    from orig_local.conditions import standalone_conditions

    parser.add_argument("prompt", help="the text prompt, e.g. \"Tesla Optimus shaking hands with Unitree G1\"")
    parser.add_argument("--condition", choices=standalone_conditions(),
                        help="shortcut for --set agent.condition=... (oracle needs a benchmark item: use `orig eval`)")
    parser.add_argument("--out", "-o", default=None,
                        help="output folder (default: runs/generate/<timestamp>-<prompt words>)")
    parser.add_argument("--allow-degraded", action="store_true",
                        help="exit 0 even when the condition failed and a fallback (e.g. the raw prompt) was used")
    add_config_arguments(parser)


def _default_out(prompt: str) -> str:
    import re
    import time

    slug = "-".join(re.findall(r"[a-z0-9]+", prompt.lower())[:6]) or "prompt"
    return f"runs/generate/{time.strftime('%Y%m%d-%H%M%S')}-{slug}"


def _preflight(config) -> None:
    """Like ``orig eval``: a served backbone that is down, or an unknown generator preset, fails
    in seconds with the fix named (PreflightError, exit 2) instead of after every retry."""
    from orig_local.evaluation.preflight import check_chat_server

    if config.agent.spec.uses_backbone:
        check_chat_server("backbone", config.backbone)
    if config.generator.preset:
        from orig_local.presets import load_preset

        load_preset(config.generator.preset)  # ConfigError listing the known presets


def _models(config) -> str:
    """What is about to load, stand-ins named as such."""
    backbone = config.backbone
    name = backbone.preset or backbone.model or "?"
    if backbone.backend in ("simulated", "scripted"):
        name = f"the {backbone.backend.upper()} backbone (a stand-in, not a model)"
    gen = config.generator.preset or config.generator.model
    return f"backbone {name}" + (f", generator {gen}" if gen else ", no generator")


def run(args) -> int:
    import sys

    from orig_local.agent.factory import run_agent
    from orig_local.cli import config_from_args

    if args.condition:
        args.overrides = list(args.overrides) + [f"agent.condition={args.condition}"]
    config = config_from_args(args)
    _preflight(config)
    out = args.out or _default_out(args.prompt)
    lines = None
    if config.progress:  # --quiet: none
        from orig_local.cli.progress import StageLines

        lines = StageLines()
        lines.say(f"condition {config.agent.condition}: loading {_models(config)}")
    result = run_agent(args.prompt, config=config, out_dir=out, progress=lines)
    if lines is not None:
        lines.say(f"done: {result.status}")
    print(result.final_prompt)
    print(f"\nwrote {out}/ (trace.html, trace.json, prompt.txt"
          + (", image.png" if result.image is not None else "")
          + f", {len(result.references)} reference image(s))")
    # Where the image is, or why there is none (a missing image must not pass unnoticed).
    if result.image is not None:
        print(f"image: {out}/image.png")
    elif config.generator.preset or config.generator.model:
        print("image: none - the generator failed (its error is in trace.html)", file=sys.stderr)
    else:
        print("image: none - no generator configured (-s generator.preset=NAME; `orig models --role generator`)",
              file=sys.stderr)
    print(f"condition={result.condition} status={result.status} stop={result.stop_reason} rounds={result.rounds} "
          f"stage errors={len(result.trace.errors())}" + (f" error={result.error}" if result.error else ""))
    for note in result.notes:
        print(f"note: {note}")
    if result.status == "failed":
        fallback = "the output is a fallback, not the condition's result"
        print(f"orig generate: FAILED: {result.failure}; {fallback}"
              + ("" if args.allow_degraded else " (--allow-degraded accepts it)"), file=sys.stderr)
        return 0 if args.allow_degraded else 1
    if result.status == "degraded":
        print(f"orig generate: degraded: {result.failure}", file=sys.stderr)
    return 0
