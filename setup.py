"""Only what pyproject.toml cannot say: the model catalogue lives in ``models/`` at the top of
the repository (where a user reads and edits it) and is shipped inside the package as
``orig_local/models/`` (a package_dir mapping, not a copy)."""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["orig_local*"]), "orig_local.models"],
    package_dir={"orig_local.models": "models"},
)
