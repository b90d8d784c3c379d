"""A list on a topic reaches the whole conference: the title records (accepted papers whose
abstract the corpus lacks) whose titles are closest to the question are judged by their titles,
by the same rule as the abstracts, and those that belong are named after the quoted papers."""

from __future__ import annotations

from rag.answer.pipeline import Assistant, answer
from rag.types import Filters


def test_a_topic_list_names_the_title_records_on_its_subject(corpus: Assistant) -> None:
    result = answer("What is new in 3D Gaussian splatting?", assistant=corpus, k=20)
    records = [c for c in result.citations if not c.has_abstract]
    quoted = [c for c in result.citations if c.has_abstract]
    assert records and quoted, result.answer
    # after every quoted paper, each its own line: its record, its title as the evidence
    assert max(c.n for c in quoted) < min(c.n for c in records)
    for c in records:
        assert "gaussian splatting" in c.title.casefold(), c.title
        assert c.evidence == "title" and c.quote == result.sources[c.n - 1].paper.title
        line = next(x for x in result.answer.splitlines() if f"[{c.n}]" in x)
        assert "abstract not in the bundled corpus" in line
    # the title records checked are counted in the note
    pool = corpus.retriever.calibration.list_pool
    assert pool < result.checked <= pool + corpus.retriever.calibration.list_records


def test_the_sources_setting_is_the_most_a_list_shows(corpus: Assistant) -> None:
    """The papers quoted come first; a list shows k in all, so "the last one" is the last
    line the reader sees."""
    result = answer("What is new in 3D Gaussian splatting?", assistant=corpus)
    assert len(result.sources) == len(result.citations) == corpus.settings.retrieval.k
    assert all(c.has_abstract for c in result.citations)


def test_a_list_that_asks_a_number_gets_that_many(corpus: Assistant) -> None:
    result = answer("list 3 papers on 3D Gaussian splatting", assistant=corpus)
    assert len(result.citations) == 3


def test_a_question_that_is_no_list_names_no_title_record_it_does_not_ask_for(
    corpus: Assistant,
) -> None:
    result = answer("How does 3D Gaussian splatting render scenes in real time?", assistant=corpus)
    assert all(c.has_abstract for c in result.citations), result.answer


def test_title_records_are_found_by_their_titles_under_the_filters(corpus: Assistant) -> None:
    search = corpus.retriever.search
    found = search("3D Gaussian splatting", k=5, with_records=5)
    assert all(r.paper.has_abstract for r in found[:5])
    records = found[5:]
    assert len(records) == 5 and not any(r.paper.has_abstract for r in records)
    assert "Gaussian" in records[0].paper.title
    spotlights = search(
        "3D Gaussian splatting", k=5, filters=Filters(["Spotlight"]), with_records=5
    )
    assert spotlights[5:] and all(r.paper.tier == "Spotlight" for r in spotlights)
    assert all(r.paper.has_abstract for r in search("3D Gaussian splatting", k=5))


def test_title_records_do_not_decide_whether_a_question_is_answered(corpus: Assistant) -> None:
    """Whether anything answers is the abstracts' to say: with the records' titles counted, a
    diluted list question passed as answerable and was judged on all its words (1 of the 3
    asked for) instead of its topic alone; a question nothing answers stayed refused only
    while no record's title came close."""
    result = answer(
        "im pretty new to diffusion models for protein design, can you recommend 3 papers "
        "from this year to start with",
        assistant=corpus,
    )
    assert len(result.citations) == 3 and all(c.has_abstract for c in result.citations)
    refused = answer("关于大模型在美国法庭文件中编造判例引用的研究发现了什么？", assistant=corpus)
    assert refused.abstained
