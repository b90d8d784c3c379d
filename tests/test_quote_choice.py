"""The quote chosen for a question is the sentence that answers it (issue 20, item 4): on the
bundled corpus and hand-written abstracts, with the real bundled model."""

from __future__ import annotations

import pytest

from rag.answer.extractive import extractive_answer, without_name
from rag.answer.pipeline import Assistant, answer
from rag.lang.question_kind import HOW_IT_WORKS, WANTS_EVALUATION
from rag.models.minilm import LocalEmbeddings
from rag.types import Paper, RetrievedPaper

AGENTS = Paper(
    "agents",
    "TreeCoder: Search for Software Agents",
    "Large language model (LLM) agents have shown great potential in solving real-world "
    "software engineering (SWE) problems. "
    "However, current agents follow linear processes and cannot backtrack. "
    "We propose TreeCoder, an agent that searches over edits for software engineering tasks. "
    "Applied to the SWE-bench benchmark, TreeCoder resolves 31% of the issues, a 20% relative "
    "improvement over open-source agents.",
)


def test_evaluation_questions_quote_the_benchmark_sentence(embeddings: LocalEmbeddings) -> None:
    question = "How are LLM agents evaluated on software engineering tasks?"
    assert WANTS_EVALUATION.search(question)
    result = extractive_answer(question, [RetrievedPaper(AGENTS, 0.6, 0.6)], embeddings)
    assert result.quotes[0].quote.startswith("Applied to the SWE-bench benchmark")


@pytest.mark.parametrize(
    ("question", "name", "expected"),
    [
        ("How does FlexPrefill decide which pattern to use?", "FlexPrefill", "How does it decide"),
        ("how does flexprefill work", "FlexPrefill", "how does it work"),
        ("How does LoRA-X work?", "LoRA", "How does LoRA-X work?"),  # only the whole name
    ],
)
def test_a_how_question_is_matched_without_the_name(
    question: str, name: str, expected: str
) -> None:
    assert without_name(question, name).startswith(expected)


def test_how_well_is_not_how_it_works() -> None:
    assert HOW_IT_WORKS.search("How does FlexPrefill decide?")
    assert not HOW_IT_WORKS.search("How fast is FlexPrefill?")
    assert not HOW_IT_WORKS.search("How much does FlexPrefill speed up prefilling?")


def test_swe_agents_are_quoted_by_their_results(corpus: Assistant) -> None:
    result = answer("How are LLM agents evaluated on software engineering tasks?", assistant=corpus)
    quotes = " ".join(c.quote for c in result.citations)
    assert "23% relative improvement" in quotes
    assert not any(c.quote.startswith("LLM agents have shown") for c in result.citations)


def test_flexprefill_is_quoted_by_how_it_decides(corpus: Assistant) -> None:
    question = "How does FlexPrefill decide which attention pattern to use?"
    result = answer(question, assistant=corpus)
    first = result.citations[0]
    assert first.n == 1 and result.sources[0].paper.title.startswith("FlexPrefill")
    assert "Jensen-Shannon divergence" in first.quote
