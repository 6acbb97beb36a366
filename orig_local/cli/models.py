"""`orig models`: list the model presets (models/, and $ORIG_MODELS_DIR's files over them)."""

from __future__ import annotations

HELP = "list model presets (hub id, revision, gated, memory)"
ROLES = ("backbone", "judge", "generator", "embedder")


def add_arguments(parser) -> None:
    parser.add_argument("--role", help="only presets with this role (backbone, judge, generator, embedder)")


def run(args) -> int:
    from orig_local.errors import UsageError
    from orig_local.paths import PRESETS_DIR, user_models_dir
    from orig_local.presets import list_presets, load_preset, preset_path

    if args.role and args.role not in ROLES:
        raise UsageError(f"--role {args.role!r} is not a role; roles: {', '.join(ROLES)}")
    mine = user_models_dir()
    rows = [load_preset(name) for name in list_presets()]
    rows = [p for p in rows if not args.role or args.role in p.role]
    if rows:
        # gated: the hub asks to accept a licence; downloads need HF_TOKEN or `huggingface-cli login`
        print(f"{'preset':28s} {'role':18s} {'memory':>8s}  {'gated':5s}  hub id [@revision]")
    for preset in rows:
        mem = f"{preset.memory_gb:g} GB" if preset.memory_gb is not None else "?"
        gated = "yes" if preset.gated else "-"
        rev = f"@{preset.revision}" if preset.revision else ""
        own = "  [yours]" if mine is not None and preset_path(preset.name) == mine / f"{preset.name}.yaml" else ""
        print(f"{preset.name:28s} {','.join(preset.role):18s} {mem:>8s}  {gated:5s}  {preset.hf_id}{rev}{own}")
    if mine is not None:
        print(f"[yours]: read from $ORIG_MODELS_DIR={mine}; the others from {PRESETS_DIR}")
    if any(p.gated for p in rows):
        print("gated models need a hub token: export HF_TOKEN=... or run `huggingface-cli login`")
    return 0
