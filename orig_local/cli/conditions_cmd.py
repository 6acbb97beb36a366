"""`orig conditions`: the conditions (orig_local/conditions.py) and what each one needs.

Scripts branch on a condition's properties through this command instead of on its name, so a
new condition is one entry in CONDITIONS and no script edit: ``scripts/slurm_eval.sh`` asks
``orig conditions $CONDITION --get uses_backbone`` before serving a backbone.
"""

from __future__ import annotations

HELP = "list the conditions and what each needs (backbone, retrieval, gold evidence)"
FIELDS = ("uses_backbone", "retrieves", "needs_oracle", "enhances", "modalities", "description")


def add_arguments(parser) -> None:
    parser.add_argument("name", nargs="?", help="one condition only")
    parser.add_argument("--json", action="store_true", help="print JSON: an object per condition, keyed by name")
    parser.add_argument("--get", choices=FIELDS, metavar="FIELD",
                        help=f"with NAME: print one property ({', '.join(FIELDS)}); booleans as true/false, "
                             "modalities comma-separated (for shell scripts)")


def describe(spec) -> dict:
    """A condition's properties as JSON-ready values (``retrieves`` included: it is derived)."""
    return {"name": spec.name, "description": spec.description, "uses_backbone": spec.uses_backbone,
            "retrieves": spec.retrieves, "modalities": list(spec.modalities),
            "needs_oracle": spec.needs_oracle, "enhances": spec.enhances}


def _shell_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def run(args) -> int:
    import json

    from orig_local.conditions import CONDITIONS, condition
    from orig_local.errors import UsageError

    if args.get and not args.name:
        raise UsageError("--get needs a condition name", hint=f"orig conditions orig --get {args.get}")
    specs = [condition(args.name)] if args.name else list(CONDITIONS.values())
    rows = [describe(spec) for spec in specs]
    if args.get:
        print(_shell_value(rows[0][args.get]))
    elif args.json:
        print(json.dumps({row["name"]: row for row in rows}, indent=2))
    else:
        yes = {True: "yes", False: "-"}
        print(f"{'condition':16s} {'backbone':8s} {'retrieves':11s} {'gold':4s}  description")
        for row in rows:
            print(f"{row['name']:16s} {yes[row['uses_backbone']]:8s} {','.join(row['modalities']) or '-':11s} "
                  f"{yes[row['needs_oracle']]:4s}  {row['description']}")
    return 0
