"""A list on a topic reaches the whole conference: the title records (accepted papers whose
abstract the corpus lacks) whose titles are closest to the question are judged by their titles,
by the same rule as the abstracts, and those that belong are named after the quoted papers."""

from __future__ import annotations

from rag.answer.pipeline import Assistant, answer
from rag.types import Filters


def test_a_topic_list_names_the_title_records_on_its_subject(corpus: Assistant) -> None:
    result = answer("What is new in 3D Gaussian splatting?", assistant=corpus)
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
    # the quoted papers are as many as the sources setting; the note counts the records too
    assert len(quoted) == corpus.settings.retrieval.k
    pool = corpus.retriever.calibration.list_pool
    assert pool < result.checked <= pool + corpus.retriever.calibration.list_records
    assert f"The first {len(result.citations)} are shown" in result.judge_note


def test_a_list_that_asks_a_number_gets_that_many(corpus: Assistant) -> None:
    result = answer("list 3 papers on 3D Gaussian splatting", assistant=corpus)
    assert len(result.citations) == 3


def test_a_question_that_is_no_list_names_no_title_record_it_does_not_ask_for(
    corpus: Assistant,
) -> None:
    result = answer("How does 3D Gaussian splatting render scenes in real time?", assistant=corpus)
    assert all(c.has_abstract for c in result.citations), result.answer


def test_title_records_are_found_by_their_titles_under_the_filters(corpus: Assistant) -> None:
    found = corpus.retriever.title_records("3D Gaussian splatting", 5)
    assert len(found) == 5 and not any(r.paper.has_abstract for r in found)
    assert "Gaussian" in found[0].paper.title
    spotlights = corpus.retriever.title_records("3D Gaussian splatting", 5, Filters(["Spotlight"]))
    assert spotlights and all(r.paper.tier == "Spotlight" for r in spotlights)
    assert corpus.retriever.title_records("3D Gaussian splatting", 0) == []
