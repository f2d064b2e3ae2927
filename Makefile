# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: setup run test test-fast fuzz check bench lint typecheck imports screenshots demo clean install-check test-matrix docs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	# in a git checkout, commit messages are checked: subject <= 72 characters, blank line, body
	if git rev-parse --git-dir > /dev/null 2>&1; then git config core.hooksPath .githooks; fi
	touch $(STAMP)

setup: $(STAMP)

## open the terminal app on a freshly generated demo pair
run: $(STAMP)
	$(VENV)/bin/dumptui --demo

## the habits (format, lint, types, layers), then the test suite (it stands alone: it generates what it
## needs; ../shared/fixtures are used when present). --dist loadfile keeps a module on one worker, so its
## module fixtures (generated pairs, shared worker pools) are made once: --dist worksteal took 3-8 % more
## CPU on tests/report, cli, options and three app modules, and no less time (2 runs each, 2 cores, load 4-10)
test: check
	$(PY) -m pytest -q -n auto --dist loadfile

## the inner loop: the engine, the presenter and the reports in-process (no subprocess, no Pilot, no fuzz,
## nothing slow), in under a minute
test-fast: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadfile -m "not slow and not subprocess and not pilot and not fuzz"

## the fuzz suite's long mode: FUZZ_EXAMPLES per target (make test runs a few hundred), fresh random damage each
## run, failing examples kept in .hypothesis/; ends with a report of the classes of damage tried and outcomes
FUZZ_EXAMPLES ?= 5000
fuzz: $(STAMP)
	DUMPTUI_FUZZ=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider tests/fuzz

## format and import order, lint, mypy on the whole package, the import-layer contracts
check: lint typecheck imports

## the speed goals against their numpy floors (docs/speed.md), then the detailed benchmarks
bench: $(STAMP)
	$(PY) bench/speed.py
	$(PY) bench/bench.py
	$(PY) bench/bench_tui.py
	$(PY) bench/bench_memory.py
	$(PY) bench/bench_scale.py

lint: $(STAMP)
	$(VENV)/bin/ruff format --check dumptui tests bench tools
	$(VENV)/bin/ruff check dumptui tests bench tools

## the whole package: no untyped def, no unchecked None; dumptui/core and dumptui/present held to --strict
## (the override section of pyproject.toml [tool.mypy])
typecheck: $(STAMP)
	$(VENV)/bin/mypy dumptui

## the layer contracts of pyproject.toml ([tool.importlinter])
imports: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache

## build the wheel, install it in a clean venv, with pipx and with uv, and run the demo from each
install-check:
	PYTHON=$(PYTHON) tools/install_check.sh

## the test suite under every Python 3.10-3.13 on this machine (at least the lowest and the newest)
test-matrix:
	tools/test_matrix.sh

## regenerate screenshots/*.svg and *.png for the README (tools/screenshots.py)
screenshots: $(STAMP)
	$(PY) tools/screenshots.py

## write a demo pair to ./demo (dumptui demo/ref demo/target)
demo: $(STAMP)
	$(VENV)/bin/dumptui demo demo

clean:
	rm -rf $(VENV) .venv-py3.* demo bench/out .pytest_cache

## what is written from the code: the man page (from the parsers), the JSON schema's metrics (from the table),
## docs/keys.md's key tables (from the key table and the widgets' bindings)
docs: $(STAMP)
	$(PY) -m dumptui.cli.manpage > docs/dumptui.1
	$(PY) -m dumptui.report.schemagen
	$(PY) -m dumptui.tui.keydoc
