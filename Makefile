# Two commands do all set-up on a fresh machine:
#   make demo   -- venv + install + tiny models + the main job, offline
#   make test   -- venv + install .[dev] + the test suite (slow/gpu tests excluded)
#   make lint   -- ruff (style, bugs, zip without strict=) + mypy on the whole package (CI runs it first)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
DEMO_OUT ?= out/demo
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1

.PHONY: venv install tiny-models demo demo-eval test test-all test-min lint bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

tiny-models: install
	$(PY) scripts/make_tiny_models.py

# The main job offline: chat round trip over a real server, the agent on one prompt (tiny
# backbone and a simulated one), then the 3-item mini benchmark through all eval phases and
# what differs between direct and orig. A short story (< 25 lines; tests/test_eval_demo.py);
# the scripts build missing tiny models themselves and say so.
demo: install
	$(PY) scripts/demo.py --out $(DEMO_OUT) --quiet
	$(PY) scripts/demo_eval.py --out $(DEMO_OUT)/eval --quiet

demo-eval: install
	$(PY) scripts/demo_eval.py --out $(DEMO_OUT)/eval

test: install
	$(PY) -m pytest -q

lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy

# the declared minimum versions, resolved in a fresh venv (on demand: downloads wheels)
test-min:
	bash scripts/check_min_versions.sh

test-all: install
	$(PY) -m pytest -q -m "" 

bench: install
	for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf out .pytest_cache
