"""The model path against the scripted OpenAI-protocol server (`srv`, tests/conftest.py):
settings that point at it. The modules that use it also take conftest's `assistant` (over the
seed index) and `no_model_env` (no key, model or learned context window carried in)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag.settings import Settings, with_overrides
from testkit.openai_server import OpenAIServer


def llm_settings(base: Settings, srv: OpenAIServer, **llm: Any) -> Settings:
    values = {"model": "openai:gpt-test", "base_url": srv.base_url, "max_retries": 0, **llm}
    return with_overrides(base, {"llm": values})


def user_text(request: Any) -> str:
    """The last message the server was sent (the question with its sources)."""
    return str(request.messages[-1]["content"])


def llm_config(folder: Path, srv: OpenAIServer) -> Path:
    """A config file for the CLI (`--config FILE`) whose model is the scripted server."""
    config = folder / "llm.toml"
    config.write_text(
        f'[llm]\nmodel = "openai:gpt-test"\nbase_url = "{srv.base_url}"\nmax_retries = 0\n'
    )
    return config
