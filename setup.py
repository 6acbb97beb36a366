"""Only what pyproject.toml cannot say (metadata lives there):

* the model catalogue lives in ``models/`` at the top of the repository (where a user reads and
  edits it) and is shipped inside the package as ``orig_local/models/`` (a package_dir mapping,
  not a copy);
* the loopback test web server (``orig_local/retrieval/testserver.py``, used by tests/ and
  benchmarks/ from a checkout) is left out of built wheels, so an install ships no test fixture.
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

NOT_SHIPPED = {("orig_local.retrieval", "testserver")}


class BuildPy(build_py):
    def find_package_modules(self, package, package_dir):
        return [m for m in super().find_package_modules(package, package_dir) if (m[0], m[1]) not in NOT_SHIPPED]


setup(
    packages=[*find_packages(include=["orig_local*"]), "orig_local.models"],
    package_dir={"orig_local.models": "models"},
    cmdclass={"build_py": BuildPy},
)
