"""`import orig_local` and `orig --help` must not import the heavy libraries."""

import subprocess
import sys

HEAVY = ("torch", "transformers", "diffusers", "vllm", "ddgs", "open_clip", "trafilatura")

CHECK = """
import sys
{stmt}
heavy = [m for m in {heavy!r} if m in sys.modules]
assert not heavy, heavy
"""


def _run(stmt):
    code = CHECK.format(stmt=stmt, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_import_is_light():
    _run("import orig_local, orig_local.config, orig_local.llm")


def test_cli_help_is_light():
    _run("from orig_local.cli import main\n"
         "try:\n    main(['--help'])\nexcept SystemExit:\n    pass")
