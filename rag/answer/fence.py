"""Defuse fence tags hidden in untrusted text before it goes inside the prompt's fences.

A model reads `<\u200b/sources>`, `</sоurces>` (a Cyrillic о), `</sour\u00adces>` and
`＜／ｓｏｕｒｃｅｓ＞` as the closing tag they imitate. So tags are looked for in a folded
copy of the text: NFKC (full-width and styled letters become ASCII), format characters
(zero-width, soft hyphen, bidi marks) and combining marks dropped, Unicode's confusables
folded to the ASCII character they imitate (from confusable-homoglyphs' copy of Unicode's
confusables.txt), lower case. Each tag found there has its `<` (or look-alike) replaced by
`&lt;` in the original text; nothing else is changed.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from importlib import resources

# Tags of the prompt's fences: <sources>, <source n="1">, <conversation>, <previous_sources>
# and their closings.
_TAG = re.compile(r"<\s*/?\s*(?:sources?|conversation|previous_sources)", re.IGNORECASE)
_DROPPED = ("Cf", "Mn", "Me")  # invisible or combining: they do not change what a model reads


@cache
def _confusables() -> dict[str, str]:
    """Non-ASCII character -> the ASCII character it imitates, for `<`, `/` and letters."""
    data = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    )
    table: dict[str, str] = {}
    for ascii_char, homoglyphs in data.items():
        if len(ascii_char) != 1 or not (ascii_char.isalpha() or ascii_char in "</"):
            continue
        if not ascii_char.isascii():
            continue
        for glyph in homoglyphs:
            char = "".join(c for c in glyph["c"] if unicodedata.category(c) not in _DROPPED)
            if len(char) == 1 and not char.isascii():
                table.setdefault(char, ascii_char.lower())
    return table


def skeleton(text: str) -> tuple[str, list[int]]:
    """The folded text, and for each of its characters the index it came from in `text`."""
    table = _confusables()
    folded: list[str] = []
    origin: list[int] = []
    for i, char in enumerate(text):
        if char.isascii():
            folded.append(char.lower())
            origin.append(i)
            continue
        for part in unicodedata.normalize("NFKC", char):
            if unicodedata.category(part) in _DROPPED:
                continue
            folded.append(table.get(part, part).lower())
            origin.append(i)
    return "".join(folded), origin


def defuse(text: str) -> str:
    """`text` with every fence tag, however disguised, made inert (`<` -> `&lt;`)."""
    folded, origin = skeleton(text)
    starts = sorted({origin[m.start()] for m in _TAG.finditer(folded)})
    if not starts:
        return text
    pieces: list[str] = []
    last = 0
    for start in starts:
        pieces += [text[last:start], "&lt;"]
        last = start + 1
    pieces.append(text[last:])
    return "".join(pieces)
