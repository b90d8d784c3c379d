"""Defects a researcher met in a sixth blind session in Chromium (questions written before any
run, by someone who did not read the code), each asserted as the researcher expected it."""

from __future__ import annotations

import pytest

from rag.answer.citations import CitedAnswer
from rag.answer.pipeline import Assistant, answer

FLEXPREFILL = "OfjIlbelrT"
SAFETY = "6Mxhg9PtDE"  # Safety Alignment Should be Made More Than Just a Few Tokens Deep
CLIPPING = "03OkC0LKDD"  # Adaptive Gradient Clipping for Robust Federated Learning (Spotlight)
LONG = (
    "I'm working on a project at the intersection of machine learning and the physical "
    "sciences. We have a big dataset of DFT calculations and experimental measurements and "
    "want to use LLM-based agents that can plan experiments, call simulation tools, read the "
    "literature and propose new candidate materials or molecules. Given all that context, "
    "which ICLR 2025 papers study LLM agents for chemistry or materials discovery, and which "
    "of them release code?"
)


def then(question: str, previous: CitedAnswer, assistant: Assistant) -> CitedAnswer:
    history = [
        {"role": "user", "content": previous.question},
        {"role": "assistant", "content": previous.answer},
    ]
    return answer(question, history, assistant=assistant, previous=previous)


def test_more_like_this_is_a_search_not_an_author_in_a_title(corpus: Assistant) -> None:
    """A title's "Markov" was read as the surname of the one author called Markov."""
    first = answer("rl theory papers with regret bounds for linear mdps", assistant=corpus)
    more = then("more like this", first, corpus)
    assert not more.abstained and "among their authors" not in more.answer
    shown = {c.paper_id for c in first.citations}
    assert more.citations and not shown & {c.paper_id for c in more.citations}


def test_the_authors_and_the_link_and_the_decision_of_the_paper_just_summarised(
    corpus: Assistant,
) -> None:
    """ "the openreview" was read as a person's name ("The Openreview")."""
    first = answer(
        "summarize the safety alignment should be made more than just a few tokens deep paper",
        assistant=corpus,
    )
    assert first.citations[0].paper_id == SAFETY
    records = then("who are the authors and whats the openreview link", first, corpus)
    assert f"https://openreview.net/forum?id={SAFETY}" in records.answer
    assert "Peter Henderson" in records.answer and "Openreview among" not in records.answer
    rejected = then("is it true this paper was rejected?", records, corpus)
    assert "Accept (Oral)" in rejected.answer and not rejected.abstained


def test_which_of_them_after_a_question_of_its_own_is_a_new_search(corpus: Assistant) -> None:
    """ "which of them release code?" at the end of a long question took the previous answer's
    federated-learning papers for "them"."""
    first = answer("federated learning with differential privacy", assistant=corpus)
    long = then(LONG, first, corpus)
    assert "previous answer's sources" not in long.scope_note
    assert not {c.paper_id for c in first.citations} & {c.paper_id for c in long.citations}


def test_a_quoted_title_no_paper_has_is_said_to_be_absent(corpus: Assistant) -> None:
    """It summarised "Cross-Entropy Is All You Need ..." for 'Attention Is All You Need'."""
    absent = answer(
        "what does the paper 'Attention Is All You Need' at iclr 2025 say", assistant=corpus
    )
    assert absent.abstained and absent.answer.startswith("No ICLR 2025 paper in the index has")
    quoted = answer("what does the paper 'Not All Heads Matter' say", assistant=corpus)
    assert not quoted.abstained and quoted.citations[0].paper_id == "FJFVmeXusW"
    misquoted = answer(
        "summarize 'Safety Alignment Should be Made More Than a Few Tokens Deep'",
        assistant=corpus,
    )
    assert misquoted.citations[0].paper_id == SAFETY


@pytest.mark.slow  # over a second on 2 cores
def test_a_chinese_count_reads_its_topic_as_the_english_one(corpus: Assistant) -> None:
    """中用 ("useful") was one word of "蛋白质设计中用扩散模型": the count required "useful"."""
    zh = answer("蛋白质设计中用扩散模型的论文有多少篇？", assistant=corpus).answer
    en = answer("how many papers use diffusion models for protein design?", assistant=corpus)
    assert "useful" not in zh
    assert zh.split("有 ")[1].split(" 篇")[0] == en.answer.split()[0] != "0"


def test_a_chinese_tier_list_finds_what_the_english_one_finds(corpus: Assistant) -> None:
    """ "有没有联邦学习的spotlight论文" was refused, its answer listed as "closest"."""
    zh = answer("有没有联邦学习的spotlight论文", assistant=corpus)
    en = answer("federated learning spotlight papers", assistant=corpus)
    assert not zh.abstained
    assert CLIPPING in {c.paper_id for c in zh.citations} & {c.paper_id for c in en.citations}


def test_any_others_by_them_lists_the_authors_other_papers(corpus: Assistant) -> None:
    """It summarised the same paper again."""
    first = answer("explain FlexPrefill", assistant=corpus)
    flex = corpus.retriever.index.get_papers([FLEXPREFILL])[FLEXPREFILL]
    for question in ("any others by them?", "他们还有别的论文吗"):
        others = then(question, first, corpus)
        ids = [c.paper_id for c in others.citations]
        assert ids and FLEXPREFILL not in ids, question
        papers = corpus.retriever.index.get_papers(ids)
        assert all(set(p.authors) & set(flex.authors) for p in papers.values()), question


def test_is_there_code_is_answered_from_the_abstract(corpus: Assistant) -> None:
    """It quoted three more sentences and did not say whether there is code."""
    first = answer("explain FlexPrefill", assistant=corpus)
    code = then("is there code for it", first, corpus)
    assert "The abstract gives no code link" in code.answer
    assert code.citations[0].paper_id == FLEXPREFILL


def test_a_total_and_a_tier_are_both_counted(corpus: Assistant) -> None:
    """ "how many accepted papers total ... and how many orals" gave the orals alone."""
    both = answer(
        "how many accepted papers total at iclr 2025 and how many orals", assistant=corpus
    )
    total = len(corpus.retriever.index.all_papers())
    assert f"{total:,} papers" in both.answer and " Oral" in both.answer
    orals = answer("how many orals are there in total", assistant=corpus)
    assert f"{total:,}" not in orals.answer.splitlines()[0]


def test_a_comparison_of_two_named_papers_compares_those_two(corpus: Assistant) -> None:
    """A third paper on "transformers" was summarised with them, and no table was offered."""
    for question in (
        "compare differential transformer with the forgetting transformer paper",
        "FlexPrefill 和 SCBench 有什么区别？",
    ):
        result = answer(question, assistant=corpus)
        assert result.compare == (1, 2), question
        assert len({c.paper_id for c in result.citations}) == 2, question


def test_compare_it_with_a_paper_not_shown_puts_the_two_side_by_side(corpus: Assistant) -> None:
    """ "和 DPLM-2 比较一下" after Proteina summarised DPLM-2 alone; "compare it with SCBench"
    after FlexPrefill summarised FlexPrefill alone."""
    flex = answer("explain FlexPrefill", assistant=corpus)
    both = then("compare it with SCBench", flex, corpus)
    assert both.compare == (1, 2)
    assert [c.paper_id for c in both.citations][:1] == [FLEXPREFILL]
    assert len({c.paper_id for c in both.citations}) == 2
    proteina = answer("Proteina 这篇是谁写的", assistant=corpus)
    zh = then("和 DPLM-2 比较一下", proteina, corpus)
    assert zh.compare == (1, 2) and zh.sources[0].paper.id == proteina.sources[0].paper.id
    assert "DPLM-2" in zh.sources[1].paper.title


def test_others_by_them_after_a_comparison_reads_both_papers_authors(corpus: Assistant) -> None:
    """After "compare it with SCBench" the two papers share no author: it summarised them again."""
    flex = answer("explain FlexPrefill", assistant=corpus)
    both = then("compare it with SCBench", flex, corpus)
    others = then("any others by them?", both, corpus)
    compared = {c.paper_id for c in both.citations}
    ids = [c.paper_id for c in others.citations]
    assert ids and not compared & set(ids) and others.answer.startswith("Other papers")


def test_all_n_papers_by_a_person_is_a_new_question(corpus: Assistant) -> None:
    """ "list all 9 papers by sergey levine" answered from the previous answer's graph papers."""
    first = answer("gnn papers on oversquashing", assistant=corpus)
    levine = then("list all 9 papers by sergey levine", first, corpus)
    assert "previous answer's sources" not in levine.scope_note
    assert "Sergey Levine" in levine.answer.splitlines()[0]
    assert not {c.paper_id for c in first.citations} & {c.paper_id for c in levine.citations}


def test_review_scores_are_said_to_be_absent_not_summarised(corpus: Assistant) -> None:
    """ "what were the reviewer scores for the differential transformer paper" quoted abstracts
    about "attention scores"; the index holds no reviews."""
    scores = answer(
        "what were the reviewer scores for the differential transformer paper", assistant=corpus
    )
    assert "not reviews or scores" in scores.answer
    assert [c.paper_id for c in scores.citations] == ["OvoCm1gGhN"]
    flex = answer("explain FlexPrefill", assistant=corpus)
    said = then("what did the reviewers say?", flex, corpus)
    assert "not reviews or scores" in said.answer and said.citations[0].paper_id == FLEXPREFILL
    code = answer("does FlexPrefill release code?", assistant=corpus)
    assert "no code link" in code.answer and len({c.paper_id for c in code.citations}) == 1


def test_the_comparison_table_quotes_what_the_answer_above_it_quotes(corpus: Assistant) -> None:
    """The table read its problem and approach sentences apart from the prose: the two
    quoted different sentences for the same paper."""
    from rag.explore.compare import compare_offline

    result = answer("compare FlexPrefill and SCBench", assistant=corpus)
    table = {r.aspect: r.cells for r in compare_offline([s.paper for s in result.sources[:2]]).rows}
    labels = {"Problem": "problem", "Method": "approach", "Result": "results"}
    said = [line for line in result.answer.splitlines() if line.startswith("- ")]
    assert said
    for line in said:
        label, _, quoted = line[2:].partition(": ")
        n = int(quoted.rsplit("[", 1)[1].rstrip("]"))
        assert table[labels[label]][n - 1].quote == quoted.rsplit(" [", 1)[0], line
