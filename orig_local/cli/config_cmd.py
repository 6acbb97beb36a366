"""`orig config`: print the resolved config (defaults + files + overrides) as YAML."""

from __future__ import annotations

HELP = "print the resolved config as YAML"


def add_arguments(parser) -> None:
    from orig_local.cli import add_config_arguments

    add_config_arguments(parser)


def run(args) -> int:
    import yaml

    from orig_local.cli import config_from_args

    config = config_from_args(args)
    print(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False), end="")
    return 0
