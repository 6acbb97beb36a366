#!/usr/bin/env bash
# On demand (`make test-min`; downloads wheels, minutes): install orig_local with every declared
# LOWER bound pinned (transformers==5.0.0, diffusers==0.36.0, ...) in a fresh venv, then run the
# tiny-model tests. A failure means a declared minimum is false: raise it in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${MIN_VENV:-.venv-min}
PYTHON=${PYTHON:-python3}
$PYTHON -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# every "name>=X" of pyproject's dependencies and extras becomes "name==X"
"$VENV/bin/python" - > "$VENV/lower-bounds.txt" <<'PY'
import re, tomllib
data = tomllib.load(open("pyproject.toml", "rb"))["project"]
specs = list(data["dependencies"]) + [s for extra in data["optional-dependencies"].values() for s in extra]
pins = {}
for spec in specs:
    m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?>=([0-9][^,;\s]*)", spec.strip())
    if m:
        pins[m.group(1).lower()] = m.group(3)
print("\n".join(f"{k}=={v}" for k, v in sorted(pins.items())))
PY
cat "$VENV/lower-bounds.txt"
"$VENV/bin/pip" install -q -c "$VENV/lower-bounds.txt" -e '.[dev]'
"$VENV/bin/python" -m pytest -q -x tests/test_tiny_models.py tests/test_generation_tiny.py tests/test_llm_transformers.py
