"""The chat as a Markdown file (Download chat): questions, answers renumbered chat-wide, quotes
and one reference list, every untrusted text escaped as `ui.render` escapes it."""

from __future__ import annotations

from datetime import UTC, datetime

from rag import Citation, parse_markers
from rag.types import UNIDENTIFIED
from ui.latex import plain_text
from ui.render import (
    APP_TITLE,
    Turn,
    escape_answer,
    escape_export,
    escape_underlines,
    safe_url,
)


def chat_markdown(turns: list[Turn], title: str = APP_TITLE) -> str:
    """The chat as a Markdown file: questions, answers renumbered chat-wide, then references."""
    numbers: dict[str, int] = {}  # paper id -> reference number
    references: list[Citation] = []
    lines = [f"# {title}: chat", ""]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines += [f"Exported {stamp}. Each [n] refers to the numbered references at the end.", ""]
    for i, turn in enumerate(turns, start=1):
        lines += [f"## {i}. {escape_export(turn.question)}", ""]
        answer = turn.answer
        if answer is None:
            lines += [f"*No answer: {escape_export(turn.error or 'unknown error')}*", ""]
            continue
        local: dict[int, int] = {}
        for citation in answer.citations:
            if citation.paper_id not in numbers:
                numbers[citation.paper_id] = len(numbers) + 1
                references.append(citation)
            local[citation.n] = numbers[citation.paper_id]
        text = _renumber(answer.answer, local)
        lines += [text, ""]
        # Only checked quotes: an unchecked claim's nearest sentence is no evidence.
        quoted = dict.fromkeys(
            (local[c.n], c.quote) for c in answer.citations if c.quote and c.supported
        )
        if quoted:
            # Each line starts with "[n]", so no quote can start a list or a heading.
            lines += ["Quoted:", ""]
            lines += [f"- [{g}] “{escape_export(plain_text(quote))}”" for g, quote in quoted]
            lines.append("")
        lines += [f"*Answered by {escape_export(answer.model)}.*", ""]
    # Written by the app after a rule: model text cannot write one (its `-` runs and `#` are
    # escaped), so nothing above can pass for this list.
    lines += ["---", "", "## References", ""]
    if not references:
        lines.append("No papers were cited.")
    for g, citation in enumerate(references, start=1):
        entry = f"{g}. {escape_export(plain_text(citation.title))}"
        if citation.tier:
            entry += f" ({citation.tier})"
        if citation.authors:
            order = "" if citation.authors_ordered else " (author order not known)"
            entry += f". {escape_export(', '.join(citation.authors))}{order}"
        if not citation.has_abstract:
            entry += f". {NO_ABSTRACT_EXPORT}"
        url = safe_url(citation.url)
        seed = UNIDENTIFIED.lower() in citation.title.lower()  # its id is no OpenReview id
        where = "seed abstract id" if seed else "OpenReview id"
        entry += f". <{url}>" if url else f". {where} {escape_export(citation.paper_id)}"
        lines.append(entry)
    return "\n".join(lines).rstrip() + "\n"


# A title record (an accepted paper whose abstract the bundled corpus lacks) says so.
NO_ABSTRACT_EXPORT = "Abstract not in the bundled corpus"


def _renumber(text: str, local: dict[int, int]) -> str:
    """Escaped `text` in its display form (quoted abstracts' LaTeX as text, `ui.latex`) with
    each source number replaced by its chat-wide reference number.

    The markers are written as plain `[n]`: the file defines no link references, and the text's
    own brackets are escaped, so they stay text in any Markdown viewer."""
    pieces: list[str] = []
    last = 0
    for marker in parse_markers(text):
        pieces.append(_after_marker(pieces, escape_answer(_display(text[last : marker.start]))))
        kept = [local[n] for n in marker.numbers if n in local]
        if kept:
            pieces.append("[" + ", ".join(str(n) for n in dict.fromkeys(kept)) + "]")
        last = marker.end
    pieces.append(_after_marker(pieces, escape_answer(_display(text[last:]))))
    return escape_underlines("".join(pieces))


def _after_marker(pieces: list[str], escaped: str) -> str:
    """`escaped` with a `(` right after a written `[n]` escaped: `[1](//evil.example)` in a
    model's reply would otherwise make the marker a link in any Markdown viewer."""
    written = next((piece for piece in reversed(pieces) if piece), "")
    if escaped.startswith("(") and written.endswith("]"):  # "[1][9](...)": 9 names no source
        return "\\" + escaped
    return escaped


def _display(piece: str) -> str:
    """`plain_text` of a piece between markers, keeping the spaces around it."""
    core = piece.strip()
    if not core:
        return piece
    start = piece.index(core[0])
    return piece[:start] + plain_text(core) + piece[start + len(core) :]
