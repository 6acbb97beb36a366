"""`orig models`: list the model presets in models/."""

from __future__ import annotations

HELP = "list model presets (models/*.yaml)"
ROLES = ("backbone", "judge", "generator", "embedder")


def add_arguments(parser) -> None:
    parser.add_argument("--role", help="only presets with this role (backbone, judge, generator, embedder)")


def run(args) -> int:
    from orig_local.errors import UsageError
    from orig_local.presets import list_presets, load_preset

    if args.role and args.role not in ROLES:
        raise UsageError(f"--role {args.role!r} is not a role; roles: {', '.join(ROLES)}")
    for name in list_presets():
        preset = load_preset(name)
        if args.role and args.role not in preset.role:
            continue
        mem = f"{preset.memory_gb:g} GB" if preset.memory_gb is not None else "?"
        print(f"{name:28s} {','.join(preset.role):18s} {mem:>8s}  {preset.hf_id}")
    return 0
