"""Issue 20, item 4: a follow-up asking how fast (or how evaluated) quotes the sentence that
says so, or says the abstract reports none, never a background sentence."""

from __future__ import annotations

from rag.answer.aspects import ASPECTS, aspect_answer
from rag.lang.messages import message
from rag.lang.question_kind import wants
from rag.types import Paper, RetrievedPaper

FLEX = Paper(
    "flex",
    "FlexPrefill: A Context-Aware Sparse Attention Mechanism",
    "Large language models struggle with long sequences. A promising approach is top-k "
    "attention, which keeps the k largest scores. We propose FlexPrefill, which decides the "
    "sparse pattern of each head with the Jensen-Shannon divergence. Experiments show speedups "
    "of up to 3.5x over dense attention with no loss in accuracy.",
)
NO_FIGURE = Paper(
    "plain",
    "A Study of Attention",
    "Attention is widely used. Prior work is limited. We propose a new analysis of attention "
    "heads and show what they encode.",
)


def one(paper: Paper) -> list[RetrievedPaper]:
    return [RetrievedPaper(paper, 1.0, 1.0)]


def test_how_fast_quotes_the_speed_figure() -> None:
    assert wants("and how fast is it?").aspect == "speed"
    text, quotes = aspect_answer(ASPECTS["speed"], one(FLEX))
    assert [q.quote for q in quotes] == [
        "Experiments show speedups of up to 3.5x over dense attention with no loss in accuracy."
    ]
    assert "top-k" not in text


def test_no_speed_figure_is_said_plainly_in_either_language() -> None:
    assert wants("它有多快？").aspect == "speed"
    aspect = ASPECTS["speed"]
    text, quotes = aspect_answer(aspect, one(NO_FIGURE), "zh")
    assert message("no_speed", "它有多快？") in text
    assert (
        quotes[0].quote == "We propose a new analysis of attention heads and show what they encode."
    )
    text, _ = aspect_answer(aspect, one(NO_FIGURE))
    assert message("no_speed") in text


def test_other_questions_ask_no_aspect() -> None:
    assert wants("summarize the second one").aspect == ""
    assert wants("how is it evaluated?").aspect == "evaluation"


OWN_LIMIT = Paper(
    "own",
    "A Method With Limits",
    "Existing methods have limitations. To address these limitations, we propose Foo. Foo "
    "halves the error. A limitation of our approach is its memory cost, which we leave to "
    "future work.",
)


def test_limitations_quote_the_papers_own_not_those_of_prior_work() -> None:
    assert wants("any limitations mentioned?").aspect == "limitations"
    assert wants("有提到 limitations 吗？").aspect == "limitations"
    assert wants("第二篇用了哪些 dataset？").aspect == "evaluation"
    text, quotes = aspect_answer(ASPECTS["limitations"], one(OWN_LIMIT) + one(NO_FIGURE))
    assert quotes[0].quote.startswith("A limitation of our approach")
    assert "To address these limitations" not in text
    assert "**A Study of Attention** [2]" in text  # each paper, by its number
    assert "The abstract states no limitation of its own." in text
