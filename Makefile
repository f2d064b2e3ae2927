# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: setup run test bench lint typecheck screenshots demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

## open the terminal app on a freshly generated demo pair
run: $(STAMP)
	$(VENV)/bin/dumptui --demo

## the test suite (stands alone: it generates what it needs; ../shared/fixtures are used when present)
test: $(STAMP)
	$(PY) -m pytest -q

## benchmarks with figures (see bench/README.md)
bench: $(STAMP)
	$(PY) bench/bench.py
	$(PY) bench/bench_tui.py

lint: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check ruff
	$(VENV)/bin/ruff check dumptui tests bench

## the presentation model and the pairing options are fully typed (the engine's modules are read, not checked)
typecheck: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check mypy
	$(VENV)/bin/mypy --disallow-untyped-defs --ignore-missing-imports --follow-imports=silent dumptui/present dumptui/pairing.py

## regenerate screenshots/*.svg for the README
screenshots: $(STAMP)
	$(PY) tools/screenshots.py

## write a demo pair to ./demo (dumptui demo/ref demo/target)
demo: $(STAMP)
	$(VENV)/bin/dumptui demo demo

clean:
	rm -rf $(VENV) demo bench/out .pytest_cache
