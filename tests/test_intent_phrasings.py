"""Phrasings of a new question set (data/eval/intent_questions_new.jsonl, its dev half) that
were misread: the intent now reads each as the user meant, and the answer follows."""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.lang.intent import understand
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings

TEST_TIME_COMPUTE = "4FWAwZtd2n"  # Scaling LLM Test-Time Compute Optimally Can be More ...
LABMATE = (
    "my labmate said there were a bunch of papers at ICLR this year on scaling test-time "
    "compute for reasoning which ones should i actually look at"
)


@pytest.fixture(scope="module")
def corpus(corpus_settings: Settings, embeddings: LocalEmbeddings) -> Assistant:
    return open_assistant(corpus_settings, embeddings=embeddings)


@pytest.mark.parametrize(
    ("question", "number"),
    [
        ("im new to protein design, can you recommend 3 papers from this year to start with", 3),
        ("推荐五篇做 GUI agent 的论文，就是让 LLM 去操作网页那种", 5),
    ],
)
def test_a_number_of_papers_asked_for_is_a_list(question: str, number: int) -> None:
    intent = understand(question)
    assert (intent.kind, intent.asked.number) == ("list", number)


def test_a_list_frame_at_the_end_takes_its_subject_from_before_it() -> None:
    intent = understand(LABMATE)
    assert intent.kind == "list"
    assert intent.subject == "scaling test-time compute for reasoning"


def test_looking_for_some_work_in_chinese_is_a_list() -> None:
    intent = understand("想找一些 time series foundation model 相关的工作，口头报告和亮点论文都行")
    assert intent.kind == "list" and intent.asked.tiers == ("Oral", "Spotlight")


def test_which_people_wrote_it_asks_for_the_authors() -> None:
    assert understand("想知道 Data Shapley in One Training Run 是哪些人写的").asked.authors_of


@pytest.mark.parametrize("tag", ["can you double check", "can you check?", "can you confirm?"])
def test_a_statement_with_a_check_asks_for_the_tier(tag: str) -> None:
    assert understand(f"i think the OpenHands paper was a spotlight? {tag}").kind == "tier"


def test_the_subject_before_the_frame_is_answered_not_refused(corpus: Assistant) -> None:
    result = answer(LABMATE, assistant=corpus)
    assert not result.abstained
    assert TEST_TIME_COMPUTE in [c.paper_id for c in result.citations]
