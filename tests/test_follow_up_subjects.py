"""Follow-ups a researcher typed in the page (a session by a helper who saw no code): "what
about X?" asks the last question of another subject; "which of these are orals?" after a count
counts again; "orals on RL" is a new search; "more like that" searches for papers like the ones
meant; a count reads "X or Y"; a description ending "is that ICLR 2025?" is searched."""

from __future__ import annotations

import pytest

from rag.answer.conversation import offline_standalone
from rag.answer.pipeline import Assistant
from rag.lang.intent import read_question
from rag.lang.pointers import asks_more_like, only_tier
from rag.session import Session


def _text(answer: object, n: int) -> str:
    paper = answer.sources[n - 1].paper  # type: ignore[attr-defined]
    return f"{paper.title}\n{paper.abstract}".lower()


def _cited(answer: object) -> list[str]:
    return [_text(answer, c.n) for c in answer.citations]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("previous", "question", "searched"),
    [
        ("any orals on jailbreaks?", "what about MIAs?", "any orals on MIAs?"),
        ("papers on jailbreaks", "and how about model merging", "papers on model merging"),
        ("What is FlexPrefill?", "what about MInference?", "What is MInference?"),
        ("越狱攻击有哪些论文？", "那成员推断攻击呢？", "成员推断攻击有哪些论文？"),
        ("有没有关于幻觉的论文？", "那多模态 benchmark 呢？", "有没有关于多模态 benchmark的论文？"),
        # not a subject of its own: joined to the question before, as any short follow-up
        ("papers on X", "what about its limitations?", "papers on X what about its limitations?"),
        ("papers on X", "what about for video?", "papers on X what about for video?"),
        ("papers on X", "what about the datasets?", "papers on X what about the datasets?"),
    ],
)
def test_what_about_x_asks_the_last_question_of_x(
    previous: str, question: str, searched: str
) -> None:
    turns = [("user", previous), ("assistant", "...")]
    assert offline_standalone(question, turns) == searched


def test_what_about_x_twice_keeps_the_first_questions_frame() -> None:
    turns = [
        ("user", "any orals on jailbreaks?"),
        ("assistant", "..."),
        ("user", "what about watermarking?"),
    ]
    assert offline_standalone("what about MIAs?", turns) == "any orals on MIAs?"


@pytest.mark.parametrize(
    ("first", "switch"),
    [
        ("papers on jailbreaks", "what about membership inference?"),
        ("越狱攻击有哪些论文？", "那成员推断攻击呢？"),
    ],
)
def test_what_about_another_topic_leaves_the_last_topic(
    corpus: Assistant, first: str, switch: str
) -> None:
    session = Session(corpus)
    session.answer(first)
    second = session.answer(switch)
    assert not second.abstained and second.judge_note  # a list, as the question before
    assert all("jailbreak" not in text for text in _cited(second))
    assert "inference" in _cited(second)[0]


def test_what_about_another_topic_keeps_the_tier_and_says_so(corpus: Assistant) -> None:
    session = Session(corpus)
    session.answer("any orals on jailbreaks?")
    orals = session.answer("what about membership inference?")
    assert all(s.paper.tier == "Oral" for s in orals.sources)
    assert "an earlier question named: Oral" in orals.scope_note


@pytest.mark.parametrize(
    ("count", "tier_question"),
    [
        ("how many papers on diffusion distillation", "which of these are orals?"),
        ("关于扩散蒸馏的论文有几篇", "其中哪些是口头报告？"),
    ],
)
@pytest.mark.slow  # over a second on 2 cores
def test_a_tier_follow_up_after_a_count_counts_all_it_listed(
    corpus: Assistant, count: str, tier_question: str
) -> None:
    session = Session(corpus)
    counted = session.answer(count)
    assert counted.counted > len(counted.sources)  # it listed more than its sources
    orals = session.answer(tier_question)
    assert orals.citations and 0 < orals.counted < counted.counted
    for text in _cited(orals):
        assert "diffusion" in text and "distill" in text
    assert all(s.paper.tier == "Oral" for s in orals.sources)


@pytest.mark.parametrize(
    ("question", "alone"),
    [
        ("orals on RL", False),
        ("RL orals?", False),
        ("which of these are orals?", True),
        ("any orals?", True),
    ],
)
def test_a_tier_with_a_topic_is_no_tier_follow_up(question: str, alone: bool) -> None:
    assert only_tier(question) is alone


def test_orals_on_a_topic_after_a_persons_papers_is_a_new_search(corpus: Assistant) -> None:
    session = Session(corpus)
    person = session.answer("papers by sergey levine")
    orals = session.answer("orals on RL")
    assert not orals.abstained and all(s.paper.tier == "Oral" for s in orals.sources)
    assert {s.paper.id for s in orals.sources} != {s.paper.id for s in person.sources[:5]}
    assert all("reinforcement learning" in t or "rl" in t.split() for t in _cited(orals)[:1])


def test_a_count_of_either_topic_counts_papers_with_either() -> None:
    from rag.lang.gloss import alternatives

    assert alternatives("how many papers on RL or reinforcement learning for LLM reasoning") == [
        "how many papers on RL for LLM reasoning",
        "reinforcement learning for LLM reasoning",
    ]


@pytest.mark.slow  # over a second on 2 cores
def test_a_chinese_count_of_either_topic(corpus: Assistant) -> None:
    found = Session(corpus).answer("关于 tokenizer-free 或者 byte-level 语言模型的论文有几篇")
    assert found.counted >= 2 and "；或" in found.answer
    for text in _cited(found):
        assert ("token" in text and "free" in text) or ("byte" in text and "level" in text)


@pytest.mark.parametrize(
    "question",
    [
        "more like that",
        "anything similar?",
        "find similar papers to the first one",
        "有类似的论文吗？",
    ],
)
def test_more_like_that_asks_for_similar_papers(question: str) -> None:
    assert asks_more_like(question)


@pytest.mark.parametrize(
    "question",
    ["anything similar for video?", "papers similar to diffusion models", "tell me more"],
)
def test_a_new_topic_or_more_of_the_same_paper_is_no_search_for_similar(question: str) -> None:
    assert not asks_more_like(question)


def test_more_like_the_second_one_lists_other_papers_like_it(corpus: Assistant) -> None:
    session = Session(corpus)
    first = session.answer("papers on diffusion distillation for one-step generation")
    second_paper = first.sources[1].paper
    like = session.answer("more like the second one")
    assert not like.abstained and len(like.citations) >= 2
    assert second_paper.id not in {s.paper.id for s in like.sources}
    assert any("diffusion" in text for text in _cited(like))


def test_a_description_asked_is_that_iclr_is_searched(corpus: Assistant) -> None:
    question = (
        "i remember a paper about sparse autoencoders scaled up to gpt-4 size models.. "
        "is that iclr 2025?"
    )
    assert not read_question(question).presence
    found = Session(corpus).answer(question)
    assert not found.abstained
    assert "sparse autoencoders" in _text(found, found.citations[0].n)


def test_was_there_a_spotlight_on_a_topic_filters_by_the_tier(corpus: Assistant) -> None:
    asked = read_question("was there a spotlight on model merging")
    assert asked.tiers == ("Spotlight",) and not asked.tier_asked
    found = Session(corpus).answer("was there a spotlight on model merging")
    assert not found.abstained and all(s.paper.tier == "Spotlight" for s in found.sources)
    assert "merging" in _cited(found)[0]


@pytest.mark.parametrize(
    "question", ["which of these are about offline rl", "其中哪些是关于离线强化学习的？"]
)
def test_which_of_these_are_about_a_topic_keeps_those_that_are(
    corpus: Assistant, question: str
) -> None:
    session = Session(corpus)
    person = session.answer("papers by sergey levine")
    shown = len(person.citations)
    about = session.answer(question)
    assert not about.abstained and 0 < len(about.citations) < shown
    assert all("offline" in text for text in _cited(about))
    assert "offline" not in _text(person, 1)  # one it left out


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("which of these are about offline RL?", "offline RL"),
        ("which ones use diffusion?", "diffusion"),
        ("who are the authors?", ""),  # a record, not a topic
        ("what datasets do they use?", ""),  # an aspect of each
        ("summarize them", ""),
    ],
)
def test_the_topic_a_follow_up_asks_its_papers_about(question: str, topic: str) -> None:
    from rag.answer.followup import asked_topic
    from rag.answer.references import resolve
    from tests.test_conversation import SOURCES

    reference = resolve(question, SOURCES, len(SOURCES))
    assert reference is not None and asked_topic(question, reference) == topic


@pytest.mark.parametrize("question", ["orals on RL", "RL orals?"])
def test_a_two_letter_acronym_alone_is_searched_spelled_out(
    corpus: Assistant, question: str
) -> None:
    found = Session(corpus).answer(question)
    assert not found.abstained and len(found.citations) >= 3  # not one paper of many
    assert all("reinforcement learning" in t or " rl" in t for t in _cited(found))
    assert all(s.paper.tier == "Oral" for s in found.sources)


# A third session, in Chinese: a named paper with "这篇", numbers compared, "类似", limitations.


@pytest.mark.parametrize(
    ("question", "numbers"),
    [
        ("比较一下 1 和 3", (1, 3)),
        ("有提到 limitations 吗？", (1, 2, 3)),  # what is asked of the papers shown
        ("这篇是 oral 吗？", (1,)),
        ("这篇的 dataset 是什么？", (1,)),
        ("Depth Pro 这篇是 oral 吗？作者是谁？", None),  # a paper of its own, not a pointer
    ],
)
def test_chinese_follow_ups_point_as_the_english_ones_do(
    question: str, numbers: tuple[int, ...] | None
) -> None:
    from rag.answer.references import resolve
    from tests.test_conversation import SOURCES

    found = resolve(question, SOURCES, 3)
    assert (found.numbers if found else None) == numbers


def test_a_named_paper_with_zhe_pian_is_that_paper_not_the_last_answers(corpus: Assistant) -> None:
    session = Session(corpus)
    session.answer("有没有关于 graph neural network over-smoothing 的论文？")
    named = session.answer("Depth Pro 这篇是 oral 吗？作者是谁？")
    assert named.citations and named.sources[0].paper.title.startswith("Depth Pro")
    assert named.answer.startswith("不是")  # a Poster, said in Chinese


def test_find_a_few_like_the_first_one_in_chinese(corpus: Assistant) -> None:
    session = Session(corpus)
    first = session.answer("SAM 2 的 main result 是什么")
    sam = first.sources[first.citations[0].n - 1].paper.id
    like = session.answer("找几篇和第一篇类似的")
    assert not like.abstained and len(like.citations) >= 2
    assert sam not in {s.paper.id for s in like.sources}


def test_a_question_with_any_chinese_gets_chinese_fixed_text(corpus: Assistant) -> None:
    from rag.lang.messages import question_language

    question = "ICLR 2025 有 GPT-4 technical report 吗？"
    assert question_language(question) == "zh"
    assert question_language("What is FlexPrefill?") == "en"
    refused = Session(corpus).answer(question)
    assert refused.abstained and refused.refusal.startswith("索引中")


def test_which_of_these_keeps_only_papers_whose_text_holds_the_topic(corpus: Assistant) -> None:
    session = Session(corpus)
    session.answer("papers on knowledge editing")
    about = session.answer("which of these are about locate-then-edit methods?")
    assert all("locat" in text for text in _cited(about))
    assert about.citations or "None of the" in about.scope_note


def test_a_papers_main_result_named_by_its_author_is_answered_from_the_paper(
    corpus: Assistant,
) -> None:
    question = (
        "whats the main result of that paper on learning dynamics of LLM finetunig (yi ren i think)"  # noqa: E501
    )
    found = Session(corpus).answer(question)
    assert not found.answer.startswith("Papers with Yi Ren")
    assert _text(found, found.citations[0].n).startswith("learning dynamics of llm finetuning")
    assert any(c.quote in found.sources[0].paper.abstract for c in found.citations if c.quote)
    listed = Session(corpus).answer("papers by yi ren")
    assert listed.answer.startswith("Papers with Yi Ren")


@pytest.mark.parametrize("rest", ["show me the other 4", "the rest?", "剩下的呢？"])
def test_the_rest_of_a_persons_papers_lists_them_all(corpus: Assistant, rest: str) -> None:
    """ "show me the other 4" after "The first 5 of 9 are listed" summarised the first 5 again
    (a fourth session in Chromium)."""
    session = Session(corpus)
    first = session.answer("papers by Sergey Levine")
    assert first.counted > len(first.sources) == 5
    everything = session.answer(rest)
    assert len(everything.citations) == len(everything.sources) == first.counted
    assert {s.paper.id for s in first.sources} < {s.paper.id for s in everything.sources}


def test_the_rest_of_a_list_shows_the_papers_judged_to_match(corpus: Assistant) -> None:
    session = Session(corpus)
    first = session.answer("What is new in speculative decoding?")
    assert first.matched > len(first.sources)  # "checked 20, 8 match": 5 shown
    more = session.answer("show me the rest")
    assert len(more.sources) > len(first.sources)
    assert {s.paper.id for s in first.sources} <= {s.paper.id for s in more.sources}
    assert session.answer("compare all of them").compare  # not "the rest"


@pytest.mark.parametrize(
    ("person", "tier_question"),
    [
        ("papers by Yoshua Bengio", "which of these are orals?"),
        ("Yoshua Bengio 的论文有哪些？", "哪些是口头报告（oral）论文？"),
    ],
)
def test_a_tier_follow_up_after_a_persons_papers_asks_all_of_them(
    corpus: Assistant, person: str, tier_question: str
) -> None:
    """ "哪些是口头报告？" after "12 papers, the first 5 listed" said none of the 5 is an Oral."""
    session = Session(corpus)
    listed = session.answer(person)
    orals = session.answer(tier_question)
    assert not orals.abstained
    assert f"{listed.counted}" in orals.answer.splitlines()[0]  # "None of the 12 papers ..."


@pytest.mark.parametrize(
    ("question", "count"),
    [
        ("how many on sparse autoencoders?", True),
        ("and how many are there about SAEs?", True),
        ("how many LoRA / parameter-efficient fine-tuning papers", True),
        ("how many parameters does it have?", False),
        ("how many GPUs did they train on?", False),
    ],
)
def test_how_many_on_a_topic_counts_papers(question: str, count: bool) -> None:
    assert read_question(question).count is count
