"""Phrasings of a new question set (data/eval/intent_questions_new.jsonl, its dev half) that
were misread: the intent now reads each as the user meant, and the answer follows."""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, answer
from rag.lang.intent import understand

TEST_TIME_COMPUTE = "4FWAwZtd2n"  # Scaling LLM Test-Time Compute Optimally Can be More ...
LABMATE = (
    "my labmate said there were a bunch of papers at ICLR this year on scaling test-time "
    "compute for reasoning which ones should i actually look at"
)


@pytest.mark.parametrize(
    ("question", "number"),
    [
        ("im new to protein design, can you recommend 3 papers from this year to start with", 3),
        ("推荐五篇做 GUI agent 的论文，就是让 LLM 去操作网页那种", 5),
    ],
)
def test_a_number_of_papers_asked_for_is_a_list(question: str, number: int) -> None:
    intent = understand(question)
    assert (intent.kind, intent.asked.number) == ("list", number)


def test_a_list_frame_at_the_end_takes_its_subject_from_before_it() -> None:
    intent = understand(LABMATE)
    assert intent.kind == "list"
    assert intent.subject == "scaling test-time compute for reasoning"


def test_looking_for_some_work_in_chinese_is_a_list() -> None:
    intent = understand("想找一些 time series foundation model 相关的工作，口头报告和亮点论文都行")
    assert intent.kind == "list" and intent.asked.tiers == ("Oral", "Spotlight")


def test_which_people_wrote_it_asks_for_the_authors() -> None:
    assert understand("想知道 Data Shapley in One Training Run 是哪些人写的").asked.authors_of


@pytest.mark.parametrize("tag", ["can you double check", "can you check?", "can you confirm?"])
def test_a_statement_with_a_check_asks_for_the_tier(tag: str) -> None:
    assert understand(f"i think the OpenHands paper was a spotlight? {tag}").kind == "tier"


def test_the_subject_before_the_frame_is_answered_not_refused(corpus: Assistant) -> None:
    result = answer(LABMATE, assistant=corpus)
    assert not result.abstained
    assert TEST_TIME_COMPUTE in [c.paper_id for c in result.citations]


# A third set (data/eval/intent_questions_more.jsonl, its dev half): search-box queries,
# polite and indirect asks, a question after a preamble.
@pytest.mark.parametrize(
    ("question", "tiers", "number"),
    [
        ("watermarking llm outputs iclr25 posters", ("Poster",), 0),
        (
            "I'd love to know which oral papers dealt with scaling laws — a couple would be "
            "enough.",
            ("Oral",),
            2,
        ),
        (
            "Is there any chance you could recommend 4 papers about LLM agents for web navigation?",
            (),
            4,
        ),
    ],
)
def test_search_box_and_polite_lists(question: str, tiers: tuple[str, ...], number: int) -> None:
    intent = understand(question)
    assert (intent.kind, intent.asked.tiers, intent.asked.number) == ("list", tiers, number)


def test_a_list_subject_leaves_out_the_frame_around_it() -> None:
    assert understand("model merging / task arithmetic papers").subject == (
        "model merging / task arithmetic"
    )
    assert understand(
        "I'd love to know which oral papers dealt with scaling laws — a couple would be enough."
    ).subject == ("scaling laws")


@pytest.mark.parametrize(
    ("question", "tiers"),
    [
        ("count spotlight diffusion", ()),
        ("# of kv-cache papers (poster)", ("Poster",)),
        ("想知道 ICLR 2025 有多少 paper 在做 speculative decoding？", ()),
        ("how many spotlight and oral papers introduced new benchmarks for LLM safety?", None),
        ("Could you tell me how many oral or spotlight papers are about watermarking?", None),
    ],
)
def test_counts_as_users_type_them(question: str, tiers: tuple[str, ...] | None) -> None:
    intent = understand(question)
    assert intent.kind == "count"
    assert set(intent.asked.tiers) == (set(tiers) if tiers is not None else {"Oral", "Spotlight"})


@pytest.mark.parametrize(
    "question",
    [
        "sana oral?",
        "kan kolmogorov arnold networks tier",
        "Sorry to bother you — was Lean-STaR a spotlight?",
        "could you tell me the acceptance tier of MagicPIG: LSH Sampling for Efficient LLM "
        "Generation?",
        "He thinks it's an oral. Could you tell me what its presentation type was?",
        "Training Language Models to Self-Correct via Reinforcement Learning 这篇拿到 oral 了没？",
    ],
)
def test_a_paper_s_tier_asked_in_passing(question: str) -> None:
    assert understand(question).kind == "tier"


@pytest.mark.parametrize(
    "question",
    [
        "Is there any chance you could recommend 4 papers about web agents? Doesn't matter "
        "whether they're posters or orals.",
        "I saw a poster on FlexPrefill. Is it any good for long prompts?",
    ],
)
def test_a_tier_word_outside_the_yes_no_sentence_asks_no_tier(question: str) -> None:
    assert understand(question).kind != "tier"


@pytest.mark.parametrize(
    "question",
    ["flexprefill authors", "LiveBench 这个 contamination-limited benchmark 是哪些人做的？"],
)
def test_who_made_it_asks_for_the_authors(question: str) -> None:
    assert understand(question).asked.authors_of


def test_a_tier_asked_after_a_preamble_is_answered_from_the_record(corpus: Assistant) -> None:
    result = answer("Sorry to bother you — was Lean-STaR a spotlight?", assistant=corpus)
    assert not result.abstained
    assert result.citations[0].paper_id == "SOWZ59UyNc"  # Lean-STaR, Accept (Spotlight)
    assert result.answer.startswith("Yes")


RATIONAL_PEOPLE = "dAeET8gxqg"  # Large Language Models Assume People are More Rational ...


def test_people_who_do_the_work_are_no_search_term(corpus: Assistant) -> None:
    question = "how are people making LLMs smaller and cheaper to run, e.g. with quantization?"
    assert "people" not in understand(question).search
    result = answer(question, assistant=corpus)
    assert not result.abstained
    assert RATIONAL_PEOPLE not in [c.paper_id for c in result.citations]
    titled = answer(
        "what do Large Language Models Assume People are More Rational find?", assistant=corpus
    )
    assert titled.citations[0].paper_id == RATIONAL_PEOPLE


def test_a_list_by_its_number_leaves_out_the_clause_that_only_asks(corpus: Assistant) -> None:
    question = (
        "im pretty new to diffusion models for protein design, can you recommend 3 papers "
        "from this year to start with"
    )
    assert understand(question).subject == "im pretty new to diffusion models for protein design"
    assert not answer(question, assistant=corpus).abstained


def test_a_long_message_is_searched_on_its_topical_sentence_before_a_refusal(
    corpus: Assistant,
) -> None:
    question = (
        "Hi! I'm on the inference team at a small startup and we serve a lot of long-prompt "
        "traffic. Someone on our Slack linked an ICLR 2025 paper that uses LSH sampling instead "
        "of top-k attention during decoding, claiming top-k attention estimates are biased. I'd "
        "love to know what the main idea is, what speedups they report, and whether part of it "
        "runs on the CPU. Sorry for the wall of text, thanks!"
    )
    assert understand(question).topic.startswith("paper that uses LSH sampling")
    result = answer(question, assistant=corpus)
    assert not result.abstained
    assert "ALzTQUgW8a" in [c.paper_id for c in result.citations]  # MagicPIG
    assert "LSH sampling" in result.scope_note  # it says what it searched for


@pytest.mark.parametrize(
    "question",
    [
        "Could you recommend 4 papers about web agents? Doesn't matter whether they're posters "
        "or orals.",
        "papers on RLHF, regardless of tier",
    ],
)
def test_a_tier_said_not_to_matter_filters_nothing(question: str) -> None:
    intent = understand(question)
    assert intent.kind == "list" and intent.asked.tiers == ()


def test_a_tier_said_elsewhere_still_filters() -> None:
    question = "Which oral papers study RLHF? Doesn't matter how recent."
    assert understand(question).asked.tiers == ("Oral",)
