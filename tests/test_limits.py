"""Limits that are real: every numeric option and setting has bounds, and config garbage is
one line naming where it came from (exit 2 in the CLI, the app's own error box in the page).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from streamlit.testing.v1 import AppTest

from rag.cli.main import main
from rag.errors import ConfigError
from rag.retrieval.retriever import open_retriever
from rag.settings import MAX_K, Settings, get_settings
from tests.helpers import plain

APP = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
NUMERIC = (int, float)


def numeric_fields() -> list[tuple[str, str, Any]]:
    """(section, key, field) of every number in the settings."""
    found = []
    for section, info in Settings.model_fields.items():
        model = info.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        for key, field in model.model_fields.items():
            if field.annotation in NUMERIC:
                found.append((section, key, field))
    return found


def bounds(field: Any) -> tuple[float | None, float | None]:
    low = high = None
    for rule in field.metadata:
        low = getattr(rule, "ge", None) if getattr(rule, "ge", None) is not None else low
        low = getattr(rule, "gt", None) if getattr(rule, "gt", None) is not None else low
        high = getattr(rule, "le", None) if getattr(rule, "le", None) is not None else high
        high = getattr(rule, "lt", None) if getattr(rule, "lt", None) is not None else high
    return low, high


def test_every_numeric_setting_has_both_bounds() -> None:
    fields = numeric_fields()
    assert len(fields) >= 12  # the walk finds the settings it is meant to check
    missing = [f"{s}.{k}" for s, k, f in fields if None in bounds(f)]
    assert not missing, f"numeric settings without a lower and an upper bound: {missing}"


@pytest.mark.parametrize(("section", "key", "field"), numeric_fields())
def test_out_of_bounds_nan_and_inf_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, section: str, key: str, field: Any
) -> None:
    name = f"RAG_{section.upper()}__{key.upper()}"
    low, high = bounds(field)
    assert low is not None and high is not None
    garbage = [str(low - 1), str(high + 1)]
    if field.annotation is float:
        garbage += ["nan", "inf", "-inf"]
    for value in garbage:
        monkeypatch.setenv(name, value)
        with pytest.raises(ConfigError) as e:
            get_settings()
        message = str(e.value)
        assert message.startswith(f"{name}: {section}.{key}: "), message
        assert "\n" not in message


@pytest.mark.parametrize("k", ["-1", "0", str(MAX_K + 1)])
def test_rag_search_k_out_of_bounds_is_one_line_and_exit_2(
    k: str, seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(seed_settings.store.index_dir)
    code = main(["search", "graph neural networks", "--k", k, "--index", index])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: --k: retrieval.k: Input should be ")
    assert err.count("\n") == 1


def test_rag_search_k_in_bounds_returns_that_many(
    seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(seed_settings.store.index_dir)
    assert main(["search", "graph neural networks", "--k", "2", "--index", index]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line[:2] in ("1.", "2.")]
    assert len(lines) == 2


def test_the_library_refuses_a_k_out_of_bounds(seed_settings: Settings, embeddings: Any) -> None:
    retriever = open_retriever(seed_settings, embeddings)
    for k in (-1, 0, MAX_K + 1, True, 2.5):
        with pytest.raises(ValueError, match="ask for 1 to 50 papers"):
            retriever.search("graph neural networks", k=k)
    assert len(retriever.search("graph neural networks", k=3)) == 3


# Config garbage ---------------------------------------------------------------------------


def garbage_cases(tmp_path: Path) -> list[tuple[dict[str, str], list[str], str]]:
    """(environment, extra CLI arguments, the start of the one-line message)."""
    bad_utf8 = tmp_path / "bad.toml"
    bad_utf8.write_bytes(b"[llm]\nmodel = 'caf\xe9'\n")
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    return [
        ({"RAG_CORPUS": "notjson"}, [], "RAG_CORPUS: not valid JSON"),
        ({"RAG_LLM": "{bad"}, [], "RAG_LLM: not valid JSON"),
        ({"RAG_LLM": "[1]"}, [], "RAG_LLM: llm: Input should be a valid dictionary"),
        ({}, ["--config", str(bad_utf8)], f"{bad_utf8}: not UTF-8 text (at byte 18)"),
        ({}, ["--config", str(folder)], f"{folder}: not a regular file"),
    ]


def test_config_garbage_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for env, extra, wanted in garbage_cases(tmp_path):
        with monkeypatch.context() as m:
            for name, value in env.items():
                m.setenv(name, value)
            code = main(["stats", "--index", str(tmp_path / "none"), *extra])
        out, err = capsys.readouterr()
        assert code == 2, (env, extra)
        assert err.startswith(f"error: {wanted}"), err
        assert err.count("\n") == 1 and out == ""


def test_a_bad_value_names_the_file_that_set_it(tmp_path: Path) -> None:
    user = tmp_path / "mine.toml"
    user.write_text("[retrieval]\nk = 0\n[llm]\ntimeout = -1\n")
    with pytest.raises(ConfigError) as e:
        get_settings(user)
    assert e.value.problem == (
        f"{user}: retrieval.k: Input should be greater than or equal to 1; "
        f"{user}: llm.timeout: Input should be greater than 0"
    )
    assert str(e.value) == (
        f"{e.value.problem}. Fix the value where it is set, or give another file with --config."
    )


@pytest.mark.slow
def test_the_app_shows_config_garbage_in_its_own_error_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("RAG_CONFIG", "OPENAI_API_KEY", "RAG_CORPUS", "RAG_LLM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", str(tmp_path / "none"))
    for env, extra, wanted in garbage_cases(tmp_path):
        with monkeypatch.context() as m:
            for name, value in env.items():
                m.setenv(name, value)
            if extra:
                m.setenv("RAG_CONFIG", extra[1])
            app = AppTest.from_file(APP, default_timeout=60)
            app.run()
        assert not app.exception, (wanted, app.exception)
        assert app.error, wanted
        assert wanted.split(": ")[-1] in plain(app.error[0].value), app.error[0].value


@pytest.mark.slow  # over a second on 2 cores
def test_a_configured_k_above_the_slider_range_does_not_crash_the_app(
    seed_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("RAG_CONFIG", "OPENAI_API_KEY", "RAG_CORPUS", "RAG_LLM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", str(seed_settings.store.index_dir))
    monkeypatch.setenv("RAG_LLM__MODEL", "offline")
    monkeypatch.setenv("RAG_RETRIEVAL__K", "20")
    app = AppTest.from_file(APP, default_timeout=120)
    app.run()
    assert not app.exception, app.exception
    assert app.slider(key="k").value == 20
