"""A fenced code block in an answer ("give me the bibtex") is shown as code; anything else in
the answer is escaped as before, and a fence that never closes is text."""

from __future__ import annotations

import bibtexparser
import pytest

from rag import fenced
from rag.answer.citations import CitedAnswer
from rag.answer.pipeline import Assistant, answer
from tests.test_sixth_page_session import then
from ui.code_blocks import code_blocks
from ui.render import answer_markdown


def test_closed_fences_are_code_and_the_rest_is_text() -> None:
    text = "Before **b**\n```bibtex\n@a{k,\n  title = {x ``` y}\n}\n```\nafter\n```\nnever closed"
    pieces = code_blocks(text)
    assert pieces == [
        ("Before **b**", None),
        ("@a{k,\n  title = {x ``` y}\n}", "bibtex"),
        ("after\n```\nnever closed", None),
    ]
    # a fence longer than the backticks inside, so the code cannot close it early
    assert fenced(pieces[1][0], "bibtex").startswith("````bibtex\n")
    language = code_blocks("```bib<img src=x onerror=alert(1)>\nz\n```")[0][1]
    assert language and language.isalnum() and len(language) <= 20  # no markup gets through


@pytest.mark.slow  # over a second on 2 cores
def test_give_me_the_bibtex_answers_with_entries_the_page_shows_as_code(
    corpus: Assistant,
) -> None:
    """It was refused, with three unrelated papers listed as the closest."""
    first = answer("explain FlexPrefill", assistant=corpus)
    for question in ("give me the bibtex", "how do i cite it?"):
        result: CitedAnswer = then(question, first, corpus)
        assert not result.abstained and result.citations[0].paper_id == "OfjIlbelrT"
        (code,) = [piece for piece, language in code_blocks(result.answer) if language]
        entries = bibtexparser.parse_string(code).entries
        assert [e["url"] for e in entries] == ["https://openreview.net/forum?id=OfjIlbelrT"]
        shown = answer_markdown(result, 0)
        assert f"```bibtex\n{code}\n```" in shown  # not escaped
        assert "(#src-0-1" in shown  # the paper's line still links its card
