"""The tenth blind session's defects left after it (its report, items 8, 9 and 15), each
asserted as the researcher expected it."""

from __future__ import annotations

import pytest

from rag.answer.pipeline import Assistant, answer
from rag.lang.messages import MESSAGES, message
from tests.test_sixth_page_session import then
from tests.test_ui_apptest import app_env, ask, corpus_file, index_dir, plain, start, turns  # noqa: F401

GEOMETRY = "The Geometry of Categorical and Hierarchical Concepts in Large Language Models"
CROSS_ENTROPY = "Cross-Entropy Is All You Need To Invert the Data Generating Process"
FREQUENCY = "On Linear Representations and Pretraining Data Frequency in Language Models"


def test_other_papers_are_the_subjects_list_less_those_cited(corpus: Assistant) -> None:
    """ "othr papers on the linear representation hypothesis" after the Geometry paper cited
    one paper, while two on that hypothesis sat uncited among its sources; asked after the
    list itself, it listed a bandit paper and a federated RL one ("linear speedup")."""
    first = answer(
        "geometry of categorical and hierarchical concepts in llms - whats the main finding",
        assistant=corpus,
    )
    assert first.sources[0].paper.title == GEOMETRY
    others = then("othr papers on the linear representation hypothesis", first, corpus)
    cited = {others.sources[c.n - 1].paper.title for c in others.citations}
    assert {CROSS_ENTROPY, FREQUENCY} <= cited
    assert GEOMETRY not in {s.paper.title for s in others.sources}
    listed = answer("papers on the linear representation hypothesis", assistant=corpus)
    titles = [listed.sources[c.n - 1].paper.title for c in listed.citations]
    assert {GEOMETRY, CROSS_ENTROPY, FREQUENCY} <= set(titles)
    more = then("any other papers on the linear representation hypothesis?", listed, corpus)
    shown = {s.paper.title for s in more.sources[: len(more.citations)]}
    assert not shown & set(titles)
    assert not any("Bandits" in t or "Linear Speedup" in t for t in shown), shown
    if more.abstained:  # none left: it says so, not that nothing covers the subject
        assert more.answer.startswith(message("no_other_papers"))


def test_a_code_link_asks_for_code_not_the_papers_page(corpus: Assistant) -> None:
    """ "the last one, any code link?" gave the paper's OpenReview link and never said that
    its abstract gives no code link."""
    listed = answer("papers on the linear representation hypothesis", assistant=corpus)
    for question in ("the 4th one, any code link?", "github link for the 4th one?"):
        code = then(question, listed, corpus)
        assert code.sources[0].paper.id == listed.sources[3].paper.id, question
        assert "openreview.net" not in code.answer, question  # the code aspect, not the page
    link = then("the 4th one, link?", listed, corpus)
    assert f"openreview.net/forum?id={listed.sources[3].paper.id}" in link.answer


def test_was_it_at_iclr_is_answered_yes_with_its_tier(corpus: Assistant) -> None:
    """ "i remember the transfusion paper (...) — was it at iclr 25?" quoted three sentences
    and left the reader to find the answer in a badge."""
    for question in (
        "i remember the transfusion paper (predict the next token and diffuse images w one "
        "model) — was it at iclr 25?",
        "Differential Transformer 这篇是 ICLR 2025 的吗？",
    ):
        result = answer(question, assistant=corpus)
        paper = result.sources[0].paper
        yes = message("presence_yes", question).format(title=paper.shown_title, decision=paper.tier)
        assert result.answer.startswith(f"{yes} [1]"), result.answer[:200]
        assert result.citations[0].n == 1
    described = answer(
        "i remember a paper about sparse autoencoders scaled up to gpt-4 size models.. "
        "is that iclr 2025?",
        assistant=corpus,
    )
    assert not described.answer.startswith("Yes")


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_a_chinese_chats_comparison_table_is_in_chinese() -> None:
    """In a Chinese chat the table's rows read Problem/Approach/... and its note "Compared
    by offline:extractive"."""
    at = start()
    ask(at, "有哪些用基准评测大语言模型的论文？")
    first = turns(at)[0].answer
    assert first is not None and len(first.citations) >= 2
    zh = MESSAGES["zh"]
    next(b for b in at.button if b.label == zh["compare_cited"]).click().run()
    assert not at.exception
    shown = " ".join(m.value for m in at.chat_message[3].markdown)
    for aspect in ("problem", "approach", "results"):
        assert f"**{zh[f'aspect_{aspect}']}**" in shown, aspect
    assert "**Approach**" not in shown
    captions = " ".join(plain(c.value) for c in at.chat_message[3].caption)
    assert zh["page_compared_by"].format(model="offline:extractive") in captions
