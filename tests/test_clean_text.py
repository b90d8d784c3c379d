"""One normaliser for what a reader sees of a record's text (issue 31, item 3): the answer's
quotes, the cards, the comparison table, the map's hover, the export and BibTeX all show a
title or quote the same clean way (`rag.common.latex.to_text`, pylatexenc underneath)."""

from __future__ import annotations

import numpy as np
import pytest

from rag.common.latex import to_text
from rag.corpus.bibtex import bibtex
from rag.explore.topicmap import Topic, TopicMap
from rag.index.vectors import PaperVectors
from rag.types import Paper
from ui.explore import make_explorer
from ui.latex import plain_text, text_only
from ui.papers_view import _cell
from ui.render import display_text

# Records as the bundle holds them (data/iclr2025/iclr2025.jsonl) and what a reader should see.
CASES = [
    (
        r"{ τ }-bench: A Benchmark for \underline{T}ool-\underline{A}gent-\underline{U}ser",
        "τ-bench: A Benchmark for Tool-Agent-User",
    ),
    (
        "ZETA: Leveraging Z -order Curves for Efficient Top- k Attention",
        "ZETA: Leveraging Z-order Curves for Efficient Top-k Attention",
    ),
    (r"ReNovo: Retrieval-Based \emph{De Novo} Mass", "ReNovo: Retrieval-Based De Novo Mass"),
    (r"extending the work on RNNs by~\citet{Wies23}.", "extending the work on RNNs by."),
    (
        "we propose a simple yet effective *unsupervised classifier-free guidance* that",
        "we propose a simple yet effective unsupervised classifier-free guidance that",
    ),
    (r"\sys achieves around 30\% to 70\% of", "sys achieves around 30% to 70% of"),
    (r"Fr\'echet distance, ``quoted'' --- ok", "Fréchet distance, “quoted” — ok"),
]


@pytest.mark.parametrize(("record", "text"), CASES)
def test_the_normaliser_shows_records_as_text(record: str, text: str) -> None:
    assert to_text(record) == text


@pytest.mark.parametrize(("record", "text"), CASES)
def test_every_view_shows_the_same_text(record: str, text: str) -> None:
    """The card's text (escaped Markdown), the hover, the export and a table cell agree."""
    assert text_only(record) == text
    assert plain_text(record) == text
    assert display_text(record).replace("\\", "") == text
    assert _cell(record).replace("\\", "") == text


def test_a_papers_own_macro_is_its_name_in_the_table_as_in_the_answer() -> None:
    macros = {"sys": "SqueezeAttention"}
    assert (
        to_text(r"we propose \sys to optimize", macros) == "we propose SqueezeAttention to optimize"
    )
    assert _cell(r"we propose \sys to optimize [1]", macros) == (
        "we propose SqueezeAttention to optimize \\[1\\]"
    )


def test_an_answers_own_emphasis_is_kept_for_markdown() -> None:
    assert to_text("a **bold** claim", emphasis=True) == "a **bold** claim"
    assert to_text("snake_case and a*b*c stay") == "snake_case and a*b*c stay"


def test_bibtex_titles_are_the_text_not_escaped_latex() -> None:
    tau = Paper("t1", CASES[0][0], "An abstract.", decision="Accept (Poster)")
    entry = bibtex([tau])
    assert "textbackslash" not in entry and "underline" not in entry, entry
    assert "Tool-Agent-User" in entry and "\\{" not in entry


def test_the_map_hover_shows_the_clean_title_and_a_seed_as_one() -> None:
    zeta = Paper("z1", CASES[1][0], "An abstract.", decision="Accept (Poster)")
    seed = Paper("003_x-013", "LLM-TH", "An abstract.", source="003_x.txt")
    corpus = PaperVectors([zeta, seed], np.eye(2, dtype=np.float32))
    topic_map = TopicMap(
        ["z1", "003_x-013"], np.zeros((2, 2), dtype=np.float32), np.array([0, 0]),
        [Topic(0, "attention", 2)],
    )  # fmt: skip
    found = make_explorer(topic_map, corpus)
    assert "Z-order Curves for Efficient Top-k" in found.hover[0].replace("<br>", " ")
    assert "unidentified seed abstract" in found.hover[1] and ".txt" not in found.hover[1]
    assert "decision unknown" not in found.hover[1]


def test_the_hover_of_a_marker_names_the_papers_own_macro() -> None:
    from rag.answer.citations import Citation, CitedAnswer
    from rag.types import RetrievedPaper
    from ui.render import answer_markdown

    quote = r"We propose \sys to optimize the KV-cache budget."
    squeeze = Paper(
        "9HK2rHNAhd", "SqueezeAttention: 2D Management of KV-Cache", f"Caches grow. {quote}"
    )
    cited = Citation(1, squeeze.id, squeeze.title, "", "", quote)
    result = CitedAnswer("q", "q", "It budgets the cache [1].", [cited],
                         [RetrievedPaper(squeeze, 0.9, 0.9)], False, "m")  # fmt: skip
    shown = answer_markdown(result, 0).replace("\\", "")
    assert "We propose SqueezeAttention to optimize" in shown and "sys" not in shown, shown


def test_a_backslash_before_punctuation_is_the_character_not_latex() -> None:
    """A model's Markdown escapes (`http\\://`, `\\[1\\]`, `\\@`) are not LaTeX spaces or math."""
    text = r"See http\://evil.example/a, ceo\@evil.example and \[1\]; 10\,000 \textit{x}"
    assert to_text(text, emphasis=True) == (
        "See http://evil.example/a, ceo@evil.example and [1]; 10 000 x"
    )


def test_the_terminal_shows_the_same_text_as_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    """`rag ask` and `rag compare` print what the page shows: a paper's own macro as its name,
    LaTeX as text; the exact quote stays in `--json`."""
    from rag.answer.citations import CitedAnswer, Quote, cite
    from rag.cli.output import ranked_line, readable, say_answer
    from rag.types import RetrievedPaper

    quote = r"\ours{} achieves 1.65x to 3.22x speedups over \emph{dense} FlashAttention."
    paper = Paper(
        "fm",
        r"FlashMask: Efficient and Rich Mask Extension of \textit{FlashAttention}",
        f"We propose \\ours{{}}, a sparse mask. {quote}",
        decision="Accept (Poster)",
    )
    sources = [RetrievedPaper(paper, 0.9, 0.9)]
    answer = CitedAnswer(
        "q", "q", f"- {quote} [1]", cite([Quote(1, "fm", quote, 1.0)], sources), sources, False, "x"
    )
    say_answer(answer)
    shown = capsys.readouterr().out
    assert "FlashMask achieves 1.65x to 3.22x speedups over dense FlashAttention. [1]" in shown
    assert "Extension of FlashAttention (Accept (Poster))" in shown
    assert "\\" not in shown
    assert answer.as_json()["citations"][0]["quote"] == quote  # the evidence as written
    assert readable(paper.title) in ranked_line(1, paper, 0.9)
