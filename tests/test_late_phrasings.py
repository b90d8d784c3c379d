"""Phrasings of a later question set (data/eval/intent_questions_late.jsonl, its dev half)
that were misread: the venue with its preposition inside a question, a tier word against a
Chinese character, "like 4 of them", a generic acronym taken for a paper's name, a mistyped
person's name with no "papers by", and a question that names a paper and one of its authors."""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, answer
from rag.lang.gloss import ordinary
from rag.lang.intent import understand, without_venue

SVDQUANT = "vWR3KuiQur"  # SVDQuant: Absorbing Outliers by Low-Rank Component for 4-Bit ...


@pytest.mark.parametrize(
    ("question", "left"),
    [
        ("any work at iclr'25 on KV cache eviction?", "any work on KV cache eviction?"),
        ("papers that made it into ICLR 2025 on unlearning", "papers that made it on unlearning"),
        ("请问 ICLR 2025 有没有关于扩散模型的论文", "请问 有没有关于扩散模型的论文"),
        ("Papers at the ICLR 2025 on diffusion", "Papers on diffusion"),
    ],
)
def test_the_venue_goes_with_the_word_that_places_the_question_there(
    question: str, left: str
) -> None:
    assert without_venue(question) == left


@pytest.mark.parametrize(
    ("question", "kind", "tiers", "number"),
    [
        ("any work at iclr'25 on KV cache eviction for long prompts?", "list", (), 0),
        ("theorem proving with Lean at ICLR 2025 - what got accepted?", "list", (), 0),
        ("how many LoRA / parameter-efficient fine-tuning papers are at iclr 2025", "count", (), 0),
        (
            "2 papers on antibody design with diffusion, oral or spotlight only",
            "list",
            ("Oral", "Spotlight"),
            2,
        ),  # fmt: skip
        ("推荐两篇ICLR 2025 oral里做 RLHF 的论文", "list", ("Oral",), 2),
        (
            "请问有没有关于 linear attention / state space model 做长序列建模外推的论文？",
            "list",
            (),
            0,
        ),
        (
            "I'm catching up on speculative decoding. What should I read first? like 3 of them",
            "list",
            (),
            3,
        ),  # fmt: skip
    ],
)
def test_lists_and_counts_as_users_type_them(
    question: str, kind: str, tiers: tuple[str, ...], number: int
) -> None:
    intent = understand(question)
    assert (intent.kind, intent.asked.tiers, intent.asked.number) == (kind, tiers, number)


def test_a_tier_word_before_a_chinese_noun_filters_a_person_s_papers() -> None:
    assert understand("列一下 Song Han 的 oral 论文").asked.tiers == ("Oral",)


@pytest.mark.parametrize("question", ["who did svdquant?", "What is Song Han presenting?"])
def test_who_did_it_and_what_someone_presents(question: str) -> None:
    asked = understand(question).asked
    assert asked.authors_of or asked.people


def test_a_plural_of_an_english_word_is_ordinary() -> None:
    """ "legal docs" names no paper called DOCS."""
    assert ordinary("DOCS") and ordinary("docs") and not ordinary("FlexPrefill")


@pytest.mark.parametrize("acronym", ["RAG", "CLIP", "API"])
def test_an_acronym_many_papers_write_names_no_paper(corpus: Assistant, acronym: str) -> None:
    names = corpus.retriever.names.current()
    assert names.match(f"which {acronym} papers should I read for my project") is None


def test_a_paper_s_own_name_that_spells_a_word_is_still_its_name(corpus: Assistant) -> None:
    assert (
        corpus.retriever.names.current().match("how does SCoRe train self-correction") is not None
    )


def test_a_mistyped_name_with_only_the_words_that_ask_for_papers(corpus: Assistant) -> None:
    """No "papers by" and a slip in the surname: the question is still the person's papers,
    and under the tier it names they are counted under that tier."""
    result = answer("Michael Bronstien — any spotlight papers at iclr 2025?", assistant=corpus)
    assert "Bronstein" in result.answer.splitlines()[0]
    assert result.citations and all(c.tier == "Spotlight" for c in result.citations)
    assert "sources setting" not in result.answer


def test_a_named_paper_and_one_of_its_authors_gives_its_authors(corpus: Assistant) -> None:
    result = answer("who wrote SVDQuant? is it from Song Han's group?", assistant=corpus)
    assert [c.paper_id for c in result.citations] == [SVDQUANT]
    assert "Song Han" in result.answer


@pytest.mark.parametrize(
    "question",
    [
        "overview of protein design papers at iclr this year",
        "protein design papers this year pls",
        "what's at iclr 2025 on protein design?",  # one summary of two papers, in the page
    ],
)
def test_a_topic_then_papers_this_year_is_a_list(question: str) -> None:
    """In the page the overview cited one paper (ProteinBench): it was read as one summary."""
    intent = understand(question)
    assert intent.listing and "protein design" in intent.subject


@pytest.mark.parametrize(
    ("question", "presence"),
    [
        ("was the original attention is all you need paper at iclr 2025?", True),
        ("did FlexPrefill get into ICLR 2025?", True),
        ("Tree of Thoughts 是 ICLR 2025 的论文吗？", True),
        ("is there work on watermarking at iclr 2025?", False),  # a topic
        ("Is Lean-STaR an oral at ICLR 2025?", False),  # its tier, from its record
    ],
)
def test_whether_one_paper_is_at_the_venue(question: str, presence: bool) -> None:
    from rag.lang.intent import read_question

    assert read_question(question).presence is presence


def test_a_paper_not_at_the_venue_is_said_to_be_absent(corpus: Assistant) -> None:
    """In the page "was the original attention is all you need paper at iclr 2025?" quoted
    "Cross-Entropy Is All You Need To Invert the Data Generating Process" as if it were it."""
    result = answer(
        "was the original attention is all you need paper at iclr 2025?", assistant=corpus
    )
    assert result.abstained and result.answer.startswith("No ICLR 2025 paper in the index has")
    found = answer("did FlexPrefill get into ICLR 2025?", assistant=corpus)
    assert not found.abstained and found.citations[0].paper_id == "OfjIlbelrT"
