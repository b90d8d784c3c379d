"""A question's mistyped and British words read as meant (rag.retrieval.spelling), and kept as
typed where they may mean what they say: names, English words, authors, rare words.

No index: the stems' counts of a corpus the size of the bundled one (chunks and titles holding
each), then the real bundled corpus through the retriever.
"""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.common.similarity import stem
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.spelling import Spelling, one_slip
from rag.settings import Settings

COUNTS = {  # how many chunks and titles hold each word's stem
    "diffusion": 600, "language": 900, "langauge": 1, "control": 500, "contra": 3,
    "optimization": 700, "optimisation": 4, "neural": 768, "numeral": 146, "explain": 300,
    "explanation": 200, "transformer": 800, "adversarial": 200, "detection": 300,
    "causal": 300, "prune": 40, "prone": 30, "teleportation": 2, "tramer": 0, "framer": 12,
    "semantix": 1, "semantic": 900, "imputation": 20, "input": 2000,
    "behavior": 150, "vision": 400, "agent": 500, "inference": 900, "minference": 1,
    "semis": 40, "oracle": 60, "mamba": 80,
}  # fmt: skip


@pytest.fixture(scope="module")
def spelling() -> Spelling:
    stems = {stem(word): n for word, n in COUNTS.items()}
    titled = {stem("framer"), stem("semantix")}
    return Spelling(
        lambda s: stems.get(s, 0), titled.__contains__, frozenset({"tramer", "florian"})
    )


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("difusion models", "diffusion models"),  # a letter dropped: no text holds it
        ("a langauge model", "a language model"),  # one abstract has the same typo
        ("plasma contrl", "plasma control"),  # "contra" is a slip away too, but rare
        ("graph nueral networks", "graph neural networks"),  # numeral: five times fewer
        ("optimisation of transfomers", "optimization of transformers"),
        ("adverserial attacks and behaviour", "adversarial attacks and behavior"),
        (
            "Difusion Models and vison-language agnets",
            "Diffusion Models and vision-language agents",
        ),
        (
            "有没有用 difusion model 做分子生成的论文？",
            "有没有用 diffusion model 做分子生成的论文？",
        ),
        # in single quotes, not a contraction's part
        (
            "the main result of 'difusion for langauge'",
            "the main result of 'diffusion for language'",
        ),
        ("don't difusion models", "don't diffusion models"),
    ],
)
def test_a_mistyped_or_british_word_is_read_as_meant(
    spelling: Spelling, typed: str, meant: str
) -> None:
    assert spelling.text(typed) == meant


@pytest.mark.parametrize(
    "typed",
    [
        "What is FooNet?",  # a name (capitals inside): asked as written
        "a poster on Semantix",  # a title's word, one slip from a common one
        "zero-shot imputation",  # held by 20 texts: a word, though "input" is far commoner
        "casual inference",  # an English word, though "causal" is far more common
        "papers by florian tramer",  # an author's name, one slip from the title word Framer
        "explian this",  # explain and explanation are both a slip away and both common
        "prone to errors",  # an English word
        "teleportaton",  # the word meant is too rare to be sure of
        "an rl agnt",  # too short to tell which word was meant
        # the first letter is the one least often mistyped: no slip of inference, semis, mamba
        "flexprefill and minference",
        "does demis hassabis have papers here",
        "what is vmamba",
        "only the orals",  # a word a question is read with ("oracle" is a slip away)
    ],
)
def test_a_word_that_may_mean_what_it_says_is_kept(spelling: Spelling, typed: str) -> None:
    assert spelling.text(typed) == typed


def test_the_words_read_otherwise_are_listed_once_in_order(spelling: Spelling) -> None:
    typed = "difusion and Difusion, langauge then difusion again"
    assert spelling.changes(typed) == [
        ("difusion", "diffusion"),
        ("Difusion", "Diffusion"),
        ("langauge", "language"),
    ]
    assert spelling.changes("diffusion models") == []
    assert spelling.changes("optimisation") == []  # a British spelling: read, unsaid


def test_one_slip_is_a_letter_dropped_added_changed_or_swapped() -> None:
    near = one_slip("nueral")
    assert {"neural", "nural", "nuerals", "nuerai"} <= near and "nueral" not in near
    assert "nerual" not in near  # two swaps


@pytest.fixture(scope="module")
def bundled(corpus_settings: Settings, embeddings: LocalEmbeddings) -> Assistant:
    return open_assistant(corpus_settings, embeddings=embeddings)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("Is there a scaling law for masked difusion models on text?", {"difusion": "diffusion"}),
        (
            "has anyone studied halucination detction in llms",
            {"halucination": "hallucination", "detction": "detection"},
        ),
        ("有没有把 transfomer 用在分子生成上的论文？", {"transfomer": "transformer"}),
    ],
)
def test_a_mistyped_question_is_answered_as_the_question_meant(
    bundled: Assistant, typed: str, meant: dict[str, str]
) -> None:
    """Over the bundled corpus: the question is searched and answered as spelled right."""
    clean = typed
    for wrong, right in meant.items():
        clean = clean.replace(wrong, right)
    assert bundled.retriever.spelled(typed) == bundled.retriever.spelled(clean)
    first = [r.paper.id for r in bundled.retriever.search(typed, 3)]
    assert first == [r.paper.id for r in bundled.retriever.search(clean, 3)]
    typed_answer, clean_answer = answer(typed, assistant=bundled), answer(clean, assistant=bundled)
    assert [c.paper_id for c in typed_answer.citations] == [
        c.paper_id for c in clean_answer.citations
    ]
    assert typed_answer.citations  # not refused for a word no abstract holds
    # The answer says how it read the question; the one spelled right reads as written.
    for wrong, right in meant.items():
        assert f"\u201c{wrong}\u201d" in typed_answer.scope_note, typed_answer.scope_note
        assert f"\u201c{right}\u201d" in typed_answer.scope_note
    assert "\u201c" not in clean_answer.scope_note


def test_a_chat_abbreviation_the_index_lacks_is_read_in_full(spelling: Spelling) -> None:
    """ "the log prob of the chosen responses": no abstract writes "prob"; the answer says how
    it was read."""
    assert spelling.text("the log prob of chosen responses") == (
        "the log probability of chosen responses"
    )
    assert spelling.changes("Params and perf?") == [
        ("Params", "Parameters"),
        ("perf", "performance"),
    ]


def test_a_described_paper_with_chat_abbreviations_is_found_not_refused(
    bundled: Assistant,
) -> None:
    """ "implied vol surfaces ... ~10 yrs of intraday S&P 500 options": "vol" and "yrs" are in
    no abstract, and each cost the question 0.2 of relevance, so the paper retrieval put first
    was refused."""
    question = (
        "anyone know the paper that uses graph neural operators to build implied vol surfaces "
        "directly from raw option quotes — a single model trained on ~10 yrs of intraday S&P "
        "500 options, respects no-arbitrage, compared against SVI?"
    )
    result = answer(question, assistant=bundled)
    assert not result.abstained
    assert result.citations[0].paper_id == "DPlUWG4WMw"  # Operator Deep Smoothing for ...


def test_an_abbreviation_the_index_holds_is_kept() -> None:
    held = Spelling(lambda s: 40 if s == stem("params") else 0)
    assert held.text("how many params") == "how many params"


def test_chat_words_are_no_search_terms_and_the_paper_is_found(bundled: Assistant) -> None:
    """ "weird" and "prob" are in no abstract: each was counted as a topic the corpus lacks, and
    the question about likelihood displacement in DPO was refused."""
    question = (
        "weird thing in our dpo runs: the log prob of the chosen responses goes down during "
        "training, not just the rejected ones. is that a known phenomenon?"
    )
    result = answer(question, assistant=bundled)
    assert not result.abstained
    assert result.citations[0].paper_id == "uaMSBJDnRv"  # Unintentional Unalignment: ...
