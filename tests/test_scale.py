"""At scale: the 2,105 real papers plus the seeds, with the real model and a real Chroma.

Retrieval finds the gold paper, the relevance check answers what the corpus covers and abstains
on what it does not, and the offline answerer cites the right paper for the product's own
example questions. Floors sit a little below what bench/ measures, so noise cannot flip them.
"""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.evaluation.metrics import load_questions
from rag.lang.gloss import language
from rag.retrieval.retriever import Retriever, open_retriever
from rag.settings import Settings
from tests.helpers import EVAL_QUESTIONS

QUESTIONS = load_questions(EVAL_QUESTIONS)
ENGLISH = [q for q in QUESTIONS if q.answerable and q.kind != "chinese"]
UNANSWERABLE = [q for q in QUESTIONS if not q.answerable and language(q.question) == "en"]
CHINESE = [q for q in QUESTIONS if q.kind == "chinese"]
CHINESE_UNANSWERABLE = [q for q in QUESTIONS if not q.answerable and language(q.question) == "zh"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def retriever(corpus_settings: Settings) -> Retriever:
    return open_retriever(corpus_settings)


@pytest.fixture(scope="module")
def assistant(corpus_settings: Settings, retriever: Retriever) -> Assistant:
    return open_assistant(corpus_settings, embeddings=retriever.embeddings)


def has_gold(abstract: str, gold: tuple[str, ...]) -> bool:
    text = " ".join(abstract.split())
    return any(" ".join(g.split()) in text for g in gold)


def test_gold_paper_is_in_the_top_five(retriever: Retriever) -> None:
    found = 0
    first = 0
    for q in ENGLISH:
        results = retriever.search(q.question, k=5)
        found += any(has_gold(r.paper.abstract, q.gold) for r in results)
        first += bool(results) and has_gold(results[0].paper.abstract, q.gold)
    assert len(ENGLISH) >= 140
    assert found / len(ENGLISH) >= 0.9, (found, len(ENGLISH))
    assert first / len(ENGLISH) >= 0.75, (first, len(ENGLISH))


def test_relevance_check_answers_covered_questions_and_refuses_the_rest(
    retriever: Retriever,
) -> None:
    refused_answerable = [
        q.id for q in ENGLISH if not retriever.is_relevant(q.question, retriever.search(q.question))
    ]
    answered_unanswerable = [
        q.id
        for q in UNANSWERABLE
        if retriever.is_relevant(q.question, retriever.search(q.question))
    ]
    assert len(refused_answerable) / len(ENGLISH) <= 0.05, refused_answerable
    assert len(answered_unanswerable) / len(UNANSWERABLE) <= 0.1, answered_unanswerable


def test_relevance_check_on_chinese_questions(retriever: Retriever) -> None:
    """Weaker than in English: measured, 18 of the 24 uncovered Chinese questions refused and
    4 of the 92 covered ones (bench.calibrate_threshold); the bounds leave room for one more
    answered and two more refused."""
    refused = [
        q.id for q in CHINESE if not retriever.is_relevant(q.question, retriever.search(q.question))
    ]
    answered = [
        q.id
        for q in CHINESE_UNANSWERABLE
        if retriever.is_relevant(q.question, retriever.search(q.question))
    ]
    assert len(CHINESE_UNANSWERABLE) == 24 and len(CHINESE) == 92
    assert len(refused) <= 6, refused
    assert len(CHINESE_UNANSWERABLE) - len(answered) >= 17, answered


@pytest.mark.parametrize(
    ("question", "snippet"),
    [
        ("What did the masked diffusion paper find about the reverse curse?", "reverse curse"),
        ("Which papers make FlashAttention handle arbitrary masks?", "FlashAttention"),
        ("Summarize the work on evaluating LLM unlearning", "unlearning"),
    ],
)
def test_offline_answer_cites_the_right_paper_first(
    assistant: Assistant, question: str, snippet: str
) -> None:
    result = answer(question, assistant=assistant)
    assert not result.abstained, result.answer
    first = result.citations[0]
    paper = next(s.paper for s in result.sources if s.paper.id == first.paper_id)
    assert snippet.lower() in paper.abstract.lower()
    # every quote is exact: of its abstract, or a title record's title (a list names those)
    assert all(
        c.quote in s.paper.abstract if s.paper.has_abstract else c.quote == s.paper.title
        for c in result.citations
        for s in result.sources
        if s.paper.id == c.paper_id
    )
