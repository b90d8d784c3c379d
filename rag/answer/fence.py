"""Defuse fence tags hidden in untrusted text before it goes inside the prompt's fences.

A model reads `<\u200b/sources>`, `</sоurces>` (a Cyrillic о), `</sour\u00adces>`,
`＜／ｓｏｕｒｃｅｓ＞`, `⟨/sources⟩`, `<\\/sources>` and `&lt;/sources&gt;` as the closing tag
they imitate. So tags are looked for in a folded copy of the text: escapes decoded (HTML
entities, `\\u003c`, `\\x3c`, octal `\\074`, `%3C`, and escapes of escapes: `&amp;lt;`, `%253C`,
`%26lt;`), Unicode tag characters (U+E0020..U+E007E, invisible, yet read by a model as the
ASCII they shadow: "ASCII smuggling") read as that ASCII, NFKC (full-width and styled letters
become ASCII), invisible characters dropped (format characters: zero-width, soft hyphen,
bidi controls; combining marks; the Hangul and braille fillers), angle-bracket look-alikes
(`⟨ 〈 ‹ « 《 ❮ ˂ ︿` ...) folded to `<` and `>`, Unicode's confusables folded to the ASCII
character they imitate (from confusable-homoglyphs' copy of Unicode's confusables.txt),
lower case; a backslash may stand before the `/`. Each tag found there has its `<` (the
look-alike, or the whole entity or escape that spells it) replaced by `[` in the original
text; nothing else is changed. The result has no tag left to find, in any spelling.
"""

from __future__ import annotations

import html.entities
import json
import re
import unicodedata
from functools import cache
from importlib import resources

# Tags of the prompt's fences: <sources>, <source n="1">, <conversation>, <previous_sources>,
# <question>, the judge's <candidates> and <candidate n="1">, and their closings (`<\/sources>`).
_TAG = re.compile(
    r"<[\s/\\]*(?:sources?|conversation|previous_sources|question|candidates?)", re.IGNORECASE
)
_DROPPED = ("Cf", "Mn", "Me")  # invisible or combining: they do not change what a model reads
# Invisible letters and symbols (not Cf): Hangul fillers, the braille blank, and friends.
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u17b4\u17b5")
# What the inert spelling of a defused tag's `<` is; not a look-alike of `<`.
INERT = "["
_BRACKETS = {
    **dict.fromkeys("\u27e8\u3008\u2329\u2039\u00ab\u300a\u276c\u276e\u2770\u27ea", "<"),
    **dict.fromkeys("\u02c2\u1438\u2991\u29fc\u22d6\u2989\ufe3f\ufe3d", "<"),
    **dict.fromkeys("\u27e9\u3009\u232a\u203a\u00bb\u300b\u276d\u276f\u2771\u27eb", ">"),
    **dict.fromkeys("\u02c3\u1433\u2992\u29fd\u22d7\u298a\ufe40\ufe3e", ">"),
    **dict.fromkeys("\u2044\u2215\u29f8\u2571\u3033\u27cb", "/"),
}
# An escape that spells one character: an HTML entity, a JSON/Python or a URL escape.
_ENTITY = re.compile(r"&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{0,31}));?")
_ESCAPE = re.compile(
    r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})|\\x([0-9a-fA-F]{2})|%([0-9a-fA-F]{2})"
    r"|\\([0-7]{1,3})"
)
_TAG_CHARS = range(0xE0020, 0xE007F)  # U+E0041 is read as "A"
_ESCAPE_LEAD = frozenset("&\\%")


@cache
def confusables() -> dict[str, str]:
    """Non-ASCII character -> the ASCII character it imitates, for `<`, `>`, `/` and letters."""
    data = json.loads(
        resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    )
    table: dict[str, str] = {}
    for ascii_char, homoglyphs in data.items():
        if len(ascii_char) != 1 or not (ascii_char.isalpha() or ascii_char in "</>"):
            continue
        if not ascii_char.isascii():
            continue
        for glyph in homoglyphs:
            char = "".join(c for c in glyph["c"] if unicodedata.category(c) not in _DROPPED)
            if len(char) == 1 and not char.isascii():
                table.setdefault(char, ascii_char.lower())
    return table


def _codepoint(digits: str, base: int) -> str | None:
    n = int(digits, base)
    if 0 < n <= 0x10FFFF and not 0xD800 <= n <= 0xDFFF:
        return chr(n)
    return None


def _entity(text: str, i: int) -> tuple[str, int] | None:
    """The character the HTML entity at `text[i]` spells and where it ends, if it is one."""
    m = _ENTITY.match(text, i)
    if not m:
        return None
    decimal, hexadecimal, name = m.groups()
    if decimal or hexadecimal:
        char = _codepoint(decimal, 10) if decimal else _codepoint(hexadecimal, 16)
        return (char, m.end()) if char else None
    entities = html.entities.html5
    if m.group(0).endswith(";") and len(entities.get(name + ";", "")) == 1:
        return entities[name + ";"], m.end()
    for k in range(len(name), 1, -1):  # a legacy entity needs no ";": `&lt/`, `&ltsources`
        value = entities.get(name[:k], "")
        if len(value) == 1:
            return value, i + 1 + k
    return None


def _unescape(text: str, i: int) -> tuple[str, int] | None:
    """The character an escape at `text[i]` spells and where it ends; an escape that spells
    the start of another (`&amp;lt;`, `%253C`, `%26lt;`) is read on, as a model reads it."""
    found = _unescape_once(text, i)
    for _ in range(4):
        if not found or found[0] not in _ESCAPE_LEAD:
            break
        deeper = _unescape_once(found[0] + text[found[1] : found[1] + 40], 0)
        if not deeper:
            break
        found = deeper[0], found[1] + deeper[1] - 1
    return found


def _unescape_once(text: str, i: int) -> tuple[str, int] | None:
    if text[i] == "&":
        return _entity(text, i)
    m = _ESCAPE.match(text, i)
    if not m:
        return None
    index, digits = next((n, g) for n, g in enumerate(m.groups()) if g)
    char = _codepoint(digits, 8 if index == 4 else 16)
    return (char, m.end()) if char else None


def _fold(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The folded text, and for each of its characters the span of `text` it came from."""
    table = confusables()
    folded: list[str] = []
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        char, end = text[i], i + 1
        if char in _ESCAPE_LEAD and (found := _unescape(text, i)):
            char, end = found
        if ord(char) in _TAG_CHARS:
            char = chr(ord(char) - 0xE0000)
        if char.isascii():
            folded.append(char.lower())
            spans.append((i, end))
        else:
            for part in unicodedata.normalize("NFKC", char):
                if unicodedata.category(part) in _DROPPED or part in _FILLERS:
                    continue
                folded.append(_BRACKETS.get(part, table.get(part, part)).lower())
                spans.append((i, end))
        i = end
    return "".join(folded), spans


def skeleton(text: str) -> tuple[str, list[int]]:
    """The folded text, and for each of its characters the index it came from in `text`."""
    folded, spans = _fold(text)
    return folded, [start for start, _ in spans]


def defuse(text: str) -> str:
    """`text` with every fence tag, however disguised, made inert (its `<` -> `[`)."""
    folded, spans = _fold(text)
    found = sorted({spans[m.start()] for m in _TAG.finditer(folded)})
    if not found:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in found:
        pieces += [text[last:start], INERT]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)
