"""Follow-ups as a new conversation set typed them (data/eval/conversations_new.jsonl, written
by a helper who saw no code nor result): courtesy around a pointer, bare numbers compared, a
typo in an ordinal, "either of those", and a question about nothing but the papers just shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.answer.pipeline import Assistant
from rag.answer.references import resolve
from rag.session import Session
from rag.settings import Settings
from tests.helpers import point_app_at
from tests.test_conversation import CITED, SOURCES, numbers


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("compare the first two pls", (1, 2)),
        ("the 2nd one please, what datasets?", (2,)),
        ("compare 1 and 3", (1, 3)),
        ("how do 2 vs 4 differ?", (2, 4)),
    ],
)
def test_courtesy_and_bare_numbers_in_a_comparison(question: str, expected: tuple) -> None:
    assert numbers(question) == expected


@pytest.mark.parametrize(
    "question",
    ["are there 2 or 3 papers on diffusion for proteins?", "what is new in diffusion models?"],
)
def test_numbers_and_topics_outside_a_comparison_point_at_nothing(question: str) -> None:
    assert numbers(question) is None


def test_either_of_those_filters_by_tier() -> None:
    found = resolve("are either of those spotlights?", SOURCES, CITED)
    assert found is not None and found.tier == "Spotlight" and found.numbers == (3,)


@pytest.mark.parametrize(
    ("question", "asks"), [("who are the authors?", ("authors",)), ("tell me more", ())]
)
def test_a_question_about_nothing_new_means_the_papers_shown(question: str, asks: tuple) -> None:
    found = resolve(question, SOURCES, CITED)
    assert found is not None and found.numbers == (1, 2, 3) and found.asks == asks
    alone = resolve(question, SOURCES, 1)  # after an answer about one paper: that paper
    assert alone is not None and alone.numbers == (1,)


def test_a_mistyped_ordinal_is_read_as_meant(corpus: Assistant) -> None:
    session = Session(corpus)
    first = session.answer("what work is there on protein design with generative models?")
    second = session.answer("secnd one?")
    assert not second.abstained
    assert [c.paper_id for c in second.citations] == [first.sources[1].paper.id]


def test_who_are_the_authors_after_one_paper_answers_from_its_record(corpus: Assistant) -> None:
    session = Session(corpus)
    session.answer("explain FlexPrefill in simple terms")
    result = session.answer("who are the authors?")
    assert not result.abstained
    assert result.citations[0].paper_id == "OfjIlbelrT"  # FlexPrefill
    assert "Xunhao Lai" in result.answer


@pytest.mark.parametrize(
    "question", ["what datasets?", "any limitations?", "is the code released?", "代码有开源吗"]
)
def test_asking_only_what_one_asks_of_a_paper_means_the_papers_shown(question: str) -> None:
    assert numbers(question) == (1, 2, 3)
    assert resolve(question, SOURCES, 1) is not None


@pytest.mark.parametrize(
    "question",
    ["what datasets exist for code generation?", "扩散模型是什么？", "GNN 的表达能力"],
)
def test_a_new_subject_is_no_follow_up(question: str) -> None:
    assert numbers(question) is None


@pytest.mark.slow  # over a second on 2 cores
def test_the_page_answers_who_are_the_authors_after_one_paper(
    corpus_settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In the page (Streamlit's AppTest on the bundled index), a follow-up that points at
    nothing: "who are the authors?" after an answer about FlexPrefill."""
    from streamlit.testing.v1 import AppTest

    point_app_at(monkeypatch, corpus_settings.store.index_dir, tmp_path / "feedback.jsonl")
    app = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
    at = AppTest.from_file(app, default_timeout=180).run()
    at.chat_input[0].set_value("explain FlexPrefill in simple terms").run()
    at.chat_input[0].set_value("who are the authors?").run()
    assert not at.exception, at.exception
    second = at.session_state["turns"][1].answer
    assert not second.abstained
    assert [c.paper_id for c in second.citations] == ["OfjIlbelrT"]
    shown = " ".join(m.value for m in at.chat_message[3].markdown)
    assert "Xunhao Lai" in shown, shown


# A later set (data/eval/conversations_late.jsonl, its dev half): bare numbers that open a
# follow-up, "that paper" in a long question, and what one asks of papers in other words.
@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("3?", (3,)),
        ("2 pls", (2,)),
        ("1 and 2, which of them need white-box access?", (1, 2)),
        ("1 和 3 分别用的什么数据", (1, 3)),
    ],
)
def test_bare_numbers_that_open_a_follow_up_are_positions(question: str, expected: tuple) -> None:
    assert numbers(question) == expected


@pytest.mark.parametrize(
    "question",
    ["3 papers on diffusion for proteins", "3篇关于蛋白质设计的论文", "10 ways to prune"],
)
def test_a_number_of_papers_opening_a_new_question_is_no_position(question: str) -> None:
    assert numbers(question) is None


def test_that_paper_points_however_long_the_question() -> None:
    question = (
        "thanks! what exactly did that paper conclude about sparse attention versus simply "
        "training a longer context model?"
    )
    assert numbers(question) == (1,)


def test_that_paper_on_something_else_is_no_pointer() -> None:
    question = (
        "I saw that paper on video diffusion distillation yesterday, what is its main result?"
    )
    assert numbers(question) is None


@pytest.mark.parametrize(
    "question", ["any limitations the authors admit to?", "so which is cheaper to actually run"]
)
def test_what_one_asks_of_papers_in_other_words_means_the_papers_shown(question: str) -> None:
    assert numbers(question) == (1, 2, 3)


def test_a_bare_number_after_a_list_answers_that_paper(corpus: Assistant) -> None:
    session = Session(corpus)
    first = session.answer("how do people make speculative decoding faster?")
    second = session.answer("2?")
    assert [c.paper_id for c in second.citations] == [first.sources[1].paper.id]


@pytest.mark.parametrize(
    "question",
    ["哪些是口头报告？", "哪篇拿了 oral", "其中哪些是海报？", "只看亮点论文", "any orals?"],
)
def test_a_tier_alone_asks_of_the_papers_shown(question: str) -> None:
    found = resolve(question, SOURCES, CITED)
    assert (
        found is not None
        and found.tier
        and found.numbers == tuple(n for n in (1, 2, 3) if SOURCES[n - 1].tier == found.tier)
    )


@pytest.mark.parametrize(
    "question",
    ["推测解码方向有哪些口头报告（oral）论文？", "扩散模型有哪些oral", "any orals on jailbreaks?"],
)
def test_a_tier_with_a_subject_of_its_own_is_a_new_question(question: str) -> None:
    assert resolve(question, SOURCES, CITED) is None


def test_a_chinese_tier_question_on_a_new_subject_is_searched(corpus: Assistant) -> None:
    """In the page: after KV-cache papers, "which speculative decoding papers are orals?" in
    Chinese answered "none of the 5 papers is an oral" about the KV-cache papers."""
    session = Session(corpus)
    session.answer("any papers on kv cache compression for long context?")
    result = session.answer("推测解码方向有哪些口头报告（oral）论文？")
    assert not result.abstained
    assert result.citations[0].paper_id == "vo9t20wsmd"  # Faster Cascades via Speculative ...
    assert {s.paper.tier for s in result.sources} == {"Oral"}


def test_which_ones_after_one_cited_paper_means_all_shown() -> None:
    """In the page, a protein overview cited one paper; "which ones are spotlights" said "None
    of the 1 papers is a Spotlight" though its source [4] was one."""
    found = resolve("which ones are spotlights", SOURCES, 1)
    assert found is not None and found.numbers == (3,) and found.among == (1, 2, 3, 4, 5)
    it = resolve("is it an oral?", SOURCES, 1)  # the paper cited, alone
    assert it is not None and it.numbers == () and it.among == (1,)


def test_a_tier_question_about_one_paper_is_answered_in_the_singular(corpus: Assistant) -> None:
    session = Session(corpus)
    session.answer("explain FlexPrefill in simple terms")
    result = session.answer("is it an oral?")
    assert "It is an Oral:" in result.answer and "of the 1 papers" not in result.answer
    assert [c.paper_id for c in result.citations] == ["OfjIlbelrT"]
