"""A question wrapped in who asks and where they met its topic ("my advisor wants me to look
at graph transformers, anything good?") is searched and judged on its topic before it is
refused (rag.lang.intent.topic_of, rag.answer.judge.judged_on_topic), on the bundled corpus and
the real model; a topic the corpus lacks is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.answer.pipeline import Assistant, answer
from rag.lang.intent import topic_of, understand
from rag.settings import Settings
from tests.helpers import point_app_at

STRONG_MODEL_COLLAPSE = "et5l9qPUhm"


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        (
            "i saw a talk on model collapse from synthetic data, can you find it",
            "model collapse from synthetic data",
        ),
        ("my advisor wants me to look at graph transformers, anything good?", "graph transformers"),
        ("heard a talk about sparse autoencoders, which one was that?", "sparse autoencoders"),
        # nothing only frames these: the question is its own topic
        ("Is there work on neural decoders?", "Is there work on neural decoders?"),
        ("What is FlexPrefill?", "What is FlexPrefill?"),
    ],
)
def test_the_topic_leaves_out_who_asks_and_the_clauses_that_only_ask(
    question: str, topic: str
) -> None:
    assert topic_of(question) == topic


def test_only_an_english_question_has_a_topic_of_its_own() -> None:
    assert understand("我导师让我看看图 transformer，有什么好论文？").topic == ""
    assert understand("my advisor wants me to look at graph transformers").topic == (
        "graph transformers"
    )


def test_a_framed_question_is_answered_from_its_topic_and_says_so(corpus: Assistant) -> None:
    # ("..., which paper was it" asks for one paper described: the closest title record,
    # "Beyond Model Collapse: Scaling Up with Synthesized Data ...", is that one.)
    result = answer(
        "i saw a talk on model collapse from synthetic data, can you find it",
        assistant=corpus,
    )
    assert not result.abstained
    assert result.citations[0].paper_id == STRONG_MODEL_COLLAPSE
    assert "model collapse from synthetic data" in result.scope_note


def test_a_framed_question_on_a_topic_the_corpus_lacks_is_refused(corpus: Assistant) -> None:
    result = answer(
        "my advisor asked me to look at crop yield prediction in kenya from satellites, "
        "anything good?",
        assistant=corpus,
    )
    assert result.abstained and not result.citations


def test_a_question_that_needs_no_topic_is_judged_once(corpus: Assistant) -> None:
    """The topic is tried only before a refusal: an answered question keeps its own sources."""
    question = "Which papers make attention cheaper for long sequences?"
    result = answer(question, assistant=corpus)
    assert not result.abstained and "topic" not in result.scope_note


NOT_ALL_HEADS = "FJFVmeXusW"  # Not All Heads Matter: A Head-Level KV Cache Compression Method
TEST_TIME = "4FWAwZtd2n"  # Scaling LLM Test-Time Compute Optimally Can be More Effective ...


@pytest.mark.parametrize(
    ("question", "paper"),
    [
        ('explain the idea behind "Not All Heads Matter"', NOT_ALL_HEADS),
        ("what's the main finding of “Scaling LLM Test-Time Compute Optimally”", TEST_TIME),
        ("explain the idea behind Not All Heads Matter", NOT_ALL_HEADS),  # a head, unquoted
    ],
)
def test_a_quoted_title_is_answered_from_that_paper_alone(
    corpus: Assistant, question: str, paper: str
) -> None:
    """A quoted title names its paper as a method name does (rag.retrieval.titles.quoted):
    'Not All Heads Matter' was answered from the retrieval-heads paper."""
    result = answer(question, assistant=corpus)
    assert not result.abstained
    assert {c.paper_id for c in result.citations} == {paper}


@pytest.mark.slow  # over a second on 2 cores
def test_the_page_answers_a_framed_question_and_says_it_searched_its_topic(
    corpus_settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In the page (Streamlit's AppTest on the bundled index): the answer, its cards, and the
    caption that says which words were searched."""
    from streamlit.testing.v1 import AppTest

    point_app_at(monkeypatch, corpus_settings.store.index_dir, tmp_path / "feedback.jsonl")
    app = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
    at = AppTest.from_file(app, default_timeout=180).run()
    at.chat_input[0].set_value(
        "i saw a talk on model collapse from synthetic data, can you find it"
    ).run()
    assert not at.exception, at.exception
    reply = at.chat_message[1]
    shown = " ".join(m.value for m in reply.markdown)
    assert "Strong Model Collapse" in shown, shown
    assert "Strong Model Collapse" in reply.subheader[0].value  # its card first
    captions = " ".join(c.value for c in reply.caption)
    assert "Searched for the question's topic" in captions, captions
    assert "model collapse from synthetic data" in captions
    assert not at.session_state["turns"][0].answer.abstained
