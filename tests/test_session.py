"""rag.Session (one conversation, what the page and `rag ask --conversation` keep) and the
errors' code and hint, worded for the command line and for the page (issue 29)."""

from __future__ import annotations

import pytest

import rag
from rag import Assistant, CitedAnswer, Session, open_assistant
from rag.errors import (
    AnswerError,
    CompareError,
    IndexMismatchError,
    IndexMissingError,
    ModelError,
    RagError,
    StaleVectorsError,
    StoreError,
)
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings

INT4 = "How can INT4 quantization deal with outliers in activations?"


@pytest.fixture(scope="module")
def offline(seed_settings: Settings, embeddings: LocalEmbeddings) -> Assistant:
    return open_assistant(seed_settings, embeddings=embeddings)


def test_a_follow_up_sees_the_previous_answer_and_the_history(offline: Assistant) -> None:
    session = Session(offline)
    pieces = list(session.ask(INT4))
    first = pieces[-1]
    assert isinstance(first, CitedAnswer) and all(isinstance(p, str) for p in pieces[:-1])
    assert "".join(pieces[:-1]) == first.answer  # the streamed text, then the answer
    assert session.previous is first and session.unanswered is None
    assert session.history == [
        {"role": "user", "content": INT4},
        {"role": "assistant", "content": first.answer},
    ]
    follow_up = session.answer("summarize the second one")
    second = first.sources[1].paper.id
    assert {c.paper_id for c in follow_up.citations} == {second}
    assert session.previous is follow_up and len(session.history) == 4


def test_a_failed_question_leaves_the_conversation_as_it_was(offline: Assistant) -> None:
    session = Session(offline)
    session.answer(INT4)
    history, previous = session.history, session.previous
    with pytest.raises(AnswerError) as failed:
        session.answer("   ")
    assert failed.value.code == "question_empty"
    assert session.history == history and session.previous is previous
    assert session.unanswered == "   "  # kept for asking again
    session.reset()
    assert session.history == [] and session.previous is None and session.unanswered is None


def test_an_abandoned_stream_records_nothing(offline: Assistant) -> None:
    """The page reruns in the middle of an answer: the generator is closed, not finished."""
    session = Session(offline)
    stream = session.ask(INT4)
    assert isinstance(next(stream), str)
    stream.close()
    assert session.history == [] and session.unanswered == INT4


def test_the_history_is_capped_and_a_session_opens_from_settings(
    seed_settings: Settings, offline: Assistant
) -> None:
    session = Session(offline)
    for _ in range(6):
        session.record(INT4, CitedAnswer(INT4, INT4, "an answer", [], [], False, "m"))
    assert len(session.history) == rag.session.HISTORY_MESSAGES
    assert isinstance(Session(seed_settings).assistant, Assistant)


KEPT = "Your question and the chat are kept; ask again, or use --config offline."


@pytest.mark.parametrize(
    ("error", "code", "hint", "command", "page"),
    [
        (
            AnswerError(
                "The language model failed: m timed out.",
                "q",
                code="model_failed",
                hint="retry_or_offline",
            ),
            "model_failed",
            "retry_or_offline",
            f"The language model failed: m timed out. {KEPT}",
            "The language model failed: m timed out. Your question and the chat are kept; "
            "ask again, or choose Offline in the model menu.",
        ),
        (
            AnswerError(
                ModelError(
                    "llm.model = 'openai:m' needs an API key",
                    code="no_api_key",
                    hint="api_key_or_offline",
                    hint_args={"variable": "K"},
                )
            ),
            "no_api_key",
            "api_key_or_offline",
            "llm.model = 'openai:m' needs an API key: set K, or set llm.base_url to an "
            "OpenAI-compatible server, or use --config offline",
            "llm.model = 'openai:m' needs an API key: set K, or set llm.base_url to an "
            "OpenAI-compatible server, or choose Offline in the model menu",
        ),
        (
            IndexMissingError("no index at /x", hint="build_index_at", hint_args={"index": "/x"}),
            "no_index",
            "build_index_at",
            "no index at /x: build it with `rag ingest --index /x`",
            "no index at /x: build it with the button below",
        ),
        (
            IndexMismatchError(
                "built with A, but the configuration asks for B", hint="rebuild_or_reconfigure"
            ),
            "index_mismatch",
            "rebuild_or_reconfigure",
            "built with A, but the configuration asks for B: rebuild it with "
            "`rag ingest --rebuild`, or change the configuration back",
            "built with A, but the configuration asks for B: rebuild it with the button below, "
            "or change the configuration back",
        ),
        (
            StaleVectorsError("holds int8 vectors", hint="refresh_vectors"),
            "stale_vectors",
            "refresh_vectors",
            "holds int8 vectors: `rag ingest` rebuilds it (seconds for the bundled corpus)",
            "holds int8 vectors: the button below rebuilds it (seconds for the bundled corpus)",
        ),
        (
            CompareError("the model failed: m timed out.", hint="compare_offline"),
            "compare_failed",
            "compare_offline",
            "the model failed: m timed out. Try again, or compare offline with --config offline.",
            "the model failed: m timed out. Try again, or choose Offline in the model menu.",
        ),
        (
            AnswerError(
                "The question is 5000 characters long",
                "q",
                code="question_too_long",
                hint="shorten_question",
                hint_args={"limit": 4000},
            ),
            "question_too_long",
            "shorten_question",
            "The question is 5000 characters long; keep it under 4000.",
            "The question is 5000 characters long; keep it under 4000 characters.",
        ),
    ],
)
def test_errors_carry_a_code_and_a_hint_worded_for_each_caller(
    error: RagError, code: str, hint: str, command: str, page: str
) -> None:
    assert (error.code, error.hint) == (code, hint)
    assert error.worded("command") == str(error) == command  # as the command line says it
    assert error.worded("action") == page
    assert "\n" not in str(error) and "--config" not in page and "rag ingest" not in page


def test_a_raise_site_may_give_the_hint_and_write_only_the_problem() -> None:
    error = StoreError("no index in X", hint="build_index", code="no_index")
    assert str(error) == "no index in X: build it with `rag ingest`"
    assert error.problem == "no index in X" and error.code == "no_index"
    assert error.worded("action") == "no index in X: build it with the button below"
    with pytest.raises(KeyError):
        RagError("x", hint="no such hint")
