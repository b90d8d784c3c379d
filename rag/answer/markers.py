"""Citation markers: `[1]`, `[1, 2]`, `[1][2]`, `[1-3]` parsed, checked and renumbered.

Numbers that name no source are removed from the text and counted. `source_order` and
`renumber` number the sources as the reader sees them: cited sources first, 1..k in order of
first citation, then the uncited ones, with no gaps (the one place numbers change).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby
from typing import TypeVar

T = TypeVar("T")


# One bracketed group of numbers, ranges allowed: [1], [1, 2], [2; 4], [1-3], [1–3].
MARKER = re.compile(r"\[\s*\d+(?:\s*(?:[,;]|[-–])\s*\d+)*\s*\]")


# Put after the "[" of a bracketed number that is quoted, not cited: it stays "[2]" to the eye
# (a word joiner is invisible) but is no longer a marker, so it never links to source 2.
QUOTED_BRACKET = "\u2060"


_NUMBER_OR_RANGE = re.compile(r"(\d+)(?:\s*[-–]\s*(\d+))?")


_MAX_RANGE = 50  # "[1-999]" is not a citation list anyone means


@dataclass(frozen=True)
class Marker:
    start: int
    end: int
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class CheckedAnswer:
    text: str  # the answer with invalid numbers removed
    cited: tuple[int, ...]  # valid numbers in order of first appearance
    dropped: int  # occurrences of numbers that name no source


def parse_markers(text: str) -> list[Marker]:
    """Every citation marker in `text`, in order."""
    markers = []
    for match in MARKER.finditer(text):
        numbers: list[int] = []
        for first, last in _NUMBER_OR_RANGE.findall(match.group(0)):
            a = int(first)
            b = int(last) if last else a
            if b < a or b - a > _MAX_RANGE:
                b = a
            numbers.extend(range(a, b + 1))
        markers.append(Marker(match.start(), match.end(), tuple(numbers)))
    return markers


def inert_markers(text: str) -> str:
    """`text` (quoted from a paper) with its own "[2]"s made plain text, never citations."""
    return MARKER.sub(lambda m: "[" + QUOTED_BRACKET + m.group(0)[1:], text)


def check_citations(text: str, valid: set[int]) -> CheckedAnswer:
    """Remove numbers outside `valid` from the markers (a marker left empty goes), count them."""
    pieces: list[str] = []
    cited: list[int] = []
    dropped = 0
    last = 0
    for marker in parse_markers(text):
        keep = [n for n in marker.numbers if n in valid]
        dropped += len(marker.numbers) - len(keep)
        for n in keep:
            if n not in cited:
                cited.append(n)
        before = text[last : marker.start]
        if keep:
            pieces.append(before + "[" + ", ".join(str(n) for n in unique(keep)) + "]")
        else:
            # A dropped marker takes the space before it along ("claim [9]." -> "claim.").
            pieces.append(before.rstrip(" ") if before.endswith(" ") else before)
        last = marker.end
    pieces.append(text[last:])
    return CheckedAnswer("".join(pieces), tuple(cited), dropped)


def source_order(text: str, count: int) -> list[int]:
    """Old source numbers (1..count) in their new order: cited first, by first citation."""
    cited = [n for m in parse_markers(text) for n in m.numbers if 1 <= n <= count]
    first = unique(cited)
    return first + [n for n in range(1, count + 1) if n not in first]


def renumber(text: str, mapping: dict[int, int]) -> str:
    """`text` with every marker's numbers replaced by `mapping[n]` (ranges written out)."""
    pieces: list[str] = []
    last = 0
    for marker in parse_markers(text):
        numbers = unique(mapping.get(n, n) for n in marker.numbers)
        pieces += [text[last : marker.start], "[" + ", ".join(map(str, numbers)) + "]"]
        last = marker.end
    pieces.append(text[last:])
    return "".join(pieces)


def unique(items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))


def fenced(code: str, language: str = "") -> str:
    """`code` as a Markdown code block whose fence is longer than any run of backticks in it,
    so nothing inside can close it (the answer writes it; the page shows it as code)."""
    longest = max((len(list(run)) for c, run in groupby(code) if c == "`"), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code}\n{fence}"
