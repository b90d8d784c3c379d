"""BibTeX entries for ICLR 2025 papers, written with bibtexparser.

    bibtex([paper, ...])   # "@inproceedings{...}" entries, one per paper

Entries look like OpenReview's own: `@inproceedings`, the conference as `booktitle`, `year`,
the OpenReview URL. Authors are always written (`author = {A and B}`); where their order is
not known (the bundled corpus lists them in another order: `authors_ordered` is false) a
`note` says so and the key does not start with a surname, so no first author is invented.
LaTeX's special characters and non-ASCII letters are escaped (pylatexenc), so the file works
with classic BibTeX and parses back to the same title. No title or author can end its field or
start an entry (braces always balance), an `and` inside one author's name is braced so it
stays one author, and colliding keys get 2, 3, ... appended.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from rag.common.latex import to_text
from rag.types import Paper
from rag.venue import VENUE

BOOKTITLE = VENUE.booktitle
YEAR = str(VENUE.year)
_SMALL_WORDS = frozenset("a an the of on in for to and with via towards toward is are do".split())


def authors_in_order(paper: Paper) -> bool:
    """Whether the paper's author list is in the paper's own order (not known to be shuffled)."""
    return paper.authors_ordered


def latex(text: str) -> str:
    """`text` with LaTeX specials (& % $ # _ { } ~ ^ \\) and non-ASCII letters escaped.

    BibTeX counts every brace, `\\{` and `\\}` included (it has no escape for them), so a lone
    `}` would close the field and what follows it could be read as a new entry. Braces that pair
    up stay `\\{...\\}`; an unpaired one becomes `{\\ensuremath{\\lbrace}}` (`\\rbrace`), whose
    braces pair, so the field's braces always balance.
    """
    from pylatexenc.latexencode import UnicodeToLatexEncoder

    encoder = UnicodeToLatexEncoder(unknown_char_policy="keep", unknown_char_warning=False)
    text = " ".join(text.split())
    out, start = [], 0
    for i in _unpaired_braces(text):
        out.append(str(encoder.unicode_to_latex(text[start:i])))
        out.append(_LONE_BRACE[text[i]])
        start = i + 1
    out.append(str(encoder.unicode_to_latex(text[start:])))
    return "".join(out)


_LONE_BRACE = {"{": "{\\ensuremath{\\lbrace}}", "}": "{\\ensuremath{\\rbrace}}"}


def _unpaired_braces(text: str) -> list[int]:
    """Positions of the braces in `text` that close nothing or are never closed."""
    opened: list[int] = []
    lone: list[int] = []
    for i, c in enumerate(text):
        if c == "{":
            opened.append(i)
        elif c == "}":
            if opened:
                opened.pop()
            else:
                lone.append(i)
    return sorted(lone + opened)


def bibtex_name(name: str) -> str:
    """One author for BibTeX's `author` field: an `and` inside it (or a name that is only
    `others`) is braced, so BibTeX does not split it into two authors (or read "et al.")."""
    encoded = latex(name)
    if encoded.lower() == "others":
        return "{" + encoded + "}"
    return re.sub(r"(?i)(?<!\S)and(?!\S)", lambda m: "{" + m.group(0) + "}", encoded)


def citation_key(paper: Paper) -> str:
    """`lastname2025word` (or `word2025word` without ordered authors), ASCII letters only."""
    words = [_ascii(w) for w in re.findall(r"[^\W_]+", paper.title)]
    words = [w for w in words if w]
    content = [w for w in words if w.lower() not in _SMALL_WORDS] or words or ["paper"]
    if authors_in_order(paper):
        surname = _ascii(paper.authors[0].split()[-1]) if paper.authors[0].split() else ""
        first = surname or content[0]
        second = content[0]
    else:
        first = content[0]
        second = content[1] if len(content) > 1 else _ascii(paper.id) or VENUE.name.lower()
    return f"{first.lower()}{YEAR}{second.lower()}"


def bibtex(papers: Iterable[Paper]) -> str:
    """One `@inproceedings` entry per paper (duplicates once), keys made unique."""
    import bibtexparser
    from bibtexparser import model

    library = bibtexparser.Library()
    used: set[str] = set()
    seen: set[str] = set()
    skipped: list[str] = []
    for paper in papers:
        if paper.id in seen:
            continue
        seen.add(paper.id)
        if paper.untitled:  # an entry would pass a label off as an ICLR 2025 title
            # Outside an entry BibTeX reads text as a comment, unless it holds an "@".
            where = re.sub(r"[^\w .,():-]", "", " ".join(paper.shown_title.split()))
            skipped.append(f"% No entry for {where}: {NO_ENTRY}")
            continue
        key = citation_key(paper)
        unique, suffix = key, 2
        while unique in used:  # key, key2, key3, ...: plain ASCII however many collide
            unique = f"{key}{suffix}"
            suffix += 1
        used.add(unique)
        # bibtexparser adds the enclosing braces; the inner pair keeps the title's capitals
        # (BibTeX styles lower-case titles).
        # The title as text first (rag.common.latex, the one normaliser): `\underline{T}ool`
        # is "Tool", not an escaped backslash (issue 31).
        fields = [model.Field("title", "{" + latex(to_text(paper.title)) + "}")]
        names = [bibtex_name(a) for a in paper.authors if a.split()]
        if names:
            fields.append(model.Field("author", " and ".join(names)))
        fields += [model.Field("booktitle", BOOKTITLE), model.Field("year", YEAR)]
        if names and not authors_in_order(paper):
            fields.append(model.Field("note", AUTHOR_ORDER_UNKNOWN))
        if paper.url.startswith(("https://", "http://")):
            fields.append(model.Field("url", _url(paper.url)))
        library.add(model.Entry("inproceedings", unique, fields))
    written = str(bibtexparser.write_string(library)) if library.entries else ""
    return "".join(f"{line}\n" for line in skipped) + written


# Where the source lists the authors in another order than the paper's.
AUTHOR_ORDER_UNKNOWN = "Author order not known: listed as the source gives them"

# Why an untitled seed abstract gets no entry (issue 20, item 8).
NO_ENTRY = (
    "an untitled abstract from a seed file; its title, authors and venue are not known, and "
    "a citation needs them."
)


def _ascii(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return re.sub(r"[^A-Za-z0-9]", "", decomposed.encode("ascii", "ignore").decode())


def _url(url: str) -> str:
    # `url` fields are verbatim in BibTeX (the url package); only braces would break one.
    return url.replace("{", "%7B").replace("}", "%7D").replace(" ", "%20")
