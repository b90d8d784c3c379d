"""Untitled seed abstracts are shown as what they are and get no BibTeX entry (issue 20,
item 8)."""

from __future__ import annotations

from rag.corpus.bibtex import NO_ENTRY, bibtex
from rag.types import Paper


def test_an_untitled_seed_is_shown_by_its_file_and_paragraph(seed_papers: list[Paper]) -> None:
    gist = next(p for p in seed_papers if p.id == "003_4ff9ec978693024e-006")
    assert gist.untitled and gist.title.startswith("The imperative to eliminate")
    # Issue 31: what it is, never a file name for a title.
    assert gist.shown_title == "An unidentified seed abstract"
    named = next(p for p in seed_papers if p.title == "ReBIND")
    assert named.shown_title == "ReBIND (an unidentified seed abstract)"
    for paper in seed_papers:
        assert ".txt" not in paper.shown_title and "paragraph" not in paper.shown_title


def test_a_titled_paper_keeps_its_title() -> None:
    paper = Paper(
        "abc", "FlexPrefill: Sparse Attention", "We propose FlexPrefill.", source="x.jsonl"
    )
    assert not paper.untitled and paper.shown_title == paper.title
    # Letters a PDF spaced apart are shown joined (two titles of the accepted list).
    spaced = Paper("rUxr9Ll5FQ", "I n t e r L C M : Low-Quality Images as States", "")
    assert spaced.shown_title == "InterLCM : Low-Quality Images as States"
    assert Paper("x", "A B C of Graphs", "").shown_title == "A B C of Graphs"  # three: words


def test_untitled_seeds_get_no_bibtex_entry_and_say_why(seed_papers: list[Paper]) -> None:
    gist = next(p for p in seed_papers if p.id == "003_4ff9ec978693024e-006")
    titled = Paper(
        "WK6K1FMEQ1", "Does Spatial Cognition Emerge in Frontier Models?", "Not yet.",
        decision="Accept (Poster)", url="https://openreview.net/forum?id=WK6K1FMEQ1",
    )  # fmt: skip
    text = bibtex([gist, titled])
    assert text.count("@inproceedings") == 1 and "Spatial Cognition" in text
    assert "imperative" not in text
    assert f"% No entry for An unidentified seed abstract: {NO_ENTRY}" in text
    assert ".txt" not in text
    assert bibtex([gist]).startswith("% No entry") and "@" not in bibtex([gist])
