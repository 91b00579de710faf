PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint bench clean browser

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==0.13.9
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/python -m lakestats.demo

# the browser test drives Debian's chromium (Playwright's own download is not used)
browser:
	@command -v chromium >/dev/null 2>&1 || { SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y chromium; }

test: setup browser
	$(BIN)/ruff check lakestats tests bench
	$(BIN)/lint-imports  # the layers contract in pyproject.toml: imports point down only
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python -m bench.analyze_tpch
	$(BIN)/python -m bench.lookup
	$(BIN)/python -m bench.reduce --incremental --scales 1,10
	$(BIN)/python -m bench.keep_factor

clean:
	rm -rf $(VENV) warehouse .pytest_cache
