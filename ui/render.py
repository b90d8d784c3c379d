"""Answers as safe Markdown: escaped text, [n] markers linked to source cards, the chat export.

Abstracts, titles, questions and model output are all untrusted. Nothing here produces
HTML; text that is not ours is escaped so that Markdown (and Streamlit's own directives,
math and icons) cannot turn it into links, images or markup.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from rag import MESSAGES, VENUE, authors_in_order, fenced, own_macros, parse_markers, redact
from rag import latex_to_text as to_text
from rag.errors import RagError
from rag.types import TIERS, Paper
from ui.code_blocks import code_blocks
from ui.latex import display_form, plain_text
from ui.texts import APP_CAPTION, APP_TITLE, ASK_PLACEHOLDER  # noqa: F401 (re-exported)
from ui.uncited import marking, uncited_of

if TYPE_CHECKING:
    from rag import Citation, CitedAnswer
    from rag.types import RetrievedPaper

# Every ASCII punctuation character CommonMark lets us escape that can start markup, plus
# `$` (math) and `:` (Streamlit's :color[...] directives, :icons: and emoji shortcodes).
# `)` too: "2) Cumulative..." at a line start would be an ordered list item.
_ACTIVE = re.compile(r"([\\`*_\[\]<>#+\-.!|~$:&()=])")
# In the exported file, which any Markdown viewer may render: no HTML, links or emphasis.
_EXPORT_ACTIVE = re.compile(r"([\\`*_\[\]<>|&])")
# Model output keeps emphasis and lists. Escaped: links, images, HTML, math, headings (`#`,
# setext `===`/`---`), Streamlit's :directives: and :icons:, and what GFM turns into links by
# itself (`https:`, `www.`, `a@b.org`): the `:`, `.` or `@` that makes them is escaped.
_ANSWER_ACTIVE = re.compile(r"([\\`\[\]<>$&|~#=:@])|(?<=w)(\.)|(?<=-)(-)|(-)(?=-)")
# A `code` span in an error message (one line): shown as code, which nothing renders in.
_CODE_SPAN = re.compile(r"`[^`\n]+`")
# A list item or heading opened right after a list marker ("- 2) Cumulative..." is a nested
# list): the second marker is escaped.
_NESTED_MARKER = re.compile(r"(?m)^(\s*(?:[-*+]|\d{1,9}[.)])[ \t]+\d{0,9})(?=[-*+.)]\s)")
TIER_COLOURS = dict(zip(TIERS, ("red", "orange", "blue"), strict=True))
# Terminal and bidi controls, which a hover title has no use for.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Bidi embeddings, overrides, isolates and marks: a title holding U+202E shows reversed text.
_BIDI = re.compile(r"[\u200e\u200f\u202a-\u202e\u2066-\u2069]")
TITLE_CHARS = 300  # a hover title longer than this is cut
# Streamlit's (remark-gfm's) and GitHub's autolink passes and Streamlit's :icon: and :emoji:
# pass run on the text after backslash escapes are undone, so `http\://`, `www\.`, `a\@b.org`
# and `\:material/warning\:` still became links and icons. A word joiner (invisible, as for a
# quoted `[n]`) after `www`, before `@` and after a `:` that opens a name or `//` breaks them.
JOINER = "\u2060"
_AUTOLINK = re.compile(r"(?i)(?<=www)(?=\.)|(?=@)|(?<=:)(?=[/\w])")
# A line of only `-` or `=` (a setext underline: the line above becomes a heading, which can
# forge the export's "References") or a rule of `*`, `-`, `_` with spaces between: its first
# mark is escaped. Whole texts only; a streamed piece only where its newline is in the piece.
_UNDERLINE = re.compile(r"(?m)^([ \t]*)(?=([-=*_])(?:[ \t]*\2)*[ \t]*$)")
_UNDERLINE_IN_PIECE = re.compile(r"(?m)^([ \t]*)(?=([-=*_])(?:[ \t]*\2)*[ \t]*\n)")


def without_bidi(text: str) -> str:
    """`text` without bidi controls, so it reads in the order it is written; every path that
    shows untrusted text (headings, cards, source lists, link titles, map hover) uses it."""
    return _BIDI.sub("", text)


def no_autolinks(text: str) -> str:
    """`text` with a word joiner where an autolink, icon or emoji code would start."""
    return _AUTOLINK.sub(JOINER, text)


def escape_text(text: str) -> str:
    """Untrusted plain text shown exactly as written: nothing in it is Markdown."""
    return _ACTIVE.sub(r"\\\1", no_autolinks(" ".join(without_bidi(text).split())))


def escape_export(text: str) -> str:
    """Untrusted text for the exported Markdown file: inert, yet readable as plain text."""
    return _EXPORT_ACTIVE.sub(r"\\\1", no_autolinks(" ".join(without_bidi(text).split())))


def escape_answer(text: str) -> str:
    """Model output with bold, italics and lists kept; no HTML, links, images, math, headings
    or Streamlit directives (streamed pieces are escaped one by one, so no rule spans lines)."""
    text = _ANSWER_ACTIVE.sub(lambda m: "\\" + m.group(0), no_autolinks(without_bidi(text)))
    return _UNDERLINE_IN_PIECE.sub(_escape_mark, text)


def _escape_mark(match: re.Match[str]) -> str:
    return match.group(1) + "\\"


def escape_underlines(text: str) -> str:
    """Lines of only `-`, `=`, `*` or `_` escaped, so text above them is no setext heading."""
    return _UNDERLINE.sub(_escape_mark, text)


def display_text(text: str, macros: Mapping[str, str] | None = None) -> str:
    """Untrusted text as the page shows it: `$...$` math for KaTeX, LaTeX text macros as plain
    text (`\\textit{O}` -> O), everything else escaped as by `escape_text`."""
    return "".join(
        f"${piece}$" if kind == "math" else spaced(escape_text, piece)
        for kind, piece in display_form(without_bidi(text), macros)
    ).strip()


def spaced(escape: Callable[[str], str], piece: str) -> str:
    """`escape(piece)` with the space at either end kept (it separates the piece from math)."""
    left = " " if piece[:1].isspace() else ""
    right = " " if piece[-1:].isspace() and piece.strip() else ""
    return left + escape(piece) + right


def display_answer(text: str, macros: Mapping[str, str] | None = None) -> str:
    """Answer text with math and LaTeX text macros shown as `display_text` does, escaped as by
    `escape_answer`, and no list or heading nested in a list item (a quote starting "2) ...")."""
    shown = []
    for line in text.split("\n"):
        pieces = []
        line = without_bidi(line)
        shown_line = display_form(line, macros, emphasis=True) if line.strip() else []
        for kind, piece in shown_line or [("text", line)]:
            pieces.append(f"${piece}$" if kind == "math" else escape_answer(piece))
        # display_form collapses the spaces at either end: a sublist's indent, the space
        # before a marker
        indent = line[: len(line) - len(line.lstrip())]
        tail = line[len(line.rstrip()) :] if line.strip() else ""
        shown.append(indent + "".join(pieces) + tail)
    shown_text = escape_underlines("\n".join(shown))
    return _NESTED_MARKER.sub(lambda m: m.group(1) + "\\", shown_text)


def streamed_markdown(escaped: str) -> str:
    """Streamed pieces (each escaped by `escape_answer`) joined: no list nested in a list item
    on its line (`- - - - x` would nest one list per dash, thousands deep)."""
    return _NESTED_MARKER.sub(lambda m: m.group(1) + "\\", escaped)


def link_title(text: str) -> str:
    """Text for a Markdown link title `"..."`: one line, every ASCII punctuation escaped."""
    text = " ".join(_CONTROL.sub("", plain_text(text)).split())
    if len(text) > TITLE_CHARS:
        text = text[: TITLE_CHARS - 1].rstrip() + "…"
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", text)


def escape_message(error: BaseException | str) -> str:
    """An error or note as one line (a `RagError` with its hint worded for the page: a button
    or the model menu, not a command), escaped as `escape_text` escapes (a server's message may
    hold links, `:icons:`, `:red[...]` or `openai:m:`, an emoji); `code` spans kept (inert)."""
    # Every error shown passes here: the library's own say what to do as the page does it.
    said = error.worded("action") if isinstance(error, RagError) else str(error)
    text = redact(said).strip() or type(error).__name__
    text = without_bidi(text[:1].upper() + text[1:])
    pieces: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        pieces += [spaced(escape_text, text[last : span.start()]), span.group(0)]
        last = span.end()
    pieces.append(spaced(escape_text, text[last:]))
    return "".join(pieces).strip()


def card_anchor(turn_index: int, n: int) -> str:
    """The id of source card `n` under answer `turn_index` (what `[n]` links to)."""
    return f"src-{turn_index}-{n}"


def link_markers(
    text: str,
    link: Callable[[int], str | None],
    title: Callable[[int], str] | None = None,
    escape: Callable[[str], str] = escape_answer,
) -> str:
    """Escape `text` and turn each [n] marker into links; `link(n)` None leaves n plain.

    `title(n)` (plain text) becomes the link's hover title.
    """
    pieces: list[str] = []
    last = 0
    for marker in parse_markers(text):
        pieces.append(escape(text[last : marker.start]))
        parts = []
        for n in marker.numbers:
            target = link(n)
            hover = f' "{link_title(title(n))}"' if target and title is not None else ""
            parts.append(f"[\\[{n}\\]]({target}{hover})" if target else f"\\[{n}\\]")
        pieces.append("".join(parts))
        last = marker.end
    pieces.append(escape(text[last:]))
    return "".join(pieces)


def answer_markdown(answer: CitedAnswer, turn_index: int) -> str:
    """The answer with every [n] of a cited source linking to its card below; hovering [n]
    shows the paper's title, tier and the quote."""
    by_number = citations_by_number(answer)
    quotes = {
        n: next((c.quote for c in cs if c.quote and c.supported), "") for n, cs in by_number.items()
    }

    def title(n: int) -> str:
        paper = answer.sources[n - 1].paper
        known = paper.tier or paper.decision or ("" if paper.untitled else "decision unknown")
        parts = [paper.shown_title, known]
        # The quote's own macro (\sys) as its paper's name, as the answer shows it (issue 31).
        if quotes[n]:
            said = f"“{to_text(quotes[n], macros)}”"
        elif any(c.supported is False for c in by_number[n]):
            said = "the claim is not found in this abstract"
        else:
            said = "the claim is not checked against this abstract"
        return " · ".join(p for p in parts if p) + f" — {said}"

    macros = own_macros((s.paper.title, s.paper.abstract) for s in answer.sources)
    escape = marking(lambda text: display_answer(text, macros), uncited_of(answer))
    shown = "\n".join(
        fenced(piece, language)
        if language is not None  # a code block ("```bibtex"): inert as it is
        else link_markers(
            piece,
            lambda n: f"#{card_anchor(turn_index, n)}" if n in quotes else None,
            title=lambda n: title(n) if 1 <= n <= len(answer.sources) else quotes[n],
            # A quote's \\ours is its paper's name when one source alone uses it; a
            # sentence with no [n] is muted and badged "uncited" (ui.uncited).
            escape=escape,
        )
        for piece, language in code_blocks(answer.answer)
    )
    # A source's own link written out (a record answer's "· https://openreview.net/...") is
    # a link, not text broken by the joiner that stops autolinks: copied, it must work.
    for url in dict.fromkeys(s.paper.url for s in answer.sources if safe_url(s.paper.url)):
        shown = shown.replace(display_answer(url, macros), source_link(url))
    return shown


def safe_url(url: str) -> str | None:
    """`url` if it is a plain http(s) address, without `user:password@`, and with the
    characters that end a Markdown link encoded."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host or any(c.isspace() for c in url):
        return None
    # A paper link needs no credentials (never show them); a non-ASCII host is shown in its
    # xn-- form, so a look-alike of openreview.net does not look like it.
    netloc = parts.netloc.rpartition("@")[2]
    if not netloc.isascii():
        try:
            netloc = netloc.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    url = parts._replace(netloc=netloc).geturl()
    return quote(url, safe=":/?#@!$&'*+,;=%~-._")


def link_host(url: str) -> str:
    """The host a link really goes to (`safe_url` has made it ASCII)."""
    return (urlsplit(url).hostname or "").rstrip(".")


def source_link(url: str) -> str:
    """A paper's link labelled by where it really goes: "OpenReview" only for openreview.net.

    `https://openreview.net@evil.example/` goes to evil.example and says so.
    """
    safe = safe_url(url)
    if safe is None:
        return "no OpenReview link"
    host = link_host(safe)
    label = "OpenReview" if host == "openreview.net" or host.endswith(".openreview.net") else host
    return f"[{escape_text(label)}]({safe})"


def tier_badge(tier: str) -> str:
    """A coloured Markdown badge for Oral / Spotlight / Poster, empty when unknown."""
    colour = TIER_COLOURS.get(tier)
    return f":{colour}-badge[{tier}]" if colour else ""


def quote_spans(abstract: str, quotes: Iterable[str]) -> list[tuple[int, int]]:
    """Where each quote sits in the abstract, sorted, overlaps merged."""
    spans = []
    for q in quotes:
        q = q.strip()
        start = abstract.find(q) if q else -1
        if start >= 0:
            spans.append((start, start + len(q)))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def highlighted_abstract(
    abstract: str, quotes: Iterable[str], macros: Mapping[str, str] | None = None
) -> str:
    """The abstract as `display_text` shows it, the cited sentences on an orange background."""
    pieces: list[str] = []
    last = 0
    for start, end in quote_spans(abstract, quotes):
        pieces.append(display_text(abstract[last:start], macros))
        pieces.append(f" **:orange-background[{display_text(abstract[start:end], macros)}]** ")
        last = end
    pieces.append(display_text(abstract[last:], macros))
    return "".join(pieces).strip()


@dataclass
class SourceRow:
    """One line of the list under an answer: source `n` (its position in `answer.sources`)."""

    n: int
    source: RetrievedPaper
    citations: list[Citation]  # the answer's citations of it, empty when uncited

    @property
    def cited(self) -> bool:
        return bool(self.citations)

    @property
    def quotes(self) -> list[str]:
        """The sentences quoted as support: none for a claim not found in the abstract, nor
        for an unchecked one (a sentence marked would pass for evidence it is not)."""
        return [c.quote for c in self.citations if c.quote and c.supported]

    @property
    def supported(self) -> bool | None:
        """False when a claim citing it is not found in its abstract, None when unchecked."""
        verdicts = [c.supported for c in self.citations]
        return False if False in verdicts else None if None in verdicts else True


def source_rows(answer: CitedAnswer) -> list[SourceRow]:
    """Every retrieved paper, numbered by position (what [n] refers to); for a refusal, the
    closest papers it names (`CitedAnswer.nearest`). The library puts the cited papers first."""
    cited = citations_by_number(answer)
    sources = answer.nearest if answer.abstained else answer.sources
    return [SourceRow(n, s, cited.get(n, [])) for n, s in enumerate(sources, start=1)]


def source_line(row: SourceRow) -> str:
    """`[n] Title` for a source's heading (escaped; its math for KaTeX, macros as text)."""
    return f"\\[{row.n}\\] {display_text(row.source.paper.shown_title)}"


def no_abstract(said: Mapping[str, str] = MESSAGES["en"]) -> str:
    """A title record's note (its abstract not in the corpus, issue 30), in `said`'s words."""
    return f"*{said['no_abstract']}*"


def source_facts(
    row: SourceRow,
    abstained: bool = False,
    first: tuple[int, int] | None = None,
    said: Mapping[str, str] = MESSAGES["en"],
) -> str:
    """Tier badge, link, whether the answer cites it (or that it matched poorly), and the
    number it was first shown with when that differs (`first_numbers`), in `said`'s words."""
    paper = row.source.paper
    facts = paper_facts(paper)
    if not paper.has_abstract:
        facts.append(no_abstract(said))
    if abstained:
        facts.append(said["page_low_match"])
    elif row.cited:
        facts.append(said["page_cited"])
    else:
        facts.append(said["page_not_cited"])
    if first is not None and first[1] != row.n:
        facts.append(said["page_first_shown"].format(n=first[1], k=first[0]))
    return " · ".join(facts)


def paper_facts(paper: Paper) -> list[str]:
    """Tier badge and link; for an untitled seed abstract, that it is one, not two unknowns."""
    if paper.untitled:
        return [SEED_FACT]
    facts = [tier_badge(paper.tier) or escape_text(paper.decision or "Decision unknown")]
    return [*facts, source_link(paper.url)]


SEED_FACT = f"an abstract bundled without its title: its {VENUE.label} paper is not identified"


def first_numbers(turns: Sequence[Turn]) -> dict[str, tuple[int, int]]:
    """Each paper's first number in the chat: {paper id: (answer number from 1, [n])}.

    A paper's number is its place in each answer's list (issue 23): the list shows beside it
    the number the reader first saw, so "the second one" is not taken for another paper.
    """
    seen: dict[str, tuple[int, int]] = {}
    for i, turn in enumerate(turns, start=1):
        if turn.answer is None or turn.answer.abstained:
            continue
        for n, source in enumerate(turn.answer.sources, start=1):
            seen.setdefault(source.paper.id, (i, n))
    return seen


def card_details(paper: Paper) -> str:
    """Authors (saying so when their order is not known) and keywords, escaped; '' when
    neither."""
    lines = []
    if paper.authors:
        order = "" if authors_in_order(paper) else " *(order not known)*"
        lines.append("**Authors:** " + escape_text(", ".join(paper.authors)) + order)
    if paper.keywords:
        lines.append("**Keywords:** " + escape_text(", ".join(paper.keywords)))
    return "  \n".join(lines)


def citations_by_number(answer: CitedAnswer) -> dict[int, list[Citation]]:
    """Citations grouped by source number, in order of first appearance."""
    grouped: dict[int, list[Citation]] = {}
    for citation in answer.citations:
        grouped.setdefault(citation.n, []).append(citation)
    return grouped


@dataclass
class Turn:
    """One question and what came back: an answer, or the error that stopped it."""

    question: str
    answer: CitedAnswer | None = None
    error: str | None = None
    tiers: list[str] = field(default_factory=list)
    k: int | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])


def history(turns: Iterable[Turn]) -> list[dict[str, str]]:
    """The chat so far for the answerer: answered turns only (a failed one has no reply)."""
    messages: list[dict[str, str]] = []
    for turn in turns:
        if turn.answer is not None:
            messages.append({"role": "user", "content": turn.question})
            messages.append({"role": "assistant", "content": turn.answer.answer})
    return messages
