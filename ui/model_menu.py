"""The sidebar's model menu: the configured model, then the model presets of config/ that can run.

    model_choices(settings, os.environ)
    -> [ModelChoice("configured", "openai:gpt-4o-mini"), ModelChoice("offline", ...), ...]

A preset is a model preset when it sets only `[llm]` (offline.toml, openai.toml,
local-server.toml); one whose server does not accept a connection is marked unavailable. One
that needs an API key is offered only when the key's variable is set; the key itself is never
read here. Choosing one replaces the configured `[llm]` model and server
and keeps the rest (timeouts, retries), so settings still come from config files.
"""

from __future__ import annotations

import socket
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag import chat_model_name, display_url
from rag.errors import ConfigError
from rag.settings import Settings, preset_names, resolve_config_path, with_overrides
from rag.types import OFFLINE_MODEL

CONFIGURED = "configured"
PROBE_SECONDS = 0.5  # a server on this machine answers a connection at once
PROBE_KEPT = 30.0  # seconds a probe's result is reused (the menu is drawn on every rerun)
_probed: dict[str, tuple[float, bool]] = {}


@dataclass(frozen=True)
class ModelChoice:
    key: str  # "configured" or a preset name
    label: str  # what the menu shows: model and server, never a secret
    settings: Settings
    # Why it cannot answer now (its server does not answer), said in full under the menu
    # when it is chosen: a menu entry is cut to the sidebar's width (issue 31).
    unavailable: str = ""


def model_label(settings: Settings) -> str:
    """`provider:model`, `at HOST` for a server (without `user:password@`)."""
    model = chat_model_name(settings.llm)
    if model == OFFLINE_MODEL:
        return "Offline: quoted extracts"
    server = display_url(settings.llm.base_url or "")
    return f"{model} at {server}" if server else model


def server_answers(base_url: str) -> bool:
    """Whether anything accepts a connection at `base_url`'s host and port (a short probe)."""
    from urllib.parse import urlsplit

    now = time.monotonic()
    kept = _probed.get(base_url)
    if kept is not None and now - kept[0] < PROBE_KEPT:
        return kept[1]
    url = urlsplit(base_url)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=PROBE_SECONDS):
            answers = True
    except (OSError, ValueError):
        answers = False
    _probed[base_url] = (now, answers)
    return answers


def _llm_preset(name: str) -> dict[str, Any] | None:
    """The `[llm]` table of preset `name` when it sets nothing else."""
    try:
        with resolve_config_path(name).open("rb") as f:
            table = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    llm = table.get("llm")
    if set(table) != {"llm"} or not isinstance(llm, dict):
        return None
    return llm


def model_choices(settings: Settings, environ: Mapping[str, str]) -> list[ModelChoice]:
    """The configured model first, then each model preset that differs from it and can run."""
    choices = [ModelChoice(CONFIGURED, model_label(settings), settings)]
    seen = {choices[0].label}
    for name in preset_names():
        llm = _llm_preset(name)
        if llm is None:
            continue
        try:
            # The preset's server replaces the configured one (None when it names none).
            chosen = with_overrides(
                settings, {"llm": {"base_url": None, **llm}}, source=f"preset {name}"
            )
        except ConfigError:
            continue
        model = chat_model_name(chosen.llm)
        needs_key = model != OFFLINE_MODEL and not chosen.llm.base_url
        if needs_key and not environ.get(chosen.llm.api_key_env, "").strip():
            continue
        label = model_label(chosen)
        why = ""
        if chosen.llm.base_url and not server_answers(chosen.llm.base_url):
            label = f"Unavailable: {label}"  # first, so a cut entry still says it
            server = display_url(chosen.llm.base_url)
            why = (
                f"{model} is unavailable: its server at {server} does not answer, so questions "
                "would fail. Start the server, or choose another model."
            )
        if label not in seen:
            seen.add(label)
            choices.append(ModelChoice(name, label, chosen, why))
    return choices
