"""The page's pure helpers: LaTeX display forms, hover titles, the feedback log, the model menu."""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from markdown_it import MarkdownIt

from rag import own_macros
from rag.corpus.seeds import load_corpus
from rag.settings import BUNDLED_CORPUS, get_settings, with_overrides
from rag.types import Paper, RetrievedPaper
from tests.helpers import plain
from ui.explore import _hover, make_explorer
from ui.feedback import RateLimit, append_feedback, feedback_line, feedback_record, latest_feedback
from ui.latex import display_form, plain_latex, plain_text, text_only
from ui.model_menu import CONFIGURED, model_choices
from ui.render import (
    SourceRow,
    Turn,
    card_details,
    display_answer,
    display_text,
    escape_export,
    escape_text,
    highlighted_abstract,
    link_title,
    source_facts,
    source_line,
)

# LaTeX ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        (r"the \OOO{} framework", "the OOO framework"),
        (r"an \underline{\textit{O}}rthogonal cache", "an Orthogonal cache"),
        (r"{\it fast} and \emph{exact}, 50\% less", "fast and exact, 50% less"),
        (r"$\underline{\textbf{Gen}}$erat$\underline{\textbf{i}}$ve", "Generative"),
        ("from $5 to $10", "from $5 to $10"),  # money, not math
        ("no LaTeX {at} all", "no LaTeX {at} all"),  # braces without commands stay
    ],
)
def test_text_macros_become_plain_text(latex: str, text: str) -> None:
    assert display_form(latex) == [("text", text)]


def test_math_goes_to_katex_only_when_katex_knows_every_command() -> None:
    pieces = display_form(r"costs $O(N^2)$ and $\mathcal{O}(n \log n)$, with $\bv$ and $[0,1)$")
    assert pieces == [
        ("text", "costs "),
        ("math", "O(N^2)"),
        ("text", " and "),
        ("math", r"\mathcal{O}(n \log n)"),
        ("text", ", with bv and [0,1)"),  # a paper's own macro; an unbalanced bracket
    ]
    assert plain_text(r"$O(N)$ in \textit{time}") == "$O(N)$ in time"
    assert plain_latex(r"\times{}2 \href{javascript:x}{y}") == "×2 y"  # the text, no link


@pytest.mark.parametrize(
    "body",
    [
        r"\textcolor{red}{\boxed{Oral}}",
        r"x \color{white} hidden",
        r"\colorbox{red}{Oral}",
        r"\fcolorbox{red}{white}{Oral}",
        r"\boxed{x^2}",
        r"\fbox{Oral}",
        r"\htmlStyle{color: white}{x}",
        r"\htmlClass{badge}{Oral}",
        r"\href{https://example.org}{x}",
        r"\url{https://example.org}",
        r"\mathcolor{red}{x}",
        r"\phantom{x} y",
    ],
)
def test_colour_box_and_link_commands_never_reach_katex(body: str) -> None:
    pieces = display_form(f"A ${body}$ and $x^2$")
    assert [p for p in pieces if p[0] == "math"] == [("math", "x^2")], pieces


def test_a_title_cannot_draw_a_badge_or_hide_text() -> None:
    paper = Paper("p", r"Fast $\textcolor{red}{\boxed{Oral}}$ \color{white} nets", "x.")
    assert display_text(paper.title) == "Fast Oral nets"  # plain text: no math, no colour
    assert display_form(r"$x \color{white} secret$") == [("text", "x secret")]
    row = SourceRow(1, RetrievedPaper(paper, 0.5, 0.5), [])
    shown = source_line(row) + " " + source_facts(row)
    assert "$" not in shown and "badge" not in shown and "color" not in shown


@pytest.mark.parametrize(
    ("decision", "tier"),
    [
        ("Accept (Oral)", "Oral"),
        ("Accept (Spotlight)", "Spotlight"),
        ("Accept (Poster)", "Poster"),
        ("accept  (poster)", "Poster"),  # case and spaces aside
        ("Oral", "Oral"),
        ("ICLR 2025 Spotlight", "Spotlight"),
        ("Reject (considered for an Oral, then rejected)", ""),
        ("Accept (Poster) (Oral candidate)", ""),
        ("ICLR 2025 Poster (Oral candidate)", ""),
        ("Not an Oral", ""),
        ("Accept", ""),
        ("", ""),
    ],
)
def test_only_an_exact_decision_names_a_tier(decision: str, tier: str) -> None:
    paper = Paper("p", "Title", "Abstract.", decision=decision)
    assert paper.tier == tier
    facts = source_facts(SourceRow(1, RetrievedPaper(paper, 0.5, 0.5), []))
    assert ("-badge[" in facts) == bool(tier), facts
    if not tier:  # the decision itself is shown, as text
        assert facts.startswith(display_text(decision) or "Decision unknown")


@pytest.mark.slow
def test_every_bundled_paper_keeps_its_tier() -> None:
    """Tiers come only from exact decisions; the bundle's are all of that form."""
    papers = load_corpus([BUNDLED_CORPUS]).papers
    tiers = Counter(p.tier for p in papers if p.has_abstract)
    # The SPACE seed is the accepted poster "Does Spatial Cognition Emerge in Frontier Models?".
    assert tiers == {"Oral": 205, "Spotlight": 372, "Poster": 1534, "": 12}
    # With the 1,593 title records, every accepted paper: 213 orals, 380 spotlights (the
    # seeds without a decision are the 12 papers the lists do not name).
    every = Counter(p.tier for p in papers)
    assert every == {"Oral": 213, "Spotlight": 380, "Poster": 3111, "": 12}
    for paper in papers:
        assert paper.tier == paper.decision.removeprefix("Accept (").removesuffix(")")


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"


def test_bidi_controls_never_reach_a_heading_card_source_list_or_map_hover() -> None:
    title = f"Safe \u202eFDP.exe\u202c title{BIDI} $x^2$"
    paper = Paper("p", title, "An \u2067abstract\u2069.", keywords=("k\u202ew",))
    row = SourceRow(1, RetrievedPaper(paper, 0.5, 0.5), [])
    shown = {
        "heading": source_line(row),
        "card heading": display_text(paper.title),
        "plain": escape_text(paper.title),
        "card": card_details(paper) + highlighted_abstract(paper.abstract, ["abstract"]),
        "link title": link_title(paper.title),
        "answer": display_answer(f"It is {title} [1]"),
        "export": escape_export(title),
        "hover": _hover(title),
    }
    topic_map = SimpleNamespace(
        paper_ids=["p"], topics=np.array([0]), topic_list=[SimpleNamespace(label="t\u202eopic")]
    )
    corpus = SimpleNamespace(get=lambda pid: paper, papers=[paper])
    found = make_explorer(topic_map, corpus)  # type: ignore[arg-type]
    shown["map hover"] = found.hover[0]
    for where, text in shown.items():
        assert not set(text) & set(BIDI), (where, text)
    assert shown["heading"] == "\\[1\\] Safe FDP\\.exe title $x^2$"
    assert "FDP.exe title" in shown["map hover"]


def test_display_text_is_escaped_around_math_and_never_a_list_or_heading() -> None:
    for quote in ("2) Cumulative-Attention is fast.", "1. First", "# Heading", "- item", "+ x"):
        shown = display_text(quote)
        html = MarkdownIt("commonmark").render(shown)
        assert html == f"<p>{quote}</p>\n", (quote, shown)
    shown = display_text("Attention <b>costs</b> $O(N)$ for [1] **N**")
    # A record's Markdown emphasis is removed (issue 31), not shown as literal asterisks.
    assert shown == "Attention \\<b\\>costs\\</b\\> $O(N)$ for \\[1\\] N"


def test_a_quote_after_a_bullet_is_not_a_nested_list() -> None:
    text = "**Paper** [1]\n- 2) Cumulative attention [1]\n- Method: 3. we do [1]\n  - sub"
    shown = display_answer(text)
    html = MarkdownIt("commonmark").render(shown)
    assert html.count("<ul>") == 2 and "<ol" not in html  # the model's sublist stays a list
    assert "<li>2) Cumulative attention [1]</li>" in html and "<li>Method: 3. we do" in html


# Hover titles ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        'Quotes " and "" end titles',
        "Brackets ] ) and [x](javascript:alert(1)) <script>alert(2)</script>",
        "A line\nbreak and ' single quotes & &quot; entities",
    ],
)
def test_a_link_title_holds_any_text_and_cannot_end_the_link(title: str) -> None:
    markdown = f'[\\[1\\]](#src-0-1 "{link_title(title)}") after'
    tokens = MarkdownIt("commonmark").parseInline(markdown)[0].children or []
    [link] = [t for t in tokens if t.type == "link_open"]
    assert link.attrGet("href") == "#src-0-1"
    assert link.attrGet("title") == html.unescape(" ".join(title.split()))  # "&quot;" is "
    assert [t.content for t in tokens if t.type == "text"][-1] == " after"
    assert "<script" not in MarkdownIt("commonmark").render(markdown)


def test_a_long_title_is_cut() -> None:
    assert len(plain(link_title("word " * 200))) <= 300


# Cards -----------------------------------------------------------------------------------------


def test_a_card_names_authors_and_says_when_their_order_is_not_known() -> None:
    paper = Paper(id="p", title="t", abstract="a", authors=("B. Second", "A. First"))
    shuffled = Paper(
        id="q", title="t", abstract="a", authors=("X",), extra={"authors_ordered": False}
    )
    tagged = Paper(id="r", title="t", abstract="a", keywords=("RL", "<b>x</b>"))
    assert card_details(paper) == "**Authors:** B\\. Second, A\\. First"
    assert card_details(shuffled) == "**Authors:** X *(order not known)*"
    assert card_details(tagged) == "**Keywords:** RL, \\<b\\>x\\</b\\>"


# The feedback log ------------------------------------------------------------------------------


def test_feedback_lines_are_ascii_and_the_last_per_turn_counts(tmp_path: Path) -> None:
    log = tmp_path / "feedback.jsonl"
    first, second = Turn("q1 \u2028 split?"), Turn("q2 — naïve")
    append_feedback(log, feedback_record(first, "s1", "up"))
    append_feedback(log, feedback_record(first, "s1", "down", ["Wrong paper", "<b>x</b>"], "no"))
    append_feedback(log, feedback_record(second, "s1", "up"))
    append_feedback(log, feedback_record(second, "s1", None))  # withdrawn
    append_feedback(log, feedback_record(first, "s2", "up"))  # another session, same turn id
    with log.open("a") as f:
        f.write('{"rating": "up", "question": "an old line without ids"}\n{"torn": \n')
    raw = log.read_bytes()
    assert raw.isascii() and len(raw.decode().split("\u2028")) == 1
    assert feedback_line({"q": "\u2028"}) == '{"q":"\\u2028"}\n'

    latest = latest_feedback(log)
    assert [(r.get("session"), r.get("rating")) for r in latest] == [
        ("s1", "down"),
        ("s2", "up"),
        (None, "up"),
    ]
    assert latest[0]["reasons"] == ["Wrong paper"]  # only the offered reasons are kept
    assert latest[0]["question"] == "q1 \u2028 split?"
    assert latest_feedback(tmp_path / "missing.jsonl") == []


def test_the_rate_limit_counts_a_sliding_window() -> None:
    limit = RateLimit(limit=3, window=60.0)
    assert [limit.allow(t) for t in (0, 1, 2, 3, 59.9)] == [True, True, True, False, False]
    assert limit.allow(60.0) and not limit.allow(60.5)
    assert limit.allow(121.0)


# The model menu --------------------------------------------------------------------------------


def test_the_model_menu_lists_runnable_presets_without_secrets() -> None:
    offline = with_overrides(get_settings(), {"llm": {"model": "offline"}})
    keys = {c.key: c for c in model_choices(offline, {})}
    assert list(keys) == [CONFIGURED, "local-server"]  # no OpenAI without its key
    assert keys["local-server"].settings.llm.base_url == "http://127.0.0.1:11434/v1"
    assert keys["local-server"].settings.retrieval == offline.retrieval

    server = with_overrides(
        offline,
        {"llm": {"model": "openai:qwen", "base_url": "http://admin:s3cr3t@gpu.lab:8000/v1"}},
    )
    choices = model_choices(server, {"OPENAI_API_KEY": "sk-1"})
    labels = [c.label for c in choices]
    assert labels[0] == "openai:qwen at http://gpu.lab:8000"
    assert "Offline: quoted extracts" in labels and "openai:gpt-4o-mini" in labels
    assert "s3cr3t" not in json.dumps(labels)
    # OpenAI's preset does not inherit the configured server (it would send it the key).
    openai = next(c for c in choices if c.key == "openai")
    assert openai.settings.llm.base_url is None


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        (r"the Fr\'echet distance", "the Fréchet distance"),
        (
            r"G\"odel, na\"{\i}ve, {\'e}t\'{e}, \c{c}a, \v{S}ediv\'y",
            "Gödel, naïve, été, ça, Šedivý",
        ),
        (r"a --- b, pages 1--2, ZETA~matches", "a — b, pages 1–2, ZETA matches"),
        (r"``How should we?'' and `this'", "“How should we?” and ‘this’"),
        (
            r"$\textit{capability}$ and $\textbf{BitStack}$ cut 4.8\%",
            "capability and BitStack cut 4.8%",
        ),
        ("--flag and ~5% stay", "--flag and ~5% stay"),  # not LaTeX typography
    ],
)
def test_accents_and_typography_are_shown_as_printed(latex: str, text: str) -> None:
    assert display_form(latex) == [("text", text)]


def test_a_papers_own_macro_is_its_name_where_the_title_gives_one() -> None:
    flashmask = ("FlashMask: Efficient and Rich Mask Extension", r"we propose \ours{}, which")
    other = ("Untitled study of caches", r"we propose \sys, which")
    macros = own_macros([flashmask, other])
    assert macros == {"ours": "FlashMask"}  # the second title names nothing
    assert display_form(flashmask[1], macros) == [("text", "we propose FlashMask, which")]
    assert display_form(other[1], macros) == [("text", "we propose sys, which")]
    # Two papers using \ours: neither name is right for both.
    assert own_macros([flashmask, ("ZETA: Zeta", r"\ours works")]) == {}
    assert display_text(r"\ours{} is $O(N)$", macros) == "FlashMask is $O(N)$"


def test_hover_text_has_no_latex_left() -> None:
    assert text_only(r"$\textbf{BitStack}$: top-$k$ at 4.8\% and $\alpha$") == (
        "BitStack: top-k at 4.8% and α"
    )


def test_an_html_entity_in_an_abstract_shows_as_its_character_and_never_as_markup() -> None:
    assert display_text("three modalities&#151;genomics") == "three modalities\u2014genomics"
    assert display_answer("- modalities&#151;genomics [1]").startswith("- modalities\u2014genomics")
    shown = MarkdownIt("commonmark").render(display_text("&lt;script&gt;alert(1)&lt;/script&gt;"))
    assert "<script" not in shown and "&lt;script&gt;" in shown
