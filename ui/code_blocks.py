"""Fenced code blocks in an answer ("```bibtex ... ```"), shown as code, not escaped text.

An answer is escaped for the page (it may hold a model's or an abstract's Markdown); a code
block is inert as it is, so it passes whole, under a fence no run of backticks inside it can
close. A fence that is never closed is text, escaped like the rest.
"""

from __future__ import annotations


def code_blocks(text: str) -> list[tuple[str, str | None]]:
    """`text` in pieces: (code, its language) for each closed fenced block, (text, None)
    for what lies between."""
    lines = text.split("\n")
    pieces: list[tuple[str, str | None]] = []
    between: list[str] = []
    i = 0
    while i < len(lines):
        opening = lines[i]
        fence = opening[: len(opening) - len(opening.lstrip("`"))]
        close = (
            next(
                (j for j in range(i + 1, len(lines)) if lines[j].strip() == fence),
                None,
            )
            if len(fence) >= 3
            else None
        )
        if close is None:
            between.append(opening)
            i += 1
            continue
        if between:
            pieces.append(("\n".join(between), None))
            between = []
        language = "".join(c for c in opening[len(fence) :] if c.isalnum())[:20]
        pieces.append(("\n".join(lines[i + 1 : close]), language))
        i = close + 1
    if between:
        pieces.append(("\n".join(between), None))
    return pieces
