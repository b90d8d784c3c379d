"""Title records (issue 30): accepted papers whose abstract the corpus lacks are indexed by
title, name and authors, marked, and answered from their record, never from another paper.

A small real index (real Chroma, the bundled model): eight papers with abstracts from the
bundle and the no-abstract list's KAN, Tegmark's two other papers and VideoShield.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag.answer.pipeline import answer, open_assistant
from rag.common.similarity import terms
from rag.corpus.seeds import load_corpus
from rag.index.ingest import build_index
from rag.index.passages import chunk_paper
from rag.settings import BUNDLED_CORPUS, Settings
from rag.types import Paper
from tests.helpers import make_settings, run_cli
from ui.render import answer_markdown

KAN, VIDEOSHIELD = "Ozo7qJ5vZi", "uzz3qAYy0D"
TEGMARK = {KAN, "d63a4AM4hb", "k2ZVAzVeMP"}  # his three papers, all without an abstract here
WITH_ABSTRACT = 8


def bundled(name: str) -> list[dict[str, Any]]:
    text = (BUNDLED_CORPUS / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("conference")
    papers = bundled("iclr2025.jsonl")[:WITH_ABSTRACT]
    titles = [
        r for r in bundled("iclr2025_accepted_no_abstract.jsonl") if "Max Tegmark" in r["authors"]
    ]
    titles += [r for r in bundled("iclr2025_accepted_no_abstract.jsonl") if r["id"] == VIDEOSHIELD]
    assert {r["id"] for r in titles} == TEGMARK | {VIDEOSHIELD}
    (path / "papers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in papers))
    (path / "papers_no_abstract.jsonl").write_text("".join(json.dumps(r) + "\n" for r in titles))
    return path


def test_a_title_list_adds_each_paper_not_already_loaded_as_a_title_record(folder: Path) -> None:
    papers = load_corpus([folder]).papers
    records = [p for p in papers if not p.has_abstract]
    assert len(papers) == WITH_ABSTRACT + 4 and {p.id for p in records} == TEGMARK | {VIDEOSHIELD}
    kan = next(p for p in records if p.id == KAN)
    assert kan.decision == "Accept (Oral)" and "Max Tegmark" in kan.authors
    assert kan.source == "papers_no_abstract.jsonl" and kan.position == 1


def test_a_title_record_is_one_chunk_its_title() -> None:
    paper = Paper(id="t", title="KAN: Kolmogorov–Arnold Networks", abstract="")
    chunks = chunk_paper(paper, lambda texts: [len(t.split()) for t in texts], 256)
    assert [(c.text, c.start, c.end) for c in chunks] == [(paper.title + "\n", 0, 0)]


@pytest.fixture(scope="module")
def settings(folder: Path, tmp_path_factory: pytest.TempPathFactory, embeddings: Any) -> Settings:
    made = make_settings(tmp_path_factory.mktemp("index"), embedding={"bundled_vectors": False})
    build_index(made, [folder], embeddings=embeddings)
    return made


@pytest.fixture(scope="module")
def assistant(settings: Settings, embeddings: Any) -> Any:
    return open_assistant(settings, embeddings=embeddings)


@pytest.mark.slow
def test_a_paper_without_an_abstract_is_answered_from_its_record_alone(assistant: Any) -> None:
    result = answer("What does the KAN paper propose?", assistant=assistant)
    assert not result.abstained
    assert [c.paper_id for c in result.citations] == [KAN]  # no other paper's abstract
    assert result.citations[0].quote == "KAN: Kolmogorov–Arnold Networks"  # its title, as such
    cited = result.citations[0]
    assert (cited.evidence, cited.start, cited.end) == ("title", 0, len(cited.quote))
    assert "abstract not in the bundled corpus" in result.answer
    assert "Accept (Oral)" in result.answer and "Max Tegmark" in result.answer
    assert "its OpenReview page has it" in result.answer and "rag fetch" not in result.answer
    source = result.as_json()["sources"][0]
    assert source["paper_id"] == KAN and source["has_abstract"] is False
    assert "Max Tegmark" in source["authors"] and source["authors_ordered"] is False
    # The page links the record's OpenReview address: a copy of the text broke it ("https:"
    # then an invisible joiner, which stops the autolinks of untrusted text).
    shown = answer_markdown(result, 0)
    assert f"[OpenReview](https://openreview.net/forum?id={KAN})" in shown
    assert "\u2060//" not in shown


@pytest.mark.slow
@pytest.mark.parametrize(
    "question",
    [
        "Is there a paper called KAN?",  # the rest of the question only frames the name
        "KAN",  # the name alone
        "Not All Language Model Features Are One-Dimensionally Linear",  # the exact title
        "what does KAN do for learnable activation functions on edges",  # no word of its title
    ],
)
def test_a_title_record_is_found_by_its_name_or_title(assistant: Any, question: str) -> None:
    found = [r.paper.id for r in assistant.retriever.search(question)]
    if question.startswith("what does KAN do"):  # a name among other topic words: not lifted
        assert KAN not in found[:1]
    else:
        assert found[0] in TEGMARK


@pytest.mark.parametrize(
    "question",
    [
        "any work on not all language model features are one-dimensionally linear?",
        "any orals on not all language model features are one-dimensionally linear",
    ],
)
def test_a_list_that_writes_a_records_whole_title_names_it(assistant: Any, question: str) -> None:
    """In the page "what about backtracking improves generation safety" (joined to "any orals
    on jailbreaks?", a list) did not find that Oral: a list question looked up no title."""
    found = [r.paper.id for r in assistant.retriever.search(question)]
    assert found[0] in TEGMARK


@pytest.mark.slow
def test_a_title_record_asked_by_its_subtitle_comes_first_and_is_answered(assistant: Any) -> None:
    """Its subtitle, lower case, in a longer question (rag.retrieval.titles)."""
    question = "regulating diffusion-based video generation models via watermarking: what's new?"
    assert assistant.retriever.search(question)[0].paper.id == VIDEOSHIELD
    result = answer(question, assistant=assistant)
    assert not result.abstained and [c.paper_id for c in result.citations] == [VIDEOSHIELD]


@pytest.mark.slow
def test_a_topical_question_is_not_taken_for_a_records_title(assistant: Any) -> None:
    """A few of VideoShield's subtitle words, not in its order: a topic, not its title."""
    found = assistant.retriever.search("How do diffusion models generate video?")
    assert found and found[0].paper.has_abstract


@pytest.mark.slow
def test_a_title_record_is_not_found_by_its_titles_words_in_a_list(assistant: Any) -> None:
    found = assistant.retriever.search("Which papers study sparse autoencoders?")
    assert all(r.paper.has_abstract for r in found)


@pytest.mark.slow
def test_a_chinese_question_gets_the_mark_in_chinese(assistant: Any) -> None:
    result = answer("VideoShield 这篇论文讲了什么？", assistant=assistant)
    assert [c.paper_id for c in result.citations] == [VIDEOSHIELD]
    assert "随附语料库中没有这篇论文的摘要" in result.answer


@pytest.mark.slow
def test_a_persons_papers_include_those_without_an_abstract(assistant: Any) -> None:
    result = answer("Which papers did Max Tegmark co-author?", assistant=assistant)
    assert {c.paper_id for c in result.citations} == TEGMARK
    assert {s.paper.id for s in result.sources} == TEGMARK  # nothing else
    assert "Accept (Oral)" in result.answer and "Accept (Poster)" in result.answer


@pytest.mark.slow
def test_rag_search_json_says_whether_the_abstract_is_present(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(settings.store.index_dir)
    code, out, err = run_cli(["search", "KAN", "--json", "--index", index], capsys)
    assert code == 0, err
    first = json.loads(out)["results"][0]
    assert first["paper_id"] == KAN and first["has_abstract"] is False and first["abstract"] == ""
    assert "Max Tegmark" in first["authors"]


@pytest.mark.slow
def test_how_many_papers_answers_with_a_count_its_rule_and_the_list(assistant: Any) -> None:
    """The venue's name is not a topic word; title records count by their title."""
    result = answer(
        "How many papers at ICLR 2025 are about sparse autoencoders?", assistant=assistant
    )
    papers = assistant.retriever.index.all_papers()
    wanted = [p for p in papers if "sparse autoencoder" in f"{p.title} {p.abstract}".lower()]
    assert wanted  # Tegmark's switch sparse autoencoders, a title record
    assert result.answer.startswith(f"{len(wanted)} of the {len(papers)} papers in the index match")
    assert "Counting rule: a paper counts when its title or abstract contains" in result.answer
    assert "iclr" not in result.answer.split("Counting rule")[1].split("\n")[0].lower()
    assert "4 of the 12 papers have a title only" in result.answer
    assert {c.paper_id for c in result.citations} == {p.id for p in wanted}


@pytest.mark.slow
def test_a_count_under_a_tier_counts_among_that_tiers_papers(assistant: Any) -> None:
    result = answer("How many oral papers mention language models?", assistant=assistant)
    orals = [p for p in assistant.retriever.index.all_papers() if p.tier == "Oral"]
    wanted = [p for p in orals if terms("language models") <= terms(f"{p.title} {p.abstract}")]
    assert result.answer.startswith(
        f"{len(wanted)} of the {len(orals)} Oral papers in the index match"
    )
    titles_only = sum(not p.has_abstract for p in orals)
    assert f"{titles_only} of the {len(orals)} Oral papers have a title only" in result.answer
    assert {c.paper_id for c in result.citations} <= {p.id for p in wanted}
