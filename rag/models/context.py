"""How many tokens the chat model can read: `llm.context_window`, or less if the server says so.

A prompt longer than the window is refused by the server (llama.cpp: "you requested 2077
tokens"), so `rag.answer.context_fit` sizes the prompt to `context_window()`. Servers
say their window when they refuse a prompt (llama-cpp-python: "exceed context window of 2048"),
and some report it: llama.cpp's `/props` (`default_generation_settings.n_ctx`), Ollama's
`/api/show`. The server is asked only after a refusal (a question that fits costs no request),
with a short timeout; its figure is remembered per server and model.
"""

from __future__ import annotations

import re
import threading
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from rag.settings import LLMSettings

PROBE_TIMEOUT = 2.0  # seconds: a server that reports its window answers at once
OLLAMA_DEFAULT = 4096
_known: dict[tuple[str, str], int] = {}
_WINDOW_SAID = re.compile(
    r"(?:context window of|context size \(|maximum context length is|n_ctx[=: ]+)\s*(\d{3,7})",
    re.IGNORECASE,
)
_lock = threading.Lock()
_CONTEXT_ERROR = re.compile(
    r"context (?:length|window|size)|maximum context|too many tokens|requested \d+ tokens|"
    r"exceeds? (?:the )?(?:context|available)|n_ctx",
    re.IGNORECASE,
)


def context_window(settings: LLMSettings) -> int:
    """The window to size prompts to: the setting, or the server's figure once known."""
    with _lock:
        known = _known.get(_key(settings))
    return min(settings.context_window, known) if known else settings.context_window


def learn_window(settings: LLMSettings, error: Exception) -> int | None:
    """After a context-length refusal: the server's window, from its message or by asking it
    (remembered, so the next prompts fit at once). None when it does not say."""
    found = _window_in_message(str(error))
    if found is None and settings.base_url:
        found = server_window(settings.base_url, settings.model.partition(":")[2])
    if found:
        with _lock:
            _known[_key(settings)] = found
    return found


def _key(settings: LLMSettings) -> tuple[str, str]:
    return (settings.base_url or "", settings.model)


def _window_in_message(message: str) -> int | None:
    """ "... exceed context window of 2048 tokens" (llama-cpp-python), "context size (2048
    tokens)" (llama.cpp), "maximum context length is 8192 tokens" (OpenAI, vLLM)."""
    match = _WINDOW_SAID.search(message)
    return int(match.group(1)) if match else None


def server_window(base_url: str, model: str) -> int | None:
    """The context window the server at `base_url` reports, or None."""
    parts = urlsplit(base_url)
    root = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    try:
        with httpx.Client(timeout=PROBE_TIMEOUT) as client:
            props = client.get(f"{root}/props")
            if props.status_code == 200:
                found = _llama_cpp(props.json())
                if found:
                    return found
            show = client.post(f"{root}/api/show", json={"model": model})
            if show.status_code == 200:
                return _ollama(show.json())
    except (httpx.HTTPError, ValueError):
        return None
    return None


def _llama_cpp(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    for value in (settings.get("n_ctx") if isinstance(settings, dict) else None, body.get("n_ctx")):
        if isinstance(value, int) and value > 0:
            return value
    return None


def _ollama(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    parameters = body.get("parameters")
    if isinstance(parameters, str):
        match = re.search(r"^\s*num_ctx\s+(\d+)", parameters, re.MULTILINE)
        if match:
            return int(match.group(1))
    # Without num_ctx Ollama runs a model in its default window (4,096 tokens in 2025's
    # releases, 2,048 before), whatever length the model was trained for.
    trained = OLLAMA_DEFAULT
    info = body.get("model_info")
    if isinstance(info, dict):
        for name, value in info.items():
            if name.endswith(".context_length") and isinstance(value, int) and value > 0:
                trained = value
    return min(trained, OLLAMA_DEFAULT)


def is_context_error(error: Exception) -> bool:
    """A server's refusal of a prompt longer than its window (a 400 that says so)."""
    status = getattr(error, "status_code", None)
    if status is None:  # an error event inside a stream (llama.cpp's server): no HTTP status
        status = 400 if type(error).__name__ == "APIError" else None
    return status in (400, 413, 422, 500) and bool(_CONTEXT_ERROR.search(str(error)))


def forget() -> None:
    """Ask the servers again (a test, or a server restarted with another window)."""
    with _lock:
        _known.clear()
