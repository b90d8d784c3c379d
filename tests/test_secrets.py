"""No message, page or log shows a secret: tokens, header values, API keys, URL credentials.

- A Chroma token (or CHROMA_HEADERS value, or API key) that no HTTP header can carry (a
  trailing newline from `$(cat token.txt)`) is refused at start-up naming the variable; before,
  the HTTP client's error printed the whole header, secret included, and blamed the server.
- Whatever an error says, `rag.common.redact` removes the secrets before it is shown.
- `user:password@` in `llm.base_url` is shown nowhere: not in the sidebar, not in errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.common.redact import display_url, redact
from rag.settings import Settings, get_settings
from testkit.chroma_server import free_port
from testkit.openai_server import OpenAIServer, Reply
from tests.helpers import plain, run_cli

APP = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
TOKEN = "tok-SECRET-4821"
QUESTION = "How does ReBIND predict molecular conformations?"


def cli_printed(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """`rag ARGV...`'s exit code and all it printed, stdout and stderr together."""
    code, out, err = run_cli(list(argv), capsys)
    return code, out + err


def page_text(app: AppTest) -> str:
    """Every text element of the page, sidebar included."""
    kinds = ("markdown", "caption", "error", "warning", "info", "success", "title", "header")
    return "\n".join(str(e.value) for kind in kinds for e in getattr(app, kind))


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("CHROMA_AUTH_TOKEN", TOKEN + "\n", "CHROMA_AUTH_TOKEN holds a line break"),
        ("CHROMA_AUTH_TOKEN", f" {TOKEN}", "CHROMA_AUTH_TOKEN holds spaces around it"),
        (
            "CHROMA_HEADERS",
            '{"X-Chroma-Token": "' + TOKEN + '\\r\\n"}',
            "CHROMA_HEADERS (header X-Chroma-Token) holds a line break",
        ),
        (
            "CHROMA_HEADERS",
            '{"Bad Name": "' + TOKEN + '"}',
            "CHROMA_HEADERS: 'Bad Name' is not a valid HTTP",
        ),
    ],
)
def test_a_header_no_client_can_send_is_refused_naming_the_variable(
    variable: str,
    value: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, value)
    url = f"http://127.0.0.1:{free_port()}"
    code, printed = cli_printed(capsys, "stats", "--chroma-url", url)
    assert code == 2
    assert printed.startswith(f"error: {said}") and printed.count("\n") == 1, printed
    assert TOKEN not in printed and "server" not in printed


def test_an_api_key_with_a_newline_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], seed_settings: Settings
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + TOKEN + "\n")
    monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-4o-mini")
    index = str(seed_settings.store.index_dir)
    code, printed = cli_printed(capsys, "ask", QUESTION, "--index", index)
    assert code == 2
    assert "OPENAI_API_KEY holds a line break" in printed and TOKEN not in printed


def test_a_server_that_echoes_the_key_has_it_redacted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], seed_settings: Settings
) -> None:
    key = "sk-" + TOKEN
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with OpenAIServer() as server:
        server.script(Reply(status=400, content=f"invalid key {key} (Bearer {key})"))
        monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
        monkeypatch.setenv("RAG_LLM__BASE_URL", server.base_url)
        index = str(seed_settings.store.index_dir)
        code, printed = cli_printed(capsys, "ask", QUESTION, "--index", index)
    assert code == 2 and "answered 400" in printed
    assert TOKEN not in printed and "invalid key [redacted]" in printed


def test_redact_covers_raw_repr_and_header_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMA_AUTH_TOKEN", TOKEN + "\n")
    monkeypatch.setenv("CHROMA_HEADERS", '{"X-Api-Key": "hdr-SECRET-77"}')
    monkeypatch.setenv("MY_SERVICE_PASSWORD", "pw-SECRET-99")
    message = (
        f"Illegal header value b'Bearer {TOKEN}\\n'; X-Api-Key: hdr-SECRET-77; pw-SECRET-99; "
        "GET https://admin:s3cr3t@db.example:5432/x"
    )
    shown = redact(message, get_settings())
    assert "SECRET" not in shown and "s3cr3t" not in shown
    assert shown == (
        "Illegal header value b'Bearer [redacted]'; X-Api-Key: [redacted]; [redacted]; "
        "GET https://db.example:5432/x"
    )


def test_urls_are_shown_without_their_userinfo() -> None:
    assert display_url("http://admin:s3cr3t@host:8080/v1") == "http://host:8080"
    assert display_url("http://host/v1") == "http://host"


@pytest.mark.slow
def test_credentials_in_the_llm_base_url_appear_nowhere(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], seed_settings: Settings
) -> None:
    port = free_port()
    base_url = f"http://admin:s3cr3t@127.0.0.1:{port}/v1"
    monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
    monkeypatch.setenv("RAG_LLM__BASE_URL", base_url)
    monkeypatch.setenv("RAG_LLM__MAX_RETRIES", "0")
    index = str(seed_settings.store.index_dir)
    code, printed = cli_printed(capsys, "ask", QUESTION, "--index", index)
    assert code == 2 and "s3cr3t" not in printed and "admin" not in printed
    assert f"cannot connect to the server at http://127.0.0.1:{port} " in printed

    for name in ("RAG_CONFIG", "OPENAI_API_KEY", "RAG_CORPUS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", index)
    app = AppTest.from_file(APP, default_timeout=120)
    app.run()
    app.chat_input[0].set_value(QUESTION).run()
    assert not app.exception, app.exception
    shown = page_text(app)
    assert f"127.0.0.1:{port}" in plain(shown)  # the sidebar and the error name the server
    assert "s3cr3t" not in shown and "admin:" not in shown


def test_the_page_shows_no_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in ("RAG_CONFIG", "OPENAI_API_KEY", "RAG_CORPUS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHROMA_AUTH_TOKEN", TOKEN + "\n")
    monkeypatch.setenv("RAG_STORE__MODE", "http")
    monkeypatch.setenv("RAG_STORE__PORT", str(free_port()))
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", str(tmp_path))
    monkeypatch.setenv("RAG_LLM__MODEL", "offline")
    app = AppTest.from_file(APP, default_timeout=120)
    app.run()
    assert not app.exception, app.exception
    shown = page_text(app)
    assert "CHROMA\\_AUTH\\_TOKEN holds a line break" in shown or (
        "CHROMA_AUTH_TOKEN holds a line break" in shown
    )
    assert TOKEN not in shown


PASSWORD = "s3cr/etpw"  # a '/' the user did not percent-encode


@pytest.mark.parametrize(
    "base_url",
    [
        f"http://bob:{PASSWORD}@127.0.0.1:9/v1",
        "http://bob:s3cr#etpw@127.0.0.1:9/v1",
        "http://bob:s3cr?etpw@127.0.0.1:9/v1",
        "http://127.0.0.1:99999/v1",
        "ftp://127.0.0.1/v1",
        "127.0.0.1:8080/v1",
    ],
)
@pytest.mark.parametrize("variable", ["RAG_LLM__BASE_URL", "RAG_EMBEDDING__BASE_URL"])
def test_a_base_url_no_client_can_use_is_one_line_naming_the_variable_value_hidden(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    base_url: str,
    variable: str,
) -> None:
    monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
    monkeypatch.setenv(variable, base_url)
    code, printed = cli_printed(capsys, "ask", QUESTION, "--index", str(tmp_path / "index"))
    lines = printed.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), printed
    assert variable in lines[0] and "etpw" not in printed and "s3cr" not in printed, printed
    assert "bob" not in printed and "99999" not in printed, printed


def test_a_query_string_in_the_base_url_is_shown_nowhere(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], seed_settings: Settings
) -> None:
    port = free_port()
    monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
    monkeypatch.setenv("RAG_LLM__BASE_URL", f"http://127.0.0.1:{port}/v1?api_key=qk-SECRET-31")
    monkeypatch.setenv("RAG_LLM__MAX_RETRIES", "0")
    index = str(seed_settings.store.index_dir)
    code, printed = cli_printed(capsys, "ask", QUESTION, "--index", index)
    assert code == 2 and f"cannot connect to the server at http://127.0.0.1:{port} " in printed
    assert "SECRET" not in printed and "api_key" not in printed, printed


def test_urls_are_shown_without_userinfo_query_or_fragment_even_when_malformed() -> None:
    assert display_url(f"http://bob:{PASSWORD}@host/v1") == "http://host"
    assert display_url("http://bob:s3cr#etpw@host/v1") == "http://host"
    assert display_url("http://bob:s3cr?etpw@host/v1") == "http://host"
    assert display_url("http://host/v1?api_key=qk-SECRET") == "http://host"
    assert display_url("http://host/v1#frag") == "http://host"
    assert display_url("http://b%2Fob:s%3Fcr@host:8080/v1") == "http://host:8080"
    assert display_url("http://host:8080/sk-PATHSECRET123/v1") == "http://host:8080"
    assert display_url("http://host:8080/v1;key=sk-PARAMSECRET9") == "http://host:8080"
    shown = redact(f"GET http://bob:{PASSWORD}@host/v1 failed")
    assert "etpw" not in shown and "s3cr" not in shown


def test_the_model_menu_shows_no_userinfo_or_query() -> None:
    from ui.model_menu import model_label

    settings = get_settings(
        overrides={
            "llm": {
                "model": "openai:gpt-test",
                "base_url": "http://bob:s3cr%2Fetpw@127.0.0.1:8080/v1?api_key=qk-SECRET",
            }
        }
    )
    assert model_label(settings) == "openai:gpt-test at http://127.0.0.1:8080"


def test_the_page_shows_a_bad_base_url_as_an_error_without_the_password(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("RAG_CONFIG", "OPENAI_API_KEY", "RAG_CORPUS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
    monkeypatch.setenv("RAG_LLM__BASE_URL", f"http://bob:{PASSWORD}@127.0.0.1:9/v1")
    app = AppTest.from_file(APP, default_timeout=60)
    app.run()
    assert not app.exception, app.exception
    assert app.error and "RAG_LLM__BASE_URL" in app.error[0].value.replace("\\", ""), page_text(app)
    shown = page_text(app)
    assert "etpw" not in shown and "s3cr" not in shown and "bob" not in shown, shown


@pytest.mark.parametrize(
    "path", ["/sk-PATHSECRET123/v1", "/v1;key=sk-PATHSECRET123", "/gw/sk-PATHSECRET123;v=1/v1"]
)
def test_a_key_in_the_base_urls_path_or_params_is_shown_nowhere(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    seed_settings: Settings,
    path: str,
) -> None:
    """Some gateways take the key in the path: an error names scheme, host and port only, and
    a server that echoes the path it was asked (its 404, a 400's message) has it redacted."""
    monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
    monkeypatch.setenv("RAG_LLM__MAX_RETRIES", "0")
    index = str(seed_settings.store.index_dir)
    port = free_port()
    monkeypatch.setenv("RAG_LLM__BASE_URL", f"http://127.0.0.1:{port}{path}")
    code, printed = cli_printed(capsys, "ask", QUESTION, "--index", index)
    assert code == 2 and f"cannot connect to the server at http://127.0.0.1:{port} " in printed
    assert "PATHSECRET" not in printed, printed
    with OpenAIServer() as server:
        server.script(Reply(status=400, content=f"bad route {path}/chat/completions"))
        base = server.base_url.removesuffix("/v1")
        monkeypatch.setenv("RAG_LLM__BASE_URL", f"{base}/v1{path.replace('/v1', '')}")
        code, printed = cli_printed(capsys, "ask", QUESTION, "--index", index)
        assert code == 2 and "PATHSECRET" not in printed, printed
    assert "PATHSECRET" not in redact(f"POST {path}", get_settings())
