"""A paper described rather than named ("关于用 X 做 Y 的那篇论文", "which paper was that?") may be
one known only by its title: it comes first when its title is by far the closest of all.

The whole bundle (real Chroma, the bundled model, its 1,593 title records): there, neither the
record's name nor its title's words find these papers; the description does.
"""

from __future__ import annotations

from typing import Any

import pytest

from rag.answer.pipeline import answer, open_assistant
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def assistant(corpus_settings: Settings, embeddings: LocalEmbeddings) -> Any:
    return open_assistant(corpus_settings, embeddings=embeddings)


@pytest.mark.parametrize(
    ("question", "record"),
    [
        (
            "那篇用 Group Position Embedding 把 layout 信息加进文档理解的论文讲了什么？",
            "Dj9a4zQsSl",
        ),
        ("a paper on optimal partial transport for partial graph matching?", "uDXFOurrHM"),
    ],
)
def test_a_described_record_comes_first_and_is_answered_from_its_record(
    assistant: Any, question: str, record: str
) -> None:
    found = assistant.retriever.search(question)
    assert (found[0].paper.id, found[0].asked_by) == (record, "title")
    result = answer(question, assistant=assistant)
    assert [c.paper_id for c in result.citations] == [record]


def test_without_a_description_the_same_words_are_a_topic(assistant: Any) -> None:
    found = assistant.retriever.search("How is group position embedding used for document layout?")
    assert found[0].paper.has_abstract
