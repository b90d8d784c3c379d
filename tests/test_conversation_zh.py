"""Chinese follow-ups resolve like their English versions (issue 20, item 7)."""

from __future__ import annotations

import pytest

from rag.answer.references import resolve
from rag.lang.intent import understand
from rag.lang.pointers import is_comparison
from tests.test_conversation import CITED, SOURCES, paper


def numbers(question: str) -> tuple[int, ...] | None:
    found = resolve(question, SOURCES, CITED)
    return None if found is None else found.numbers


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("总结一下第二篇", (2,)),
        ("第2篇论文的方法是什么？", (2,)),
        ("第三个讲了什么？", (3,)),
        ("最后一篇的作者是谁？", (5,)),
        ("比较一下前两篇", (1, 2)),
        ("它有多快？", (1,)),
        ("这篇论文用了什么数据集？", (1,)),
        ("它们用什么数据训练？", (1, 2, 3)),
        ("比较一下它们", (1, 2, 3)),
        ("这两篇有什么区别？", (1, 2)),
        ("介绍一下 FlexPrefill 这篇论文", (2,)),
    ],
)
def test_chinese_pointers(question: str, expected: tuple[int, ...]) -> None:
    assert numbers(question) == expected


def test_chinese_tier_question_filters_by_tier() -> None:
    found = resolve("其中哪些是口头报告？", SOURCES, CITED)
    assert found is not None and (found.how, found.tier, found.numbers) == ("tier", "Oral", (2,))


def test_chinese_metadata_and_comparison() -> None:
    found = resolve("第二篇的作者是谁？", SOURCES, CITED)
    assert found is not None and found.asks == ("authors",)
    assert is_comparison("这两篇有什么区别？") and not is_comparison("第二篇讲了什么")
    assert is_comparison("how do they differ?") and is_comparison("what are the differences?")
    assert not is_comparison("what is new in the Differential Transformer?")


@pytest.mark.parametrize("question", ["作者是谁？", "谁写的？", "作者有哪些？"])
def test_a_bare_chinese_authors_question_asks_the_papers_just_shown(question: str) -> None:
    """ "作者是谁？" read as "author writer" and was refused, where "who are the authors?" asks
    the cited papers (a session in Chromium)."""
    found = resolve(question, SOURCES, CITED)
    assert found is not None and found.asks == ("authors",)
    assert found.numbers == tuple(range(1, CITED + 1))


@pytest.mark.slow  # over a second on 2 cores
def test_the_intent_says_once_whether_a_question_compares() -> None:
    """The judge reads `Intent.compare`, made from the same word list, not the question."""
    assert understand("How does FlexPrefill differ from MInference?").compare
    assert understand("FlexPrefill 和 MInference 有什么区别？").compare
    assert understand("FlexPrefill vs. MInference").compare
    assert not understand("what is new in the Differential Transformer?").compare
    assert not understand("FlexPrefill 的方法是什么？").compare


@pytest.mark.parametrize(
    "question",
    [
        "大语言模型的长上下文推理如何加速？",
        "有哪些关于机器遗忘评测的论文？",
        "扩散模型如何生成视频？",
    ],
)
@pytest.mark.slow  # over a second on 2 cores
def test_new_chinese_questions_do_not_resolve(question: str) -> None:
    assert numbers(question) is None


# Issue 20, item 9: ordinary words are not names.
ORDINARY = [
    SOURCES[1],
    paper("f", "Fast and Accurate Blind Flexible Docking", "Poster"),
    paper("g", "Efficient Large Language Models: A Survey", "Poster"),
    paper("h", "Large Scale Thing", "Poster"),
]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("and how fast is it?", (1,)),
        ("is it fast?", (1,)),
        ("what about the fast one?", None),
        ("and the efficient one?", None),
        ("the large one?", None),
        ("tell me about the blind flexible docking paper", (2,)),
    ],
)
def test_ordinary_title_words_name_no_paper(
    question: str, expected: tuple[int, ...] | None
) -> None:
    found = resolve(question, ORDINARY, 1)
    assert (None if found is None else found.numbers) == expected


def test_a_one_word_title_head_that_is_no_english_word_is_a_name() -> None:
    listed = [*ORDINARY, paper("p", "Palu: KV-Cache Compression with Low-Rank Projection", "Oral")]
    found = resolve("how does Palu compress the cache?", listed, 2)
    assert found is not None and found.numbers == (5,)
    topic = [*ORDINARY, paper("t", "Attention: Where It Goes", "Oral")]
    assert resolve("how does attention work in transformers?", topic, 2) is None
