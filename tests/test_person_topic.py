""" "any by percy liang on benchmarks?" listed all six of his papers: a person's list ignored
the topic the question asked of it. Now their papers on the topic are listed (the relevance a
list answer uses), with how many of theirs there are; a question that asks for all of them,
or for the others ("anything besides the SAE stuff?"), lists them all as before."""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, answer
from tests.test_sixth_page_session import then


def _person(corpus: Assistant, question: str) -> tuple[str, ...]:
    person = corpus.retriever.people.named(question, True)
    assert person is not None, question
    return person.paper_ids


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("any by percy liang on benchmarks?", "benchmarks"),
        ("sergey levine papers on offline rl", "offline reinforcement learning"),
        ("yoshua bengio gflownet papers", "gflownet"),
        (
            "list aviral kumar's iclr 2025 papers, im mostly interested in the RL for LLMs stuff",
            "reinforcement learning for llms",
        ),
        ("percy liang 关于 benchmark 的论文", "benchmark"),
        ("what has yoshua bengio published recently?", ""),
        ("Does Percy Liang have any oral papers this year?", ""),
        ("neel nanda iclr 2025 — anything besides the SAE stuff?", ""),
        ("which ICLR 2025 papers is yejin choi on?", ""),
        ("what is percy liang working on these days?", ""),
        ("Could you show me 3 papers from Chelsea Finn's group?", ""),
    ],
)
def test_the_topic_asked_of_a_person(corpus: Assistant, question: str, topic: str) -> None:
    people = corpus.retriever.people
    person = people.named(question, True)
    assert person is not None
    assert people.topic(question, person) == topic


def test_a_persons_papers_on_a_topic(corpus: Assistant) -> None:
    question = "any by percy liang on benchmarks?"
    theirs = _person(corpus, question)
    result = answer(question, assistant=corpus)
    cited = [
        s.paper for s in result.sources if s.paper.id in {c.paper_id for c in result.citations}
    ]
    assert cited and all(p.id in theirs for p in cited)
    assert "AutoBencher: Towards Declarative Benchmark Construction" in [p.title for p in cited]
    assert all("bench" in f"{p.title} {p.abstract}".lower() for p in cited)
    assert result.counted == len(cited) < len(theirs)
    assert f"of their {len(theirs)}" in result.answer.splitlines()[0]
    assert 'ask "papers by Percy Liang" for all of them' in result.answer
    zh = answer("percy liang 关于 benchmark 的论文", assistant=corpus)
    assert zh.answer.startswith("索引中作者包括 Percy Liang 且关于 benchmark 的论文")
    assert [c.paper_id for c in zh.citations] == [c.paper_id for c in result.citations]


def test_all_of_a_persons_papers_when_no_topic_is_asked(corpus: Assistant) -> None:
    for question in (
        "what has yoshua bengio published recently?",
        "neel nanda iclr 2025 — anything besides the SAE stuff?",
    ):
        result = answer(question, assistant=corpus)
        assert result.counted == len(_person(corpus, question)), question


def test_none_of_a_persons_papers_on_the_topic_is_said(corpus: Assistant) -> None:
    question = "papers by percy liang about protein folding"
    result = answer(question, assistant=corpus)
    theirs = _person(corpus, question)
    head = result.answer.splitlines()[0]
    assert head.startswith(f"None of the {len(theirs)} papers with Percy Liang")
    assert "protein folding" in head
    assert {c.paper_id for c in result.citations} <= set(theirs)
    assert len(result.citations) == min(len(theirs), corpus.settings.retrieval.k)


def test_interp_is_interpretability(corpus: Assistant) -> None:
    """ "neel nanda interp papers" was read as "inter" and none of his papers was on it."""
    result = answer("neel nanda interp papers iclr 2025", assistant=corpus)
    assert "interpretability" in result.answer.splitlines()[0]
    assert result.counted == len(_person(corpus, "neel nanda papers"))


def test_show_the_rest_of_a_persons_papers_on_a_topic(corpus: Assistant) -> None:
    first = answer("aviral kumar papers on test-time compute or RL for LLMs", assistant=corpus)
    assert len(first.citations) == corpus.settings.retrieval.k < first.counted
    rest = then("show the rest", first, corpus)
    assert len(rest.citations) == first.counted
    assert rest.answer.splitlines()[0] == first.answer.splitlines()[0]


def test_who_are_its_authors_of_a_paper_named_by_its_author(corpus: Assistant) -> None:
    """ "no, I meant the snell paper. who are its authors?" listed his papers, not their
    authors ("who are its authors" inside a longer question was not read as asking them)."""
    first = answer("papers on test-time compute scaling", assistant=corpus)
    assert any("Snell" in " ".join(s.paper.authors) for s in first.sources)
    result = then("no, I meant the snell paper. who are its authors?", first, corpus)
    assert not result.answer.startswith("Papers with")
    cited = [s.paper for s in result.sources if s.paper.id == result.citations[0].paper_id]
    assert "Snell" in " ".join(cited[0].authors)
    assert all(name in result.answer for name in cited[0].authors)
