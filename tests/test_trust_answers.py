"""Issue 20 on the seed index, offline: Chinese follow-ups, the filters on a follow-up,
"compare them", and a question asked from a paper's card."""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, CitedAnswer, answer, open_assistant
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings
from rag.types import Filters

LIST = "Which papers study large language models?"


@pytest.fixture(scope="module")
def seeds(seed_settings: Settings, embeddings: LocalEmbeddings) -> Assistant:
    return open_assistant(seed_settings, embeddings=embeddings)


@pytest.fixture(scope="module")
def listed(seeds: Assistant) -> CitedAnswer:
    first = answer(LIST, assistant=seeds, k=10)
    assert not first.abstained and len(first.citations) >= 3, first.answer
    return first


def test_chinese_summary_of_the_second_one_is_answered_in_chinese(
    seeds: Assistant, listed: CitedAnswer
) -> None:
    second = listed.sources[1].paper
    result = answer("总结一下第二篇", assistant=seeds, previous=listed)
    assert not result.abstained, result.answer
    assert [c.paper_id for c in result.citations] == [second.id]
    assert result.answer.startswith("离线摘录式回答") and "方法：" in result.answer
    assert "上一个回答的来源 [2]" in result.scope_note


def test_chinese_tier_question_answers_from_the_records_in_chinese(
    seeds: Assistant, listed: CitedAnswer
) -> None:
    result = answer("其中哪些是口头报告？", assistant=seeds, previous=listed)
    assert not result.abstained
    assert result.answer.startswith("以下信息来自索引中的论文记录")
    assert "篇论文中" in result.answer


def test_a_follow_up_keeps_the_current_filter_and_says_so(
    seeds: Assistant, listed: CitedAnswer
) -> None:
    # No seed has a decision: the Oral filter leaves out the paper pointed at.
    result = answer(
        "summarize the second one", assistant=seeds, previous=listed, filters=Filters(["Oral"])
    )
    assert result.abstained and not result.citations
    assert "the current filter (Oral) leaves out [2]" in result.scope_note
    unfiltered = answer("summarize the second one", assistant=seeds, previous=listed)
    assert [c.paper_id for c in unfiltered.citations] == [listed.sources[1].paper.id]
    assert "without a new search" in unfiltered.scope_note


def test_compare_them_marks_the_first_four_for_the_table(
    seeds: Assistant, listed: CitedAnswer
) -> None:
    result = answer("compare them", assistant=seeds, previous=listed)
    cited = {c.paper_id for c in result.citations}
    compared = [result.sources[n - 1].paper.id for n in result.compare]
    assert len(compared) == min(4, len(listed.citations)) >= 2
    assert set(compared) == cited
    assert compared == [s.paper.id for s in listed.sources[: len(compared)]]
    if len(listed.citations) > 4:
        assert "compares the first 4" in result.scope_note


def test_a_question_from_a_card_is_answered_from_that_paper_alone(seeds: Assistant) -> None:
    paper = next(
        p for p in seeds.retriever.index.all_papers() if p.title == "Adaptive Transformer Programs"
    )
    result = answer(f'Summarize the paper "{paper.title}"', assistant=seeds, about=paper)
    assert not result.abstained
    assert [c.paper_id for c in result.citations] == [paper.id]
    assert [s.paper.id for s in result.sources] == [paper.id]


def test_a_new_question_is_searched_again_under_the_current_filter_and_k(
    seeds: Assistant, listed: CitedAnswer
) -> None:
    """Issue 20, item 2: the same question after the sources setting or the decision filter
    changed is a new search, not a reuse of the previous list."""
    again = answer(LIST, assistant=seeds, previous=listed, k=3)
    assert not again.scope_note and len(again.sources) <= 3
    orals = answer(LIST, assistant=seeds, previous=listed, filters=Filters(["Oral"]))
    assert not orals.scope_note  # no seed is an Oral: nothing of the old list comes back
    assert all(s.paper.tier == "Oral" for s in orals.sources)
    # "Which papers ...?" that names a listed title's method is a new question too.
    named = listed.sources[0].paper.title.split(":")[0]
    found = answer(f"Which papers use {named}?", assistant=seeds, previous=listed, k=3)
    assert not found.scope_note and len(found.sources) <= 3
