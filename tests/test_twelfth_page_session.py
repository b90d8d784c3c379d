"""Defects a researcher met in blind sessions in Chromium (the eleventh's rest, then a twelfth
of 40 turns; questions written before any run, by someone who did not read the code), each
asserted as the researcher expected it."""

from __future__ import annotations

import pytest

from rag import Session
from rag.answer.pipeline import Assistant, answer
from rag.lang.messages import message

DEPTH_PRO = "Depth Pro: Sharp Monocular Metric Depth in Less Than a Second"
LOTUS = "Lotus: Diffusion-based Visual Foundation Model for High-quality Dense Prediction"
GATED_DELTA = "Gated Delta Networks: Improving Mamba2 with Delta Rule"
FOX = "Forgetting Transformer: Softmax Attention with a Forget Gate"
PARITY = "Transformers Provably Solve Parity Efficiently with Chain of Thought"
AKORN = "Artificial Kuramoto Oscillatory Neurons"


def cited_titles(result: object) -> list[str]:
    return [result.sources[c.n - 1].paper.title for c in result.citations]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "question",
    [
        "can u book me a hotel near the venue in singapore",
        "write me a poem about diffusion models",
        "帮我写一首关于新加坡的诗",
        "write me a python implementation of the delta rule",
    ],
)
def test_a_task_outside_the_tool_is_said_so_without_a_closest_paper(
    corpus: Assistant, question: str
) -> None:
    """ "can u book me a hotel near the venue" was answered "No abstract covers this" with a
    KV-cache paper as the nearest; "帮我写一首关于新加坡的诗" with a narrative-generation one."""
    result = answer(question, assistant=corpus)
    assert result.abstained
    assert not result.sources and not result.citations
    assert ("cannot do other tasks" in result.answer) or ("无法完成其他任务" in result.answer)


@pytest.mark.parametrize(
    "question",
    ["which papers generate poems with LLMs", "papers on extreme weather in the tropics"],
)
def test_a_topic_that_mentions_such_words_is_still_searched(
    corpus: Assistant, question: str
) -> None:
    result = answer(question, assistant=corpus)
    assert "cannot do other tasks" not in result.answer
    assert result.sources


def test_the_main_theorem_quotes_what_the_paper_proves(corpus: Assistant) -> None:
    """ "the last one, whats the main theorem" (RNNs are not Transformers (Yet)) quoted the
    introduction and "We validate our theory ..." but neither "we prove" sentence."""
    result = answer("RNNs are not Transformers (Yet) - whats the main theorem", assistant=corpus)
    assert result.sources[0].paper.title.startswith("RNNs are not Transformers (Yet)")
    assert "we prove" in result.answer


def test_the_x_paper_after_another_answer_is_that_paper_not_they(corpus: Assistant) -> None:
    """ "what do they prove in the differential transformer paper" after an answer on RNNs was
    answered from the RNN paper ("they": the previous answer's sources, without a search)."""
    session = Session(corpus)
    session.answer("RNNs are not Transformers (Yet) - whats the main theorem")
    result = session.answer("what do they prove in the differential transformer paper")
    assert cited_titles(result)[:1] == ["Differential Transformer"]
    # a follow-up that says what it asks of "that one" still means the paper shown
    session = Session(corpus)
    listed = session.answer("any papres on machine unlearning for llms")
    claim = session.answer("whats the main claim of that one")
    assert cited_titles(claim)[:1] == cited_titles(listed)[:1]


def test_a_title_record_named_in_a_sentence_and_compared_with_another(corpus: Assistant) -> None:
    """ "whats the depth pro paper about" found another depth paper; "compare it with lotus"
    repeated the Depth Pro record without looking Lotus up (both are title records)."""
    session = Session(corpus)
    first = session.answer("whats the depth pro paper about")
    assert cited_titles(first)[:1] == [DEPTH_PRO]
    both = session.answer("compare it with lotus")
    assert cited_titles(both) == [DEPTH_PRO, LOTUS]
    assert "records only" in both.answer


def test_a_comparison_with_a_title_record_keeps_the_paper_with_an_abstract(
    corpus: Assistant,
) -> None:
    """ "gated delta networks vs forgetting transformer, which one is better on long context"
    answered the Gated DeltaNet record alone: FoX, whose abstract is there, was left out."""
    result = answer(
        "gated delta networks vs forgetting transformer, which one is better on long context",
        assistant=corpus,
    )
    assert [s.paper.title for s in result.sources[:2]] == [GATED_DELTA, FOX]
    assert FOX in cited_titles(result)
    assert f"**{GATED_DELTA}**: abstract not in the bundled corpus" in result.answer


def test_slips_are_read_as_the_word_meant_not_an_odd_one(corpus: Assistant) -> None:
    """ "jailbreakin" was read as "jailbreakic", "theres" as "threes"; "graph neural nets"
    counted the word "nets" (1 Oral GNN paper)."""
    spelling = corpus.retriever.spelling()
    assert spelling.text("jailbreakin leading safety aligned llms") == (
        "jailbreaking leading safety aligned llms"
    )
    assert spelling.text("theres a paper saying") == "theres a paper saying"
    counted = answer("how many oral papers are about graph neural nets", assistant=corpus)
    assert "graph, neural, networks" in counted.answer
    assert counted.counted > 1


def test_a_tier_before_the_topic_filters_the_list(corpus: Assistant) -> None:
    """ "有没有 oral 的 graph transformer 论文" listed posters: "oral" before the topic was
    not read as the tier filter; "oral cancer detection papers" names no tier."""
    result = answer("有没有 oral 的 graph transformer 论文", assistant=corpus)
    assert result.sources and all(s.paper.tier == "Oral" for s in result.sources)
    for question in ["oral cancer detection papers", "that oral paper on graph transformers"]:
        assert "Oral" not in answer(question, assistant=corpus).scope_note, question


def test_a_name_asked_among_a_list_it_is_not_in_is_looked_up(corpus: Assistant) -> None:
    """ "is ogbench one of them? what envs does it have" repeated the list before it word for
    word ("without a new search"); OGBench is a title record in the index."""
    session = Session(corpus)
    session.answer("give me 5 papers on offline goal conditioned rl")
    result = session.answer("is ogbench one of them? what envs does it have")
    assert result.sources[0].paper.title == "OGBench: Benchmarking Offline Goal-Conditioned RL"
    # a question among them that names none of its own still points at the list
    session = Session(corpus)
    listed = session.answer("give me 5 papers on offline goal conditioned rl")
    second = session.answer("is the second one among them an oral")
    assert [s.paper.id for s in second.sources[:1]] == [listed.sources[1].paper.id]


def test_the_tier_asked_of_a_described_paper_is_said(corpus: Assistant) -> None:
    """ "theres a paper saying transformers can provably learn parity with chain of thought,
    which tier was it" never said "Oral" in the text (only the card's badge did)."""
    result = answer(
        "theres a paper saying transformers can provably learn parity with chain of thought, "
        "which tier was it",
        assistant=corpus,
    )
    assert cited_titles(result)[:1] == [PARITY]
    assert "Accept (Oral)" in result.answer.split("\n\n")[0]


def test_other_papers_on_a_topic_are_not_the_previous_unrelated_ones(corpus: Assistant) -> None:
    """ "帮我对比一下 OLMoE 和其他 MoE 论文" after a question on AKOrN compared OLMoE with
    AKOrN, the previous answer's paper."""
    session = Session(corpus)
    session.answer("AKOrN 那篇 人工 Kuramoto 振荡神经元 的实验结果怎么样")
    result = session.answer("帮我对比一下 OLMoE 和其他 MoE 论文")
    titles = [s.paper.title for s in result.sources]
    assert titles[0].startswith("OLMoE")
    assert "Artificial Kuramoto Oscillatory Neurons" not in titles


def test_the_x_paper_asked_about_is_quoted_alone(corpus: Assistant) -> None:
    """ "the data scaling laws in imitation learning paper - what did they find about number
    of environments vs objects?" quoted two unrelated imitation-learning papers after it."""
    result = answer(
        "the data scaling laws in imitation learning paper - what did they find about number of "
        "environments vs objects?",
        assistant=corpus,
    )
    assert cited_titles(result) == [
        "Data Scaling Laws in Imitation Learning for Robotic Manipulation"
    ]


def test_other_papers_on_a_topic_list_4_leaves_out_the_one_before(corpus: Assistant) -> None:
    """ "other theory papers on CoT expressiveness? list 4" gave 5 papers, the parity paper
    just discussed among them ("list 4" was not read as a number, "other theory papers"
    not as other papers)."""
    session = Session(corpus)
    session.answer(
        "theres a paper saying transformers can provably learn parity with chain of thought, "
        "which tier was it"
    )
    result = session.answer("other theory papers on CoT expressiveness? list 4")
    assert len(result.citations) <= 4
    assert PARITY not in cited_titles(result)


def test_a_name_its_abstract_defines_once_names_its_paper(corpus: Assistant) -> None:
    """ "what are the results of AKOrN" was refused with AKOrN's paper as the closest (its
    abstract defines the name once, in emphasis: "Neurons (*AKOrN*)")."""
    english = answer("what are the results of AKOrN", assistant=corpus)
    assert not english.abstained
    assert cited_titles(english)[:1] == [AKORN]
    assert "performance improvements" in english.answer
    chinese = answer("AKOrN 那篇 人工 Kuramoto 振荡神经元 的实验结果怎么样", assistant=corpus)
    assert cited_titles(chinese)[:1] == [AKORN]


def test_no_code_link_says_what_the_quoted_sentence_is(corpus: Assistant) -> None:
    """ "any code for it?" said "The abstract gives no code link" and then quoted "Based on
    these insights, we propose an efficient data collection strategy." as if it answered."""
    session = Session(corpus)
    session.answer("Data Scaling Laws in Imitation Learning for Robotic Manipulation")
    code = session.answer("any code for it?")
    assert message("no_code") in code.answer
    assert f"{message('what_it_does')} {code.citations[0].quote}" in code.answer
