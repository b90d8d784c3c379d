"""The errors `rag` prints in its common failure paths, caught where the CLI prints them: each
carries a code and a hint its raise site chose (rag.errors.HINTS), worded as a command for the
command line and as something to do on the page, which never names a `rag` command or flag
(issue 29)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rag.cli.main as cli
from rag.answer.pipeline import MAX_QUESTION_CHARS
from rag.cli.main import main
from rag.errors import HINTS, AnswerError, RagError, StoreError
from rag.settings import Settings
from testkit.openai_server import OpenAIServer, Reply
from tests.scripted_model import llm_config

INT4 = "How can INT4 quantization deal with outliers in activations?"
CLI_ONLY = ("--config", "--index", "--rebuild", "rag ingest", "`rag ")


def raised(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """The error `rag ARGV` printed (exit 2, one `error:` line saying `str(error)`)."""
    seen: list[BaseException] = []
    printed = cli.error_text

    def catching(error: BaseException) -> str:
        seen.append(error)
        return printed(error)

    monkeypatch.setattr(cli, "error_text", catching)
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert len(seen) == 1 and isinstance(seen[0], RagError), err
    assert err == f"error: {seen[0]}\n"
    return seen[0]


def check(error: RagError, code: str, hint: str) -> None:
    assert (error.code, error.hint) == (code, hint)
    command, action = error.worded("command"), error.worded("action")
    assert command == str(error) and command.startswith(error.problem)
    assert action.startswith(error.problem) and len(action) > len(error.problem)
    assert not any(flag in error.problem for flag in ("--config", "--index", "--rebuild"))
    assert not any(flag in action for flag in CLI_ONLY), action
    assert "\n" not in command + action


@pytest.fixture(autouse=True)
def _no_model(no_model_env: None) -> None:
    """No key or model from the environment (conftest's `no_model_env`)."""


def test_no_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    error = raised(monkeypatch, capsys, "stats", "--index", str(missing))
    check(error, "no_index", "build_index_at")
    assert str(error) == f"no index at {missing}: build it with `rag ingest --index {missing}`"
    assert error.worded("action") == f"no index at {missing}: build it with the button below"


def test_stale_vectors(
    seed_settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(seed_settings.store.index_dir)  # float32 vectors; int8 ones asked for
    monkeypatch.setenv("RAG_EMBEDDING__BACKEND", "onnx-int8")
    error = raised(monkeypatch, capsys, "stats", "--index", index)
    check(error, "stale_vectors", "refresh_vectors")
    assert str(error).endswith(": `rag ingest` rebuilds it (seconds for the bundled corpus)")


def test_bad_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mine.toml"
    config.write_text("[retrieval]\nk = 0\n")
    error = raised(monkeypatch, capsys, "stats", "--config", str(config))
    check(error, "bad_config", "fix_config")
    assert error.problem == f"{config}: retrieval.k: Input should be greater than or equal to 1"


@pytest.mark.parametrize(
    ("question", "code", "hint", "said"),
    [
        ("   ", "question_empty", "ask_a_question", "The question is empty: type a question"),
        (
            "x" * (MAX_QUESTION_CHARS + 1),
            "question_too_long",
            "shorten_question",
            f"characters long; keep it under {MAX_QUESTION_CHARS}.",
        ),
    ],
)
def test_bad_questions(
    question: str,
    code: str,
    hint: str,
    said: str,
    seed_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    index = str(seed_settings.store.index_dir)
    error = raised(monkeypatch, capsys, "ask", question, "--index", index, "--config", "offline")
    assert isinstance(error, AnswerError)
    check(error, code, hint)
    assert said in str(error)


@pytest.mark.parametrize(
    ("replies", "said"),
    [
        ([Reply(status=500)], "The language model failed: "),
        ([Reply("")] * 2, "The language model failed: openai:gpt-test returned an empty answer."),
    ],
)
def test_a_failing_model(
    replies: list[Reply],
    said: str,
    seed_settings: Settings,
    srv: OpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    srv.script(*replies)
    index, config = str(seed_settings.store.index_dir), str(llm_config(tmp_path, srv))
    error = raised(monkeypatch, capsys, "ask", INT4, "--index", index, "--config", config)
    check(error, "model_failed", "retry_or_offline")
    assert str(error).startswith(said)
    assert str(error).endswith(
        " Your question and the chat are kept; ask again, or use --config offline."
    )
    assert error.worded("action").endswith(
        " Your question and the chat are kept; ask again, or choose Offline in the model menu."
    )


def test_a_model_without_its_key(
    seed_settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "key.toml"
    config.write_text('[llm]\nmodel = "openai:gpt-test"\napi_key_env = "RAG_TEST_NO_KEY"\n')
    index = str(seed_settings.store.index_dir)
    error = raised(monkeypatch, capsys, "ask", INT4, "--index", index, "--config", str(config))
    check(error, "no_api_key", "api_key_or_offline")
    assert str(error) == (
        "llm.model = 'openai:gpt-test' needs an API key: set RAG_TEST_NO_KEY, or set "
        "llm.base_url to an OpenAI-compatible server, or use --config offline"
    )


def test_every_hint_is_worded_for_both_and_the_page_names_no_rag_command() -> None:
    for key, hint in HINTS.items():
        assert hint.command and hint.action, key
        assert not any(flag in hint.action for flag in CLI_ONLY), key


def test_a_raise_site_fills_what_its_hint_names_and_a_wrapper_keeps_it() -> None:
    with pytest.raises(KeyError, match="no hint"):
        RagError("x", hint="no such hint")
    with pytest.raises(KeyError, match="index"):
        StoreError("no index at /x", hint="build_index_at")  # which folder?
    inner = StoreError("no index at /x", hint="build_index_at", hint_args={"index": "/x"})
    outer = AnswerError(inner, "q")
    assert (outer.code, outer.hint, outer.problem) == (
        "store_failed",
        "build_index_at",
        inner.problem,
    )
    assert str(outer) == str(inner) and outer.question == "q"
    assert RagError("plain").worded("action") == "plain"  # no hint: the problem says it all
