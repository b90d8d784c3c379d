"""The page with a slow local model (issue 21): a marker never shown half-made while streaming,
errors that point at the model menu, presets whose server does not answer marked so, and a
model's uncited sentences shown apart from its cited ones."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag.answer.citations import CitedAnswer
from rag.errors import AnswerError
from rag.settings import Settings
from testkit.openai_server import OpenAIServer
from tests.helpers import plain, point_app_at
from ui import model_menu
from ui.chat_view import text_pieces
from ui.render import escape_message
from ui.uncited import UNCITED_BADGE

APP = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
INT4 = "How can INT4 weight-activation quantization deal with outliers in activations?"
CITED = "Rotated Runtime Smooth smooths channel-wise outliers at runtime [1]."
UNCITED = "This is a well known problem: see [the] literature."


class Waiting:
    def __init__(self) -> None:
        self.cleared = 0

    def empty(self) -> None:
        self.cleared += 1


def test_a_marker_is_held_back_until_it_is_complete_and_followed() -> None:
    final = CitedAnswer("q", "q", "Claim [1] more.", [], [], False, "m")
    result: list[CitedAnswer] = []
    waiting = Waiting()
    stream = iter(["Claim [", "1", "] more", " [2", "]", final])
    pieces = list(text_pieces(stream, result, waiting))
    assert pieces == ["Claim ", "\\[1\\] more", " ", "\\[2\\]"] and result == [final]
    assert waiting.cleared == 1


def test_page_errors_point_at_the_model_menu() -> None:
    error = AnswerError(
        "The language model failed: ...", "q", code="model_failed", hint="retry_or_offline"
    )
    assert error.hint == "retry_or_offline" and error.code == "model_failed"
    assert str(error).endswith("or use --config offline.")  # as the command line says it
    shown = plain(escape_message(error))
    assert shown.endswith("or choose Offline in the model menu.") and "--config" not in shown


def test_a_preset_whose_server_does_not_answer_is_marked_unavailable() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert model_menu.server_answers(f"http://127.0.0.1:{port}/v1")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        free = closed.getsockname()[1]
    assert not model_menu.server_answers(f"http://127.0.0.1:{free}/v1")


def test_an_uncited_sentence_is_muted_and_marked_on_the_page(
    seed_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against the scripted server: the cited sentence is plain, its [1] a link to the card;
    the sentence with no marker is gray with an "uncited" badge, its own text still escaped."""
    point_app_at(monkeypatch, seed_settings.store.index_dir, tmp_path / "feedback.jsonl")
    with OpenAIServer() as server:
        monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
        monkeypatch.setenv("RAG_LLM__BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM__MAX_RETRIES", "0")
        server.script(f"{CITED} {UNCITED}")
        at = AppTest.from_file(APP, default_timeout=120).run()
        at.chat_input[0].set_value(INT4).run()
        assert not at.exception, at.exception
    (turn,) = at.session_state["turns"]
    assert turn.answer.grounding == "cited" and turn.answer.uncited == 1
    shown = at.chat_message[1].markdown[0].value
    escaped = "This is a well known problem\\: see \\[the\\] literature."
    assert f":gray[{escaped}] {UNCITED_BADGE}" in shown
    cited_part = shown.split(":gray[")[0]
    assert "Rotated Runtime Smooth" in cited_part and "](#src-0-1" in cited_part
    assert "uncited" in plain(shown) and shown.count(UNCITED_BADGE) == 1
