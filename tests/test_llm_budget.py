"""`llm.timeout` is the total for one answer, against a slow server started by the test.

The server (testkit/openai_server.py) drips its reply: one streamed piece, or a few bytes of a
plain JSON body, per interval; `endless` never finishes. Before, each read only had to arrive
within the timeout, so a drip of one word a second took as long as the reply was long, and an
endless one never ended; a server's Retry-After multiplied the wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rag.answer.pipeline import answer, open_assistant, stream_answer
from rag.cli.main import main
from rag.errors import AnswerError
from rag.models import budget
from rag.settings import Settings
from testkit.openai_server import OpenAIServer, Reply
from tests.helpers import make_settings

QUESTION = (
    "What is ReBIND and how does it use the Lennard-Jones potential to predict ground-state "
    "molecular conformations?"
)
SLOW_REPLY = " ".join(["ReBIND rewires molecular graphs with Lennard-Jones edges [1]."] * 6)
TIMEOUT = 3.0
SLACK = 1.0  # thread hand-over and the retrieval before the model call


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv


def settings_for(index: Settings, srv: OpenAIServer, **llm: Any) -> Settings:
    values = {"model": "openai:gpt-test", "base_url": srv.base_url, "timeout": TIMEOUT, **llm}
    return make_settings(index.store.index_dir, llm={"max_retries": 0, **values})


def timed_failure(settings: Settings, embeddings: Any, streamed: bool) -> tuple[float, str]:
    assistant = open_assistant(settings, embeddings)
    assistant.retriever.search(QUESTION)  # warm, so the clock measures the model call
    started = time.monotonic()
    with pytest.raises(AnswerError) as failed:
        if streamed:
            list(stream_answer(QUESTION, assistant=assistant))
        else:
            answer(QUESTION, assistant=assistant)
    return time.monotonic() - started, str(failed.value)


def llm_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "llm-call"]


DRIPS = {
    "one word a second": Reply(SLOW_REPLY, drip=1.0),  # 60 pieces: a minute unbounded
    "endless": Reply(SLOW_REPLY, drip=0.3, endless=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("streamed", [False, True], ids=["answer", "stream"])
@pytest.mark.parametrize("drip", list(DRIPS))
def test_a_dripping_server_is_cut_off_at_llm_timeout(
    drip: str, streamed: bool, server: OpenAIServer, seed_settings: Settings, embeddings: Any
) -> None:
    server.reset()
    server.script(DRIPS[drip])
    elapsed, message = timed_failure(settings_for(seed_settings, server), embeddings, streamed)
    assert TIMEOUT - 0.1 <= elapsed <= TIMEOUT + SLACK, elapsed
    assert "did not answer within llm.timeout = 3 s" in message
    assert "the limit for a whole answer with its retries" in message
    # The abandoned call does not drip on in the background: its response is cut off.
    deadline = time.monotonic() + 3
    while llm_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not llm_threads()


@pytest.mark.slow
def test_retry_after_is_capped_and_retries_stay_inside_the_limit(
    server: OpenAIServer,
    seed_settings: Settings,
    embeddings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(budget, "RETRY_AFTER_CAP", 1.0)
    busy = Reply(status=429, content="slow down", headers={"retry-after": "100"})
    # A Retry-After of 100 s is honoured for 1 s, then the retry is answered.
    server.reset()
    server.script(busy, "ReBIND adds Lennard-Jones edges [1].")
    settings = settings_for(seed_settings, server, max_retries=2)
    assistant = open_assistant(settings, embeddings)
    started = time.monotonic()
    result = answer(QUESTION, assistant=assistant)
    assert 1.0 <= time.monotonic() - started <= 1.0 + SLACK
    assert [c.n for c in result.citations] == [1] and len(server.requests) == 2
    # When the wait would pass the limit, the answer fails now instead of sleeping.
    server.reset()
    server.script(busy, busy, busy)
    elapsed, message = timed_failure(
        settings_for(seed_settings, server, max_retries=2, timeout=0.8), embeddings, False
    )
    assert elapsed < 0.8 and len(server.requests) == 1
    assert "is still rate limiting openai:gpt-test (429)" in message


def test_retry_after_forms() -> None:
    class Failed(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            self.response = type("R", (), {"headers": headers})()

    assert budget.retry_after(Failed({"retry-after": "2"})) == 2.0
    assert budget.retry_after(Failed({"retry-after-ms": "1500"})) == 1.5
    assert budget.retry_after(Failed({"retry-after": "86400"})) == budget.RETRY_AFTER_CAP
    assert budget.retry_after(Failed({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert budget.retry_after(Failed({"retry-after": "soon"})) is None
    assert budget.retry_after(Failed({"retry-after": "nan"})) is None
    assert budget.retry_after(ValueError()) is None


@pytest.mark.slow
def test_rag_ask_against_a_dripping_server_ends_at_the_limit(
    server: OpenAIServer,
    seed_settings: Settings,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.reset()
    server.script(Reply(SLOW_REPLY, drip=1.0))
    config = tmp_path / "slow.toml"
    config.write_text(
        f'[llm]\nmodel = "openai:gpt-test"\nbase_url = "{server.base_url}"\n'
        f"timeout = {TIMEOUT}\nmax_retries = 0\n"
    )
    index = str(seed_settings.store.index_dir)
    started = time.monotonic()
    code = main(["ask", QUESTION, "--config", str(config), "--index", index])
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: The language model failed: openai:gpt-test at the server at")
    assert "did not answer within llm.timeout = 3 s" in err and err.count("\n") == 1
    # Start-up (the embedding model, the index) takes a few seconds; the reply alone a minute.
    assert elapsed < TIMEOUT + 10, elapsed


@pytest.mark.slow
def test_a_fast_answer_is_unaffected(
    server: OpenAIServer, seed_settings: Settings, embeddings: Any
) -> None:
    server.reset()
    server.script(Reply("ReBIND adds Lennard-Jones edges [1].", drip=0.05))
    assistant = open_assistant(settings_for(seed_settings, server), embeddings)
    pieces = list(stream_answer(QUESTION, assistant=assistant))
    text = "".join(p for p in pieces if isinstance(p, str))
    assert text == "ReBIND adds Lennard-Jones edges [1]."
    assert "Lennard-Jones" in pieces[-1].citations[0].quote  # type: ignore[union-attr]


# A reply's byte budget (issue 32, M2) ------------------------------------------------------

MAX_TOKENS = 64  # the reply is read up to 64 x 16 = 1,024 bytes of text
CAP = MAX_TOKENS * 16  # budget.REPLY_BYTES_PER_TOKEN
START = "ReBIND rewires molecular graphs with Lennard-Jones edges [1]. "
HUGE = Reply(START + ("a" * 999 + " ") * 10_000)  # 10 MB in 10,000 pieces
ENDLESS = Reply(START, endless=True, drip=1e-5)  # "more " as fast as the server can write


@pytest.mark.slow
@pytest.mark.parametrize("reply", [HUGE, ENDLESS], ids=["10 MB", "endless"])
def test_a_streamed_reply_is_read_up_to_its_byte_budget(
    reply: Reply, server: OpenAIServer, seed_settings: Settings, embeddings: Any
) -> None:
    """Before, a 10 MB reply took 94 s and 1.1 GB, an endless one ran to llm.timeout."""
    server.reset()
    server.script(reply, reply)  # an ungrounded reply is asked again once
    settings = settings_for(seed_settings, server, max_tokens=MAX_TOKENS, timeout=20.0)
    assistant = open_assistant(settings, embeddings)
    assistant.retriever.search(QUESTION)
    started = time.monotonic()
    pieces = list(stream_answer(QUESTION, assistant=assistant))
    assert time.monotonic() - started < TIMEOUT, time.monotonic() - started
    text = "".join(p for p in pieces if isinstance(p, str))
    assert text.startswith(START) and len(text.encode()) <= CAP
    assert not isinstance(pieces[-1], str) and pieces[-1].answer  # an answer, not an error


@pytest.mark.slow
def test_a_follow_ups_rewrite_is_read_up_to_its_byte_budget(
    server: OpenAIServer, seed_settings: Settings, embeddings: Any
) -> None:
    """The rewrite of "and how fast is it?" is a model reply too: 10 MB is cut, not read."""
    server.reset()
    server.script(HUGE, START)
    settings = settings_for(seed_settings, server, max_tokens=MAX_TOKENS, timeout=20.0)
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": START}]
    started = time.monotonic()
    pieces = list(
        stream_answer(
            "and how fast is it?", history, assistant=open_assistant(settings, embeddings)
        )
    )
    assert time.monotonic() - started < TIMEOUT + SLACK, time.monotonic() - started
    assert server.requests and not isinstance(pieces[-1], str)  # an answer or a refusal


@pytest.mark.slow
def test_a_whole_reply_past_its_byte_budget_is_one_line(
    server: OpenAIServer, seed_settings: Settings, embeddings: Any
) -> None:
    """A plain (not streamed) 10 MB body is stopped at 64 KiB + 1 KiB per token, not retried.

    The answer streams; a plain body is what it asks for after an empty stream (the way
    llama-cpp-python answers a prompt longer than its window)."""
    server.reset()
    server.script(Reply(raw_body="data: [DONE]\n\n"), HUGE, HUGE)
    settings = settings_for(seed_settings, server, max_tokens=MAX_TOKENS, max_retries=1)
    started = time.monotonic()
    with pytest.raises(AnswerError) as failed:
        answer(QUESTION, assistant=open_assistant(settings, embeddings))
    assert time.monotonic() - started < TIMEOUT and len(server.requests) == 2
    assert server.requests[0].stream and not server.requests[1].stream
    assert "than llm.max_tokens = 64 allows" in str(failed.value), failed.value


@pytest.mark.slow
def test_rag_ask_reads_a_10_mb_reply_up_to_its_byte_budget(
    server: OpenAIServer,
    seed_settings: Settings,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.reset()
    server.script(HUGE, HUGE)
    config = tmp_path / "huge.toml"
    config.write_text(
        f'[llm]\nmodel = "openai:gpt-test"\nbase_url = "{server.base_url}"\n'
        f"max_tokens = {MAX_TOKENS}\nmax_retries = 0\n"
    )
    index = str(seed_settings.store.index_dir)
    started = time.monotonic()
    code = main(["ask", QUESTION, "--config", str(config), "--index", index])
    out, err = capsys.readouterr()
    assert code == 0 and err == "" and 0 < len(out.encode()) < 4 * CAP, (out[:300], err)
    assert time.monotonic() - started < 15, time.monotonic() - started
