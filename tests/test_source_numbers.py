"""Issue 23, item 4: a paper shown again under another number says which number the reader
first saw it under; the list says how ordinals count."""

from __future__ import annotations

from rag.answer.citations import CitedAnswer
from rag.lang.messages import MESSAGES
from rag.types import Paper, RetrievedPaper
from ui.render import SourceRow, Turn, first_numbers, source_facts


def answer(*ids: str) -> CitedAnswer:
    sources = [RetrievedPaper(Paper(i, f"Title {i}", "We propose it."), 0.5, 0.5) for i in ids]
    return CitedAnswer("q", "q", "text", [], sources, False, "offline:extractive")


def test_a_paper_renumbered_in_a_later_list_shows_its_first_number() -> None:
    turns = [Turn("first", answer("a", "flex", "c")), Turn("orals", answer("flex", "a"))]
    seen = first_numbers(turns)
    assert seen == {"a": (1, 1), "flex": (1, 2), "c": (1, 3)}
    later = turns[1].answer
    assert later is not None
    moved = source_facts(SourceRow(1, later.sources[0], []), first=seen["flex"])
    assert moved.endswith("first shown as \\[2\\] in answer 1")
    same = source_facts(SourceRow(2, later.sources[1], []), first=(1, 2))
    assert "first shown" not in same
    assert '"the second one"' in MESSAGES["en"]["page_ordinals"]
    assert "“第二篇”" in MESSAGES["zh"]["page_ordinals"]
