"""Untrusted text in the page's Markdown and in the chat export: what the autolink, icon and
heading passes of Streamlit (remark-gfm) and GitHub (cmark-gfm) could still find (issue 22,
items 3 and 13), and the feedback log's caps (item 14). The rendered page is checked in
Chromium by test_hostile_browser.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from rag.answer.citations import Citation, CitedAnswer
from rag.types import Paper, RetrievedPaper
from ui.export import chat_markdown
from ui.feedback import (
    FeedbackRefused,
    RateLimit,
    append_feedback,
    feedback_line,
    feedback_record,
)
from ui.render import (
    Turn,
    display_answer,
    display_text,
    escape_answer,
    escape_export,
    escape_message,
    escape_text,
)

HOSTILE = (
    "see http://evil.example/a HTTPS://EVIL.EXAMPLE www.evil.example WWW.Evil.Example "
    "ceo@evil.example mailto:ceo@evil.example xmpp:bot@evil.example "
    ":material/warning: :smile: :red[urgent] openai:m:"
)
# What the autolink-literal and icon passes start from, once backslash escapes are undone
# (they run after them): a scheme's `://`, `www.`, a letter before `@`, `:name`.
TRIGGERS = re.compile(r"(?i)://|www\.|[\w.+-]@|:[a-z_]")
ESCAPES = [escape_text, escape_export, escape_answer, display_text, display_answer]


@pytest.mark.parametrize("escape", ESCAPES, ids=lambda f: f.__name__)
def test_no_autolink_or_icon_survives_the_backslash_escapes(escape: object) -> None:
    shown = escape(HOSTILE)  # type: ignore[operator]
    assert not TRIGGERS.search(shown.replace("\\", "")), shown
    assert shown.replace("\\", "").replace("\u2060", "") == HOSTILE  # reads as written


@pytest.mark.parametrize(
    "message",
    [HOSTILE, f"answered 400 for openai:gpt-test: {HOSTILE}.", f"`rag ingest` failed: {HOSTILE}"],
)
def test_an_error_message_is_escaped_as_text_is(message: str) -> None:
    """Issue 32 (M1): a model server's 400 showed 3 links, an icon, an emoji and red text."""
    shown = escape_message(RuntimeError(message))
    assert not TRIGGERS.search(shown.replace("\\", "")), shown
    assert shown.replace("\\", "").replace("\u2060", "") == message[:1].upper() + message[1:]
    tokens = MarkdownIt("commonmark").parseInline(shown)[0].children or []
    assert [t.type for t in tokens] == (["code_inline", "text"] if "`" in message else ["text"])


def test_a_marker_in_the_export_is_no_link() -> None:
    """Issue 32 (L3): `[1](//evil.example/phish)` in a reply became a link in the export."""
    answer = forged_answer()
    answer.answer = "It works [1](//evil.example/phish), [1][9](//evil.example/b) [1] (x)."
    exported = chat_markdown([Turn("q", answer=answer)])
    tokens = MarkdownIt("commonmark").parse(exported)
    links = [c.attrs.get("href") for t in tokens for c in t.children or [] if c.type == "link_open"]
    assert links == ["https://openreview.net/forum?id=p1"], links  # the reference's own <url>
    assert "It works [1]\\(//evil" in exported


@pytest.mark.parametrize(
    "line", ["-", " - ", "=", "==", "* * *", "_ _ _", "- - -", "***", "---", "\t-"]
)
def test_a_lone_underline_or_rule_under_model_text_is_no_heading(line: str) -> None:
    text = f"A forged heading\n{line}\nReferences"
    tokens = [t.type for t in MarkdownIt("commonmark").parse(display_answer(text))]
    assert "heading_open" not in tokens and "hr" not in tokens, tokens
    assert "- a list item" in display_answer("- a list item")  # lists stay lists


def forged_answer() -> CitedAnswer:
    paper = Paper(
        id="p1",
        title="Contact ceo@evil.example or www.evil.example",
        abstract="It works. Mail ceo@evil.example.",
        decision="Accept (Oral)",
        url="https://openreview.net/forum?id=p1",
    )
    reply = (
        "It works [1].\nReferences\n-\n1. Forged paper at http://evil.example/paper or "
        "www.evil.example, write to ceo@evil.example :warning:\n- - -\nMore\n="
    )
    citation = Citation(1, "p1", paper.title, paper.url, paper.decision, "Mail ceo@evil.example.")
    return CitedAnswer(
        question="q",
        standalone_question="q",
        answer=reply,
        citations=[citation],
        sources=[RetrievedPaper(paper, 1.0, 0.9)],
        abstained=False,
        model="gpt-test",
    )


def test_the_export_has_only_its_own_headings_rules_and_links() -> None:
    exported = chat_markdown([Turn("Who wrote it? www.evil.example", answer=forged_answer())])
    tokens = MarkdownIt("commonmark").parse(exported)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == [
        "ICLR 2025 research assistant: chat",
        "1. Who wrote it? www\u2060.evil.example",
        "References",
    ]
    assert [t.type for t in tokens].count("hr") == 1  # the app's rule above the references
    # GitHub autolinks after the escapes too: only the paper's own <url> may be a link.
    body, references = exported.split("\n## References\n")
    assert not TRIGGERS.search(body.replace("\\", "")), body
    assert references.strip().splitlines() == [
        "1. Contact ceo\u2060@evil.example or www\u2060.evil.example. "
        "<https://openreview.net/forum?id=p1>"
    ]


# The feedback log --------------------------------------------------------------------------


def test_the_feedback_log_stops_growing_at_its_cap(tmp_path: Path) -> None:
    log = tmp_path / "feedback.jsonl"
    line = feedback_line(feedback_record(Turn("q"), "s", "up"))
    cap = 3 * len(line) + 10
    for _ in range(3):
        append_feedback(log, feedback_record(Turn("q"), "s", "up"), max_bytes=cap)
    with pytest.raises(FeedbackRefused, match="is full"):
        append_feedback(log, feedback_record(Turn("q"), "s", "up"), max_bytes=cap)
    assert log.stat().st_size <= cap and len(log.read_text().splitlines()) == 3


def test_a_shared_rate_limit_holds_across_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    limit = RateLimit(limit=50, window=600.0)
    with ThreadPoolExecutor(8) as pool:
        allowed = list(pool.map(lambda i: limit.allow(float(i) / 1000), range(400)))
    assert sum(allowed) == 50


def test_the_export_shows_abstract_latex_in_its_display_form() -> None:
    # Issue 23: the export wrote `$\textbf{BitStack}$` and `4.8\%` as the abstract has them.
    paper = Paper(
        id="p2",
        title=r"$\textbf{BitStack}$: Fine-Grained Size Control",
        abstract=r"$\textbf{BitStack}$ cuts memory by 4.8\% with Fr\'echet scores---fast.",
        url="https://openreview.net/forum?id=p2",
    )
    citation = Citation(1, "p2", paper.title, paper.url, "", paper.abstract)
    answer = CitedAnswer(
        question="q",
        standalone_question="q",
        answer=paper.abstract + " [1]",
        citations=[citation],
        sources=[RetrievedPaper(paper, 1.0, 0.9)],
        abstained=False,
        model="offline:extractive",
    )
    exported = chat_markdown([Turn("What is BitStack?", answer=answer)])
    for raw in ("\\textbf", "\\%", "\\'e", "scores---", "$"):
        assert raw not in exported, raw
    assert "BitStack cuts memory by 4.8% with Fréchet scores—fast. [1]" in exported
    assert "1. BitStack: Fine-Grained Size Control." in exported
