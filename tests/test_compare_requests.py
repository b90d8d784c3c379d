"""One comparison however it is asked for, keeping the reader's numbers (issue 31, items 1-2).

The button's label typed, "compare them", "compare the first two" and "比较一下" resolve to the
same papers of the previous list, through one decision (`rag.answer.references.compares_all`
and `resolve`); the comparison keeps the numbers and order of the list the reader saw.
"""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, CitedAnswer, answer, open_assistant
from rag.answer.references import resolve
from rag.lang.messages import MESSAGES
from rag.lang.pointers import compares_all
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings
from tests.test_conversation import CITED, SOURCES

LIST = "Which papers study large language models?"
LABELS = [MESSAGES[lang][key] for lang in MESSAGES for key in ("compare_cited", "compare_top")]


@pytest.mark.parametrize(
    "question",
    [*LABELS, "compare them", "Compare these papers, please", "比较一下", "请对比一下这些论文"],
)
def test_requests_to_compare_the_list_mean_the_cited_papers(question: str) -> None:
    assert compares_all(question)
    found = resolve(question, SOURCES, CITED)
    assert found is not None and found.numbers == (1, 2, 3)


@pytest.mark.parametrize(
    "question",
    ["How does attention compare to RNNs?", "Which papers compare optimizers?", "比较一下前两篇",
     "compare SqueezeAttention and Palu", "Summarize the cited papers"],
)  # fmt: skip
def test_comparisons_naming_papers_or_topics_are_not_the_whole_list(question: str) -> None:
    assert not compares_all(question)


def test_with_one_paper_cited_the_top_three_are_compared() -> None:
    found = resolve(MESSAGES["en"]["compare_top"], SOURCES, 1)
    assert found is not None and found.numbers == (1, 2, 3)


@pytest.fixture(scope="module")
def seeds(seed_settings: Settings, embeddings: LocalEmbeddings) -> Assistant:
    return open_assistant(seed_settings, embeddings=embeddings)


@pytest.fixture(scope="module")
def listed(seeds: Assistant) -> CitedAnswer:
    first = answer(LIST, assistant=seeds, k=10)
    assert not first.abstained and len(first.citations) >= 3, first.answer
    return first


def ids(result: CitedAnswer, numbers: tuple[int, ...] | range) -> list[str]:
    return [result.sources[n - 1].paper.id for n in numbers]


@pytest.mark.parametrize(
    "question", ["Compare the cited papers", "compare them", "比较一下", "Compare the top sources"]
)
def test_every_way_of_asking_compares_the_same_papers_under_their_numbers(
    seeds: Assistant, listed: CitedAnswer, question: str
) -> None:
    result = answer(question, assistant=seeds, previous=listed)
    cited = max(c.n for c in listed.citations)
    expected = ids(listed, range(1, min(cited, 4) + 1))
    assert ids(result, result.compare) == expected
    assert result.compare == tuple(range(1, len(expected) + 1))  # the numbers the reader saw
    for citation in result.citations:  # the text cites each paper by its old number
        assert listed.sources[citation.n - 1].paper.id == citation.paper_id


def test_compare_the_first_two_keeps_their_numbers_and_the_next_ordinal_follows(
    seeds: Assistant, listed: CitedAnswer
) -> None:
    compared = answer("compare the second and the first", assistant=seeds, previous=listed)
    assert ids(compared, compared.compare) == ids(listed, (1, 2))
    for citation in compared.citations:
        assert listed.sources[citation.n - 1].paper.id == citation.paper_id
    second = answer("总结一下第二篇", assistant=seeds, previous=compared)
    assert [c.paper_id for c in second.citations] == ids(listed, (2,))


def test_compare_them_twice_gives_the_same_order(seeds: Assistant, listed: CitedAnswer) -> None:
    once = answer("compare them", assistant=seeds, previous=listed)
    twice = answer("compare them", assistant=seeds, previous=once)
    assert ids(twice, twice.compare) == ids(once, once.compare)


def test_more_than_four_says_which_four_and_why(seeds: Assistant) -> None:
    wide = answer(LIST, assistant=seeds, k=10)
    asked = "compare papers 1, 2, 3, 4 and 5"
    result = answer(asked, assistant=seeds, previous=wide)
    assert ids(result, result.compare) == ids(wide, (1, 2, 3, 4))
    assert "[1], [2], [3], [4]" in result.scope_note and "[5] left out" in result.scope_note
    assert "2 to 4" in result.scope_note


@pytest.mark.parametrize("question", ["compare [1] and [3]", "compare the third and the first"])
def test_papers_apart_in_the_list_keep_their_own_numbers(
    seeds: Assistant, listed: CitedAnswer, question: str
) -> None:
    """The text, the table and the source list show [1] and [3], never [3] as [2]."""
    result = answer(question, assistant=seeds, previous=listed)
    assert result.compare == (1, 3)
    assert ids(result, result.compare) == ids(listed, (1, 3))
    assert {c.n for c in result.citations} == {1, 3}
    for citation in result.citations:
        assert listed.sources[citation.n - 1].paper.id == citation.paper_id
    assert "[3]" in result.answer and "[2]" not in result.answer
    second = answer("summarize [3]", assistant=seeds, previous=result)
    assert [c.paper_id for c in second.citations] == ids(listed, (3,))
