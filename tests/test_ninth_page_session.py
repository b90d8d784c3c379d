"""Defects a researcher met in a ninth blind session in Chromium (44 turns; questions written
before any run, by someone who did not read the code), each asserted as the researcher
expected it."""

from __future__ import annotations

from rag.answer.pipeline import Assistant, answer
from rag.lang.messages import message
from tests.test_sixth_page_session import then


def test_what_the_index_cannot_hold_is_said_not_searched(corpus: Assistant) -> None:
    """ "what's the acceptance rate of iclr 2025 and where is it held" (after a paper) gave
    that paper's decision; "有没有 NeurIPS 2024 的相关论文" listed papers matching "2024"."""
    first = answer("language models learn to mislead humans via rlhf", assistant=corpus)
    for question in (
        "what's the acceptance rate of iclr 2025 and where is it held",
        "有没有 NeurIPS 2024 的相关论文",
        "Which NeurIPS 2023 paper introduced Tree of Thoughts prompting?",
    ):
        result = then(question, first, corpus)
        assert result.abstained and not result.citations, question
        assert "no other venue" in result.answer or "没有其他会议" in result.answer, question
    # A venue named in passing asks nothing of it.
    passing = answer(
        "Context: I review for NeurIPS. which papers propose new benchmarks for code generation?",
        assistant=corpus,
    )
    assert passing.citations and not passing.abstained


def test_show_more_after_a_list_that_found_more_lists_them(corpus: Assistant) -> None:
    """ "show more" after a list that found more papers than it showed gave more sentences of
    the same papers; after one paper it still asks for more of that paper."""
    first = answer("papers on kv cache compression", assistant=corpus)
    assert first.matched > len(first.citations)
    for question in ("show more", "再多列几篇"):
        more = then(question, first, corpus)
        assert len(more.citations) == first.matched, question
    named = answer("differential transformer", assistant=corpus)
    again = then("show more", named, corpus)
    assert [c.paper_id for c in again.citations] == [named.citations[0].paper_id]


def test_a_pointer_then_any_code_asks_for_code(corpus: Assistant) -> None:
    """ "the third one - any code?" summarised the third paper, with no word on code."""
    first = answer("papers on benchmarks for computer science knowledge of LLMs", assistant=corpus)
    third = first.sources[2].paper
    result = then("the third one - any code?", first, corpus)
    assert [c.paper_id for c in result.citations] == [third.id]
    assert message("no_code") in result.answer  # metabench's abstract links no code


def test_a_paper_described_in_a_question_is_found_among_title_records(corpus: Assistant) -> None:
    """Papers known by their titles only were found by name or title alone: "kolmogorov arnold
    netwrks paper - was it accepted?" answered "no abstract covers this" (KAN is an Oral);
    "any paper showing that rlhf makes models mislead humans" cited a reward-model paper."""
    for question, title in (
        ("kolmogorov arnold netwrks paper - was it accepted?", "KAN: Kolmogorov"),
        ("any paper showing that rlhf makes models mislead humans", "Language Models Learn to"),
    ):
        result = answer(question, assistant=corpus)
        assert result.citations and result.citations[0].title.startswith(title), question
        assert not result.sources[0].paper.has_abstract
    assert (
        "Accept (Oral)"
        in answer("kolmogorov arnold netwrks paper - was it accepted?", assistant=corpus).answer
    )
    # A topic asked with "any paper on" is still a list, not the record closest to it.
    topic = answer("any paper on consistency models?", assistant=corpus)
    assert len(topic.citations) > 1


def test_which_of_these_works_best_puts_their_results_side_by_side(corpus: Assistant) -> None:
    """ "这些论文里哪篇效果最好" answered "none of the 1 papers is about '论文里哪篇效果最好'";
    "which of these is better?" said none is about "better"."""
    first = answer("papers on kv cache compression", assistant=corpus)
    for question in ("which of these is better?", "这些论文里哪篇效果最好"):
        result = then(question, first, corpus)
        assert len(result.compare) >= 2 and len(result.citations) >= 2, question
        assert "None of the" not in result.answer and "没有一篇" not in result.answer, question


def test_a_chinese_topic_then_which_are_there_is_a_list(corpus: Assistant) -> None:
    """ "时间序列预测的 foundation model 有哪些" cited Time-MoE alone, as an answer, not a list;
    "FlexPrefill 的创新点有哪些？" stays about FlexPrefill."""
    result = answer("时间序列预测的 foundation model 有哪些", assistant=corpus)
    assert result.checked > len(result.sources) and len(result.citations) >= 3
    named = answer("FlexPrefill 的创新点有哪些？", assistant=corpus)
    assert {c.paper_id for c in named.citations} == {named.sources[0].paper.id}
    assert named.answer.count("[1]") >= 2  # its summary, not one list line
