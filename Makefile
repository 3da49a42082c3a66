# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall when the project's metadata changes. torch is optional (comparison tests skip
# without it): install it only from a wheel already on this machine, never a multi-GB download.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	-$(PY) -m pip install -q --no-index --no-deps torch==2.13.0 && $(PY) -m pip install -q torch==2.13.0 \
	  || echo "torch is not available here: the torch comparison tests will skip"
	touch $(STAMP)

# The warm-up compiles (or loads) the SVD kernels with progress shown, instead of a long
# silent first SVD.
demo: $(STAMP)
	$(PY) -m minigrad.warmup
	$(PY) examples/demo.py

# CI runs this: the lint first (ruff, and mypy on the typed core), then the suite.
test: $(STAMP)
	$(PY) -m ruff check minigrad tests examples benchmarks conftest.py
	$(PY) -m mypy
	$(PY) -m minigrad.warmup
	$(PY) -m pytest

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

lint: $(STAMP)
	$(PY) -m ruff check minigrad tests examples benchmarks conftest.py
	$(PY) -m mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
