"""Authors: names found as users write them, and questions answered from the records (issue 30).

The name index is tested on papers built here (fast); the answers on the bundled corpus
(slow): "papers by X" lists X's papers and nothing else, "who proposed X?" gives the record's
authors, "Is X an oral?" its decision, and a tier word filters like the sidebar.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag.answer.pipeline import answer
from rag.lang.intent import read_question, without_venue
from rag.retrieval.people import AuthorIndex, absent_name
from rag.settings import BUNDLED_CORPUS, Settings
from rag.types import Paper
from tests.helpers import point_app_at


def paper(pid: str, *authors: str) -> Paper:
    return Paper(id=pid, title=f"Paper {pid}", abstract="An abstract.", authors=authors)


PAPERS = [
    paper("a", "Max Tegmark", "Ziming Liu"),
    paper("b", "Max Tegmark", "Jörg K.H. Franke"),
    paper("c", "Florian Tramèr", "Yoshua Bengio"),
    paper("d", "Yoshua Bengio", "Samy Bengio"),
    paper("e", "Michael W. Mahoney", "Rank Li"),
    paper("f", "Julian Jordan"),
]


@pytest.mark.parametrize(
    ("question", "ids"),
    [
        ("Which papers did Max Tegmark co-author?", ("a", "b")),
        ("papers by max tegmark", ("a", "b")),
        ("Florian Tramer papers", ("c",)),  # without the accent
        ("papers by Y. Bengio", ("c", "d")),  # the first name as an initial
        ("Michael Mahoney 的论文有哪些？", ("e",)),  # no middle initial, in a Chinese question
        ("did Joerg Franke have papers this year", ("b",)),  # ö written oe
        ("what did max tegmrk publish", ("a", "b")),  # a slip in the surname, papers asked for
        ("Tegmark papers", ("a", "b")),  # a surname alone, capitalised, one author has it
    ],
)
def test_a_person_is_found_as_users_write_the_name(question: str, ids: tuple[str, ...]) -> None:
    person = AuthorIndex.build(PAPERS).match(question, read_question(question).people)
    assert person is not None and person.paper_ids == ids


@pytest.mark.parametrize(
    "question",
    [
        "What is low rank adaptation?",  # "rank" is a surname here and an English word
        "how does bengio scale",  # two authors are called Bengio: a surname alone is no one
        "papers on liu's method",  # a short surname
        # the one Jordan of the index is Julian: another first name written before it
        "Is Michael I. Jordan an author of any paper this year?",
    ],
)
def test_words_that_are_not_one_persons_name_name_no_one(question: str) -> None:
    assert AuthorIndex.build(PAPERS).match(question, read_question(question).people) is None


# How often each word occurs in the indexed chunks: topic words are common, names are not.
CHUNKS = {"vision": 300, "transform": 500, "flow": 200, "network": 900, "bayesian": 60}


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("papers by Tri Dao", "Tri Dao"),
        ("What did Geoffrey Hinton publish at ICLR 2025?", "Geoffrey Hinton"),
        ("Fei-Fei Li 的论文有哪些？", "Fei-Fei Li"),
        ("Is Michael I. Jordan an author of any paper this year?", "Michael I. Jordan"),
        ("Which papers did Google DeepMind publish?", "Google DeepMind"),  # no affiliations
    ],
)
def test_a_person_no_paper_lists_is_told_apart_from_a_topic(question: str, name: str) -> None:
    assert read_question(question).people
    assert absent_name(question, CHUNKS) == name


# First names of the indexed authors (AuthorIndex.first_names): "ray" and "long" are some.
FIRST_NAMES = frozenset({"andrej", "tri", "ray", "long", "max", "grace"})


@pytest.mark.parametrize(
    ("question", "asks_people", "name"),
    [
        ("andrej karpathy papers", False, "Andrej Karpathy"),  # just before "papers"
        ("Andrej Karpathy papers", False, "Andrej Karpathy"),
        ("show me papers by tri dao", True, "Tri Dao"),
        ("ray tracing papers", False, None),  # an English word: a topic
        ("papers on long context", False, None),
        ("grace hopper scheduling papers", False, None),  # no name just before "papers"
        ("What can we learn from Gaussian Splatting Lite?", False, None),  # no people asked
    ],
)
def test_a_name_in_lower_case_or_just_before_papers_is_read_as_a_person(
    question: str, asks_people: bool, name: str | None
) -> None:
    assert read_question(question).people is asks_people
    assert absent_name(question, CHUNKS, FIRST_NAMES, asks_people) == name


def test_the_first_names_are_the_indexed_authors_first_words() -> None:
    names = AuthorIndex.build(PAPERS).first_names
    assert {"max", "ziming", "jorg", "florian", "yoshua"} <= names
    assert not {n for n in names if len(n) == 1}  # "m tegmark" writes an initial, no name


@pytest.mark.parametrize(
    "question",
    [
        "Which Vision Transformer papers were published this year?",  # a topic's common words
        # a method's name far from the words that ask for papers (的论文)
        "有没有用 Baysian Flow Netwrok 做蛋白质家族设计的论文？",
        "Which papers did Tri Dao and Albert Gu write?",  # two people: not one name
    ],
)
def test_a_topic_is_not_taken_for_a_person_no_paper_lists(question: str) -> None:
    assert absent_name(question, CHUNKS) is None


@pytest.mark.parametrize(
    ("question", "tiers", "asked"),
    [
        ("List oral papers on diffusion language models", ("Oral",), ""),
        ("spotlight papers on protein design", ("Spotlight",), ""),
        ("which orals are about RLHF?", ("Oral",), ""),
        ("关于大模型推理的口头报告论文有哪些？", ("Oral",), ""),
        ("亮点论文里有哪些关于视频生成的？", ("Spotlight",), ""),
        ("I saw a poster on GALA - what is it?", (), ""),  # a poster seen, not a filter
        ("list papers on oral cancer", (), ""),  # a topic
        ("Is the Differential Transformer an oral?", (), "Oral"),
        # A question tag makes a statement a yes/no question; 还是 asks which.
        ("Quick check: FlexPrefill was accepted as a spotlight, right?", (), "Spotlight"),
        ("Differential Transformer 是 oral 还是 poster", (), "which"),
        # "that oral paper" describes one paper; plural, or in a list, the noun filters.
        ("that oral paper on self-correction with RL - why does SFT fail?", (), ""),
        ("list every oral paper on RLHF", ("Oral",), ""),
        # Latin tier words in a Chinese list question; tier words after the topic.
        (
            "mamba 之后的 state space model 新工作，只看 oral 和 spotlight，求推荐",
            ("Oral", "Spotlight"),
            "",
        ),
        ("graph neural network papers only posters", ("Poster",), ""),
    ],
)
def test_tier_words_are_read_as_a_filter_or_a_question(
    question: str, tiers: tuple[str, ...], asked: str
) -> None:
    read = read_question(question)
    assert (read.tiers, read.tier_asked) == (tiers, asked)
    if tiers:  # the tier word is the filter, not a search term
        assert not any(w in read.search.lower() for w in ("oral", "spotlight", "口头", "亮点"))


@pytest.mark.parametrize(
    ("question", "listing"),
    [
        ("Which papers study tokenizers?", True),
        ("Any papers on federated learning?", True),
        ("关于扩散模型的论文有哪些？", True),
        # "find" inside a question about one paper's result is no list
        (
            "AI Sandbagging: Language Models can Strategically Underperform - what did they find?",
            False,
        ),
    ],
)
def test_a_list_question_is_told_by_its_opening_word(question: str, listing: bool) -> None:
    assert read_question(question).listing is listing


def test_the_venue_is_not_a_search_term() -> None:
    assert (
        without_venue("main trends in LLM reasoning at ICLR 2025") == "main trends in LLM reasoning"
    )
    assert (
        without_venue("How many ICLR papers are about RLHF?") == "How many papers are about RLHF?"
    )


# On the bundled corpus -------------------------------------------------------------------------


def bundled_authors(name: str) -> set[str]:
    ids = set()
    for path in sorted(BUNDLED_CORPUS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if name in (row.get("authors") or []):
                ids.add(row["id"])
    return ids


@pytest.mark.slow
def test_papers_by_a_person_lists_all_of_theirs_with_tier_and_nothing_else(corpus: Any) -> None:
    indexed = {p.id for p in corpus.retriever.index.all_papers()}
    theirs = bundled_authors("Yoshua Bengio") & indexed
    assert len(theirs) == 12  # 5 with an abstract, 7 title records
    result = answer("papers by Yoshua Bengio", assistant=corpus, k=len(theirs))
    assert not result.abstained
    assert {s.paper.id for s in result.sources} == theirs
    assert {c.paper_id for c in result.citations} == theirs
    assert all(s.paper.decision in result.answer for s in result.sources)
    hits = corpus.retriever.search("Which papers is Yoshua Bengio an author of?", k=len(theirs))
    assert {r.paper.id for r in hits} == theirs
    # Up to the sources setting (retrieval.k), saying how many there are.
    k = corpus.settings.retrieval.k
    result = answer("papers by Yoshua Bengio", assistant=corpus)
    assert len(result.sources) == k and {s.paper.id for s in result.sources} <= theirs
    assert f"The first {k} of {len(theirs)} are listed" in result.answer


@pytest.mark.slow
@pytest.mark.parametrize("question", ["Who proposed DarkBench?", "DarkBench 是谁提出的？"])
def test_who_proposed_a_paper_is_answered_with_its_recorded_authors(
    corpus: Any, question: str
) -> None:
    result = answer(question, assistant=corpus)
    assert result.sources[0].paper.title.startswith("DarkBench")
    assert all(a in result.answer for a in result.sources[0].paper.authors)
    assert ("order not known" in result.answer) or ("顺序未知" in result.answer)
    assert [c.n for c in result.citations] == [1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "question",
    [
        # The whole title of a paper with an abstract, quoted in a longer question.
        "who wrote the paper 'Scaling LLM Test-Time Compute Optimally can be More Effective "
        "than Scaling Model Parameters'",
        "请问 Cut Cross-Entropy（Cut Your Losses in Large-Vocabulary Language Models）是谁写的？",
        "hey, do you know who's behind the KAN paper? want to find them at the poster session",
    ],
)
def test_who_wrote_a_paper_named_by_its_title_is_answered_from_its_record(
    corpus: Any, question: str
) -> None:
    result = answer(question, assistant=corpus)
    assert all(a in result.answer for a in result.sources[0].paper.authors), result.answer
    assert [c.n for c in result.citations] == [1]


@pytest.mark.slow
def test_a_persons_papers_under_a_tier_none_has_are_said_to_be_none(corpus: Any) -> None:
    result = answer("list Yann LeCun's papers, only the orals", assistant=corpus)
    theirs = bundled_authors("Yann LeCun")
    assert result.answer.startswith(
        f"None of the {len(theirs)} papers with Yann LeCun among their authors in the index is Oral"
    )
    assert {c.paper_id for c in result.citations} <= theirs and result.citations
    assert "Accept (Oral)" not in result.answer


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("papers by Tri Dao", "No paper in the index lists Tri Dao among its authors"),
        ("Fei-Fei Li 的论文有哪些？", "索引中没有任何论文的作者列表包含 Fei-Fei Li"),
        ("which orals did Oriol Vinyals co-author", "No paper in the index lists Oriol Vinyals"),
        ("andrej karpathy papers", "No paper in the index lists Andrej Karpathy among"),
    ],
)
def test_a_person_no_paper_lists_is_said_to_have_none_and_no_topic_is_answered(
    corpus: Any, question: str, said: str
) -> None:
    result = answer(question, assistant=corpus)
    assert result.abstained and result.answer.startswith(said), result.answer
    assert not result.citations and not result.sources


@pytest.mark.slow
def test_a_person_written_with_a_slip_is_offered_the_authors_spelled_alike(corpus: Any) -> None:
    result = answer("papers by Pei-Pei Lee", assistant=corpus)
    assert result.abstained and "Pei Pei Li" in result.answer, result.answer


@pytest.mark.slow
def test_a_yes_no_question_about_a_decision_is_answered_from_the_record(corpus: Any) -> None:
    result = answer("Is the Differential Transformer an oral?", assistant=corpus)
    assert result.answer.startswith("Yes") and result.sources[0].paper.tier == "Oral"
    result = answer("Is the Differential Transformer a poster?", assistant=corpus)
    assert result.answer.startswith("No")
    result = answer(
        "Quick check: FlexPrefill was accepted as a spotlight, right?", assistant=corpus
    )
    assert result.answer.startswith("No: its decision is Accept (Oral)")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "tier"),
    [
        ("List oral papers on diffusion language models", "Oral"),
        ("spotlight papers on protein design", "Spotlight"),
        ("关于大模型推理的口头报告论文有哪些？", "Oral"),
    ],
)
def test_a_tier_word_filters_like_the_sidebar_and_says_so(
    corpus: Any, question: str, tier: str
) -> None:
    result = answer(question, assistant=corpus)
    assert result.sources and all(s.paper.tier == tier for s in result.sources)
    assert tier in result.scope_note


def test_the_chat_export_names_the_authors_and_marks_a_title_record() -> None:
    from rag.answer.citations import CitedAnswer, Quote, cite
    from rag.types import RetrievedPaper
    from ui.export import chat_markdown
    from ui.render import Turn

    kan = Paper(
        id="Ozo7qJ5vZi",
        title="KAN: Kolmogorov–Arnold Networks",
        abstract="",
        authors=("Max Tegmark", "Ziming Liu"),
        decision="Accept (Oral)",
        url="https://openreview.net/forum?id=Ozo7qJ5vZi",
        extra={"authors_ordered": False},
    )
    sources = [RetrievedPaper(kan, 1.0, 1.0)]
    result = CitedAnswer(
        question="What is KAN?",
        standalone_question="What is KAN?",
        answer="Its record [1].",
        citations=cite([Quote(1, kan.id, kan.title, 1.0)], sources),
        sources=sources,
        abstained=False,
        model="offline:extractive",
    )
    references = chat_markdown([Turn("What is KAN?", answer=result)]).split("## References")[1]
    assert "Max Tegmark, Ziming Liu (author order not known)" in references
    assert "Abstract not in the bundled corpus" in references


@pytest.mark.slow
def test_a_name_a_title_record_also_defines_leads_to_the_paper_with_an_abstract(
    corpus: Any,
) -> None:
    """ "VLAS" is VLAS's leading name and a title record's "(VLAs)": the paper that introduces
    it, with an abstract, comes first (bench.named_eval, name-063)."""
    found = corpus.retriever.search("How does VLAS work?")
    assert found[0].paper.id == "K4FAFNRpko" and found[0].paper.title.startswith("VLAS:")


@pytest.mark.slow
def test_the_page_says_no_paper_lists_the_person_and_shows_no_source(
    corpus_settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In the page (Streamlit's AppTest on the bundled index): the refusal is said as text, no
    source card and no [n] is drawn, and the page keeps the chat going."""
    from streamlit.testing.v1 import AppTest

    point_app_at(monkeypatch, corpus_settings.store.index_dir, tmp_path / "feedback.jsonl")
    app = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
    at = AppTest.from_file(app, default_timeout=180).run()
    at.chat_input[0].set_value("andrej karpathy papers").run()
    assert not at.exception, at.exception
    reply = at.chat_message[1]
    shown = " ".join(m.value for m in reply.markdown)
    assert "No paper in the index lists Andrej Karpathy among its authors" in shown, shown
    assert not reply.subheader and "[1]" not in shown
    assert at.session_state["turns"][0].answer.abstained
    at.chat_input[0].set_value("papers by Max Tegmark").run()
    theirs = " ".join(m.value for m in at.chat_message[3].markdown)
    assert "Papers with Max Tegmark among their authors in the index (3)" in theirs, theirs
    assert len(at.chat_message[3].subheader) == 3  # their three cards
