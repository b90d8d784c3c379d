"""Defects a researcher met in a tenth blind session in Chromium (45 turns; questions written
before any run, by someone who did not read the code), each asserted as the researcher
expected it."""

from __future__ import annotations

from rag.answer.pipeline import Assistant, answer
from rag.lang.messages import message
from tests.test_sixth_page_session import then


def test_an_award_said_in_passing_does_not_refuse_the_topic(corpus: Assistant) -> None:
    """ "what did iclr 2025 have on learning dynamics of llm finetuning? i think it got an
    outstanding paper award" got only "the index has no awards"; asked outright, it still
    does ("which paper got the iclr 2025 test of time award" listed papers on "time")."""
    aside = answer(
        "what did iclr 2025 have on learning dynamics of llm finetuning? i think it got an "
        "outstanding paper award",
        assistant=corpus,
    )
    assert not aside.abstained
    assert aside.sources[0].paper.title == "Learning Dynamics of LLM Finetuning"
    assert [c.paper_id for c in aside.citations][:1] == [aside.sources[0].paper.id]
    assert message("unrecorded_aside") in aside.scope_note
    for question in (
        "which paper got the iclr 2025 test of time award",
        "who won the neurips 2024 best paper award?",
    ):
        outright = answer(question, assistant=corpus)
        assert outright.abstained and not outright.citations, question
        assert outright.answer.startswith(message("unrecorded")), question


def test_a_title_written_with_an_acronym_names_its_paper(corpus: Assistant) -> None:
    """ "geometry of categorical and hierarchical concepts in llms - whats the main finding"
    quoted a second, unrelated paper, and "is it an oral" then answered "1 of the 2 papers"."""
    first = answer(
        "geometry of categorical and hierarchical concepts in llms - whats the main finding",
        assistant=corpus,
    )
    title = "The Geometry of Categorical and Hierarchical Concepts in Large Language Models"
    assert first.sources[0].paper.title == title
    assert {c.paper_id for c in first.citations} == {first.sources[0].paper.id}
    tier = then("is it an oral", first, corpus)
    assert "of the 2 papers" not in tier.answer and "Oral" in tier.answer


def test_show_more_keeps_the_tier_its_list_named(corpus: Assistant) -> None:
    """ "show more" after "other spotlights on video generation" (9 match, 5 shown) listed
    posters."""
    first = answer("spotlights on video generation", assistant=corpus)
    assert first.matched > len(first.citations)
    more = then("show more", first, corpus)
    assert len(more.citations) > len(first.citations)
    assert {s.paper.decision for s in more.sources} == {"Accept (Spotlight)"}


def test_a_tier_followed_by_only_filters(corpus: Assistant) -> None:
    """ "anything on protein design or molecule generation? spotlight only pls" cited an Oral
    and a Poster."""
    result = answer(
        "anything on protein design or molecule generation? spotlight only pls", assistant=corpus
    )
    assert result.citations
    assert {s.paper.decision for s in result.sources} == {"Accept (Spotlight)"}


def test_a_comparison_with_the_other_methods_puts_the_earlier_papers_beside(
    corpus: Assistant,
) -> None:
    """ "对比一下 DuoAttention 和其他 KV cache 方法" after a list of KV cache spotlights compared
    DuoAttention with an image-compression paper alone, and never said that DuoAttention's
    abstract is not in the corpus."""
    first = answer("有没有关于 KV cache 压缩的 spotlight 论文", assistant=corpus)
    assert "cache" in first.sources[0].paper.title.lower()  # 压缩 glossed once, not twice
    cited = {c.paper_id for c in first.citations}
    result = then("对比一下 DuoAttention 和其他 KV cache 方法", first, corpus)
    assert result.sources[0].paper.title.startswith("DuoAttention")
    assert len(result.compare) == 1 + len(cited)
    assert {s.paper.id for s in result.sources[1 : len(result.compare)]} == cited
    assert message("no_abstract", "对比一下") in result.answer


def test_all_the_papers_we_discussed_are_every_paper_the_chat_cited(corpus: Assistant) -> None:
    """ "总结一下我们刚才聊到的所有论文" and "summarize all the papers we discussed" quoted the
    last answer's paper alone (MLE-bench); a new question that says "so far" is still new."""
    from rag.session import Session

    for first, second, summary in (
        ("papers on kv cache compression", "mle-bench - what does it measure?",
         "summarize all the papers we discussed"),
        ("有哪些关于 KV cache 压缩的论文", "MLE-bench 这篇用了多少个 Kaggle 比赛？",
         "总结一下我们刚才聊到的所有论文"),
    ):  # fmt: skip
        chat = Session(corpus)
        listed = {c.paper_id for c in chat.answer(first).citations}
        named = {c.paper_id for c in chat.answer(second).citations}
        result = chat.answer(summary)
        assert {c.paper_id for c in result.citations} == listed | named, summary
        assert result.scope_note.startswith(message("reused_discussed", summary).split("{")[0])
    chat = Session(corpus)
    chat.answer("mle-bench - what does it measure?")
    new = chat.answer("what's new so far in kv cache compression")
    assert "cache" in new.sources[0].paper.title.lower()


def test_the_x_one_describes_a_paper_known_by_its_title(corpus: Assistant) -> None:
    """ "the pyramidal flow matching one, who are the authors" quoted three other flow-matching
    papers and no authors (its abstract is not in the corpus; its title is)."""
    result = answer("the pyramidal flow matching one, who are the authors", assistant=corpus)
    title = "Pyramidal Flow Matching for Efficient Video Generative Modeling"
    assert result.sources[0].paper.title == title
    assert [c.paper_id for c in result.citations] == [result.sources[0].paper.id]
    assert "Zhouchen Lin" in result.answer


def test_what_a_paper_ran_on_is_quoted_or_said_absent(corpus: Assistant) -> None:
    """ "what gpus and how many hours did they use to train transfusion" quoted generic
    sentences: a question on compute asks for the sentence that reports it, or says none."""
    first = answer(
        "transfusion: predict the next token and diffuse images with one model", assistant=corpus
    )
    assert first.sources[0].paper.title.startswith("Transfusion")
    result = then("what gpus and how many hours did they use to train it?", first, corpus)
    assert message("no_speed") in result.answer
    assert [c.paper_id for c in result.citations] == [first.sources[0].paper.id]
