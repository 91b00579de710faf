PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean browser docs docs-gen screenshots

setup: $(STAMP)

# --compile-bytecode and compileall: the first command does not compile every module it imports
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==0.13.9
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]'
	$(BIN)/python -m compileall -q lakestats
	touch $(STAMP)

demo: setup
	$(BIN)/python -m lakestats.demo

# the browser test drives Debian's chromium (Playwright's own download is not used)
browser:
	@command -v chromium >/dev/null 2>&1 || { SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y chromium; }

# the docs site (mkdocs.yml); --strict: a broken link or a missing page fails
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# rewrite docs/reference/ from the parser, config.py and options.py (a test compares them)
docs-gen: setup
	$(BIN)/python docs/gen_reference.py

# docs/screenshots/: a wide, a skewed and a time-series table, analyzed and captured
screenshots: setup browser
	$(BIN)/python docs/screenshots.py

test: setup browser
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(VENV)/site
	$(BIN)/ruff check lakestats tests bench docs
	$(BIN)/lint-imports  # the layers contract in pyproject.toml: imports point down only
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python -m bench.analyze_tpch
	$(BIN)/python -m bench.lookup
	$(BIN)/python -m bench.reduce --incremental --scales 1,10
	$(BIN)/python -m bench.keep_factor

clean:
	rm -rf $(VENV) warehouse .pytest_cache site
