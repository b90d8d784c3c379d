"""How many papers the conference has: a count question with no topic ("how many orals are
there in total?") counts the index's papers (of the tier it names), by decision.

In a researcher's session in Chromium it was refused ("No ICLR 2025 abstract in the index covers
this question"), and "how many papers were accepted?" quoted a speculative-decoding abstract
about acceptance rates.
"""

from __future__ import annotations

from collections import Counter

import pytest

from rag.answer.pipeline import Assistant, answer


def tiers(assistant: Assistant) -> Counter[str]:
    return Counter(p.tier for p in assistant.retriever.index.all_papers())


@pytest.mark.parametrize(
    ("question", "tier"),
    [
        ("how many orals are there in total", "Oral"),
        ("how many spotlight papers are there?", "Spotlight"),
        ("ICLR 2025 有多少篇 oral？", "Oral"),
    ],
)
@pytest.mark.slow  # over a second on 2 cores
def test_a_tier_is_counted_over_the_conference(corpus: Assistant, question: str, tier: str) -> None:
    result = answer(question, assistant=corpus)
    assert not result.abstained
    assert f"{tiers(corpus)[tier]:,} " in result.answer.splitlines()[0]
    assert tier in result.answer.splitlines()[0]


@pytest.mark.parametrize("question", ["how many papers were accepted?", "一共有多少篇论文"])
@pytest.mark.slow  # over a second on 2 cores
def test_all_papers_are_counted_by_decision(corpus: Assistant, question: str) -> None:
    result = answer(question, assistant=corpus)
    counts = tiers(corpus)
    assert not result.abstained and not result.citations
    assert not result.sources  # in the page: "0 cited of 5 shown", five random papers
    assert f"{sum(counts.values()):,} " in result.answer.splitlines()[0]
    for n in (counts["Oral"], counts["Spotlight"], counts["Poster"]):
        assert f"{n:,} " in result.answer.splitlines()[1]


@pytest.mark.slow
def test_a_count_on_a_topic_still_counts_the_topic(corpus: Assistant) -> None:
    result = answer("how many orals on diffusion?", assistant=corpus)
    first = result.answer.splitlines()[0]
    assert f"of the {tiers(corpus)['Oral']:,} Oral papers" in first
    assert int(first.split()[0].replace(",", "")) < tiers(corpus)["Oral"]


def test_a_hyphenated_word_counts_its_parts_and_the_rule_says_words_as_written(
    corpus: Assistant,
) -> None:
    """ "Self-Speculative Decoding" (SWIFT) is a paper on speculative decoding; the rule read
    "decod, specul" (stems) to a researcher."""
    result = answer("how many papers on speculative decoding are there in total", assistant=corpus)
    rule = next(line for line in result.answer.splitlines() if line.startswith("Counting rule"))
    assert rule.endswith(": speculative, decoding.")
    listed = result.answer.split(rule, 1)[1]
    assert "SWIFT: On-the-Fly Self-Speculative Decoding" in listed


@pytest.mark.parametrize(
    ("question", "rule"),
    [
        ("how many watermarking papers got accepted", ": watermarking."),  # "got" was a topic
        ("hey, roughly how many papers on RL this year?", ": RL."),  # two letters, no term
        ("我想知道：强化学习的论文有多少篇？谢谢！", "reinforcement, learning。"),
        # "how many on X" said no noun of papers: summarised, not counted
        ("and how many on sparse autoencoders overall?", ": sparse, autoencoders."),
        ("how many are there about watermarking?", ": watermarking."),
        # 编辑 was glossed "edit, compile": 0 papers counted, 17 in English
        ("有多少篇关于知识编辑的论文？", "knowledge, editing。"),
        (
            "how many papers on diffusion language models? just want a sense of how crowded it is",
            ": diffusion, language.",  # not "sense" nor "crowded"
        ),
    ],
)
@pytest.mark.slow  # over a second on 2 cores
def test_a_count_counts_its_own_topic_only(corpus: Assistant, question: str, rule: str) -> None:
    result = answer(question, assistant=corpus)
    said = next(
        line for line in result.answer.splitlines() if "Counting rule" in line or "计数规则" in line
    )
    assert said.endswith(rule), said
    assert not result.answer.startswith(("0 ", "索引中的 3,716 篇论文里有 0 篇"))


@pytest.mark.slow  # over a second on 2 cores
def test_a_count_counts_a_hyphenated_word_in_either_spelling(corpus: Assistant) -> None:
    """Abstracts write "over-smoothing" and "oversmoothing": each spelling counted only its own."""
    counted = []
    for question in ("how many papers on over-smoothing?", "how many papers on oversmoothing?"):
        text = answer(question, assistant=corpus).answer
        assert "Bundle Neural Network for message diffusion on graphs" in text  # "over-smoothing"
        assert "Prevent Oversmoothing in GNNs" in text
        counted.append(int(text.split()[0]))
    assert counted[0] == counted[1]


@pytest.mark.slow  # over a second on 2 cores
def test_a_topic_with_its_abbreviation_counts_papers_by_either_name(corpus: Assistant) -> None:
    """ "sparse autoencoders (SAEs)" counted only papers that write all three words (7 of 11):
    the abbreviation in brackets is another name of the topic, not one more word."""
    bracketed = answer("how many papers on sparse autoencoders (SAEs)?", assistant=corpus).answer
    spelled = answer("how many papers on sparse autoencoders?", assistant=corpus).answer
    short = answer("how many papers on SAEs?", assistant=corpus).answer
    assert "sparse, autoencoders; or saes" in bracketed.casefold()
    counted = [int(text.split()[0]) for text in (bracketed, spelled, short)]
    assert counted[0] >= max(counted[1:]) > 0
