# The two commands: `make run` (the app on the bundled corpus) and `make test` (the suite).
# Both install what they need into .venv/ first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
APP_PORT ?= 8501

.PHONY: run test install install-test browser index lint bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The CPU build of torch comes first, from the local wheel, so nothing pulls a CUDA build.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test browser

# Debian's Chromium for the browser test (Playwright drives it; it never downloads one).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

index: install
	@$(BIN)/rag stats >/dev/null 2>&1 || $(BIN)/rag ingest

run: index
	$(BIN)/streamlit run ui/app.py --server.port $(APP_PORT)

test: install-test
	$(BIN)/python -m pytest -q

# ruff, and mypy with the pydantic plugin (pyproject.toml).
lint: $(VENV)/.installed-test
	$(BIN)/ruff check rag ui tests bench
	$(BIN)/mypy rag ui
