"""The reference resolver: which of the previous answer's numbered sources a follow-up means."""

from __future__ import annotations

import pytest

from rag.answer.references import resolve
from rag.types import Paper


def paper(pid: str, title: str, tier: str) -> Paper:
    return Paper(id=pid, title=title, abstract=f"We propose {title}.", decision=f"Accept ({tier})")


# An answer's numbered list as the page shows it: three cited papers, then two more.
SOURCES = [
    paper("a", "SageAttention: Accurate 8-Bit Attention for Plug-and-play Inference", "Poster"),
    paper("b", "FlexPrefill: A Context-Aware Sparse Attention Mechanism", "Oral"),
    paper("c", "MUSE: Machine Unlearning Six-Way Evaluation for Language Models", "Spotlight"),
    paper("d", "Knowledge Localization: Mission Not Accomplished?", "Oral"),
    paper("e", "Differential Transformer", "Oral"),
]
CITED = 3


def numbers(question: str) -> tuple[int, ...] | None:
    found = resolve(question, SOURCES, CITED)
    return None if found is None else found.numbers


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("summarize the second one", (2,)),
        ("Summarise the 2nd paper, please", (2,)),
        ("what does #2 propose?", (2,)),
        ("tell me more about [3]", (3,)),
        ("How does [1] compare with [4]?", (1, 4)),
        ("what is paper 3 about?", (3,)),
        ("and papers 1 and 4?", (1, 4)),
        ("what about the fourth?", (4,)),
        ("the last one: what does it find?", (5,)),
        ("compare the first two", (1, 2)),
        ("Compare the first and the third ones", (1, 3)),
        ("what do the top three have in common?", (1, 2, 3)),
        ("the fifth result, how fast is it?", (5,)),
        ("compare it with the second one", (1, 2)),
        ("What's the second paper about?", (2,)),
        ("can you summarize paper two?", (2,)),
        ("what does the third say about memory?", (3,)),
        ("is the fourth better than the first?", (4, 1)),
    ],
)
def test_positions_and_markers(question: str, expected: tuple[int, ...]) -> None:
    assert numbers(question) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("and how fast is it?", (1,)),
        ("Summarize that paper", (1,)),
        ("what dataset does this one use?", (1,)),
        ("what data do they train on?", (1, 2, 3)),
        ("compare them", (1, 2, 3)),
        ("compare both", (1, 2)),
        ("summarize these", (1, 2, 3)),
        ("any spotlights among them?", (3,)),
        ("what do all of them have in common?", (1, 2, 3)),
        ("all three: what do they measure?", (1, 2, 3)),
        ("the two papers, how do they differ?", (1, 2)),
    ],
)
def test_pronouns_and_sets_mean_the_cited_papers(question: str, expected: tuple[int, ...]) -> None:
    assert numbers(question) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Summarize the FlexPrefill paper", (2,)),
        ("how much faster is flexprefill?", (2,)),
        ("What does MUSE evaluate?", (3,)),
        ("tell me about the knowledge localization paper", (4,)),
        ("How does FlexPrefill compare to SageAttention?", (1, 2)),
        ("what is the differential transformer one about?", (5,)),
        ("tell me about the one on machine unlearning evaluation", (3,)),
    ],
)
def test_names_match_title_names_and_words(question: str, expected: tuple[int, ...]) -> None:
    assert numbers(question) == expected


@pytest.mark.parametrize(
    ("question", "tier", "expected"),
    [
        ("which of them are orals?", "Oral", (2,)),
        ("Are any of these spotlights?", "Spotlight", (3,)),
        ("which ones were posters", "Poster", (1,)),
        ("any orals?", "Oral", (2,)),
        ("which of the first five are orals?", "Oral", (2, 4, 5)),
    ],
)
def test_which_of_them_filters_by_tier(question: str, tier: str, expected: tuple[int, ...]) -> None:
    found = resolve(question, SOURCES, CITED)
    assert found is not None and found.how == "tier"
    assert (found.tier, found.numbers) == (tier, expected)


def test_no_source_of_a_tier_is_an_empty_answer_not_a_miss() -> None:
    found = resolve("which of them are orals?", SOURCES[:1], 1)
    assert found is not None and found.tier == "Oral" and found.numbers == ()


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("is the second one an oral?", ("tier",)),
        ("what was the decision on the first one?", ("tier",)),
        ("what's the link to [3]?", ("link",)),
        ("who wrote that paper?", ("authors",)),
        ("Where can I read the FlexPrefill paper?", ("link",)),
    ],
)
def test_metadata_questions_say_what_they_ask(question: str, asks: tuple[str, ...]) -> None:
    found = resolve(question, SOURCES, CITED)
    assert found is not None and found.asks == asks and found.about_metadata


@pytest.mark.parametrize(
    "question",
    [
        "what does the second one say about the decision boundary?",
        "what link does [3] find between sleep and memory?",
        "what does the first paper propose?",
    ],
)
def test_content_questions_are_not_metadata(question: str) -> None:
    found = resolve(question, SOURCES, CITED)
    assert found is not None and not found.about_metadata


def test_focus_drops_the_pointing_words() -> None:
    found = resolve("summarize the second one", SOURCES, CITED)
    assert found is not None and found.focus == "summarize"


@pytest.mark.parametrize(
    "question",
    [
        "Which papers study first-order optimization methods?",
        "What was the first paper to use diffusion for protein design?",
        "Which was the first paper on diffusion for proteins?",
        "What is the second law of thermodynamics used for in ML?",
        "Is it possible to train transformers without attention?",
        "Which papers handle both text and images?",
        "Which oral papers study sparse attention for long contexts?",
        "Are there two-stage training methods for retrieval?",
        "What are the top 5 models on MMLU according to recent benchmarks?",
        "How do LLMs perform on 3D spatial reasoning?",
        "Which papers propose new attention mechanisms for long sequences?",
        "How do they evaluate LLM agents on software engineering tasks with real repositories?",
        "What is one-shot learning good for in robotics?",
        "Any work on knowledge distillation for speech recognition?",
        "Does GPT-4 understand number 2 better than 3?",
    ],
)
def test_questions_that_refer_to_nothing_do_not_resolve(question: str) -> None:
    assert numbers(question) is None


def test_nothing_resolves_without_sources() -> None:
    assert resolve("summarize the second one", [], 0) is None
    assert numbers("summarize the ninth one") is None  # there are five


def test_both_after_an_answer_about_one_paper_means_the_first_two() -> None:
    found = resolve("what do both of them propose?", SOURCES, 1)
    assert found is not None and found.numbers == (1, 2)
