"""The page with a slow local model (issue 21): a marker never shown half-made while streaming,
errors that point at the model menu, and presets whose server does not answer marked so."""

from __future__ import annotations

import socket

from rag.answer.citations import CitedAnswer
from ui import model_menu
from ui.chat_view import page_error, text_pieces


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
    message = "The language model failed: ... Your question and the chat are kept; ask again, "
    assert page_error(message + "or use --config offline.").endswith(
        "or choose Offline in the model menu."
    )


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
