"""List answers and quote choice in the offline answerer, on hand-written abstracts and the
real bundled embedding model."""

from __future__ import annotations

import pytest

from rag.answer.extractive import ExtractiveOptions, contribution_sentence, extractive_answer
from rag.lang.question_kind import answer_mode
from rag.models.minilm import LocalEmbeddings
from rag.types import Paper, RetrievedPaper

SPARSE = Paper(
    "sparse",
    "SparseFlow: Sparse Attention for Long Sequences",
    "Attention is prohibitively expensive for long sequences. "
    "Existing sparse methods use fixed patterns. "
    "However, these methods fail on long prompts. "
    "We propose SparseFlow, which picks a sparse attention pattern per head for long sequences. "
    "SparseFlow is 3x faster than dense attention on 128k-token sequences.",
)
LEANING = Paper(
    "lean",
    "KVShrink",
    "Long-context inference stores a large KV cache that makes attention slow. "
    "To address this, we introduce KVShrink, pruning cache channels to speed up attention.",
)
OTHER = Paper(
    "other",
    "Cheap Attention by Low-Rank Kernels",
    "Quadratic attention limits sequence length. "
    "This paper presents a low-rank kernel approximation that makes attention linear in length.",
)


def sources(*papers: Paper) -> list[RetrievedPaper]:
    return [RetrievedPaper(p, 0.6, 0.6) for p in papers]


@pytest.mark.parametrize(
    ("question", "mode"),
    [
        ("Which papers make attention cheaper for long sequences?", "list"),
        ("Any work on watermarking LLM outputs?", "list"),
        ("What is new in speculative decoding?", "list"),
        ("Summarize the work on evaluating LLM unlearning", "list"),
        ("Are there papers that prune the KV cache?", "list"),
        ("Summarize the LOTOS paper", "summary"),
        ("Which paper proposes the rotation trick for VQ-VAEs?", "answer"),
        ("How does FlexPrefill choose sparse patterns?", "answer"),
    ],
)
def test_list_questions_are_told_apart(question: str, mode: str) -> None:
    assert answer_mode(question) == mode


def test_contribution_sentence_is_the_standing_claim() -> None:
    assert contribution_sentence(SPARSE.abstract).startswith("We propose SparseFlow")
    assert contribution_sentence(OTHER.abstract).startswith("This paper presents")
    # The only claim leans on the sentence before: it is still the contribution.
    assert contribution_sentence(LEANING.abstract).startswith("To address this, we introduce")


def test_list_answer_has_one_line_per_relevant_paper(embeddings: LocalEmbeddings) -> None:
    found = sources(SPARSE, LEANING, OTHER)
    question = "Which papers make attention cheaper for long sequences?"
    options = ExtractiveOptions(relevant=(True, True, False))
    result = extractive_answer(question, found, embeddings, options)
    lines = result.text.splitlines()[2:]
    assert len(lines) == 2 and [q.n for q in result.quotes] == [1, 2]
    assert lines[0].startswith("- **SparseFlow: Sparse Attention for Long Sequences**: We propose")
    assert lines[0].endswith(" [1]")
    # The leaning claim comes with the sentence it leans on, one exact stretch of the abstract.
    shown = lines[1].split("**: ", 1)[1].removesuffix(" [2]")
    assert shown == LEANING.abstract
    assert result.quotes[1].quote.startswith("To address this, we introduce KVShrink")
    every = extractive_answer(question, found, embeddings, ExtractiveOptions())
    assert len(every.quotes) == 3  # every retrieved paper when all are above the floor


def test_how_questions_quote_the_method_not_the_problem(embeddings: LocalEmbeddings) -> None:
    question = "How can attention be made cheaper for long sequences?"
    result = extractive_answer(question, sources(SPARSE), embeddings)
    (quote,) = result.quotes
    assert quote.quote.startswith(("We propose SparseFlow", "SparseFlow is 3x faster"))
    assert "However, these methods" not in result.text or "fixed patterns" in result.text
