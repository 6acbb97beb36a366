"""Build hook only (metadata lives in pyproject.toml): the loopback test web server
(orig_local/retrieval/testserver.py, used by tests/ and benchmarks/ from a checkout) is left out
of built wheels, so an install ships no test fixture."""

from setuptools import setup
from setuptools.command.build_py import build_py

NOT_SHIPPED = {("orig_local.retrieval", "testserver")}


class BuildPy(build_py):
    def find_package_modules(self, package, package_dir):
        return [m for m in super().find_package_modules(package, package_dir) if (m[0], m[1]) not in NOT_SHIPPED]


setup(cmdclass={"build_py": BuildPy})
