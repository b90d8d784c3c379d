"""BibTeX: entries parse back with bibtexparser, titles with LaTeX specials survive, authors with
a note where their order is not known."""

from __future__ import annotations

import re

import bibtexparser
from bibtexparser import middlewares

from rag.common.latex import to_text
from rag.corpus.bibtex import BOOKTITLE, bibtex, citation_key
from rag.corpus.loaders import load_papers
from rag.types import Paper
from tests.helpers import CORPUS_JSONL


def parse(text: str) -> bibtexparser.Library:
    library = bibtexparser.parse_string(
        text, append_middleware=[middlewares.LatexDecodingMiddleware()]
    )
    assert not library.failed_blocks, [b.error for b in library.failed_blocks]
    return library


def paper(**fields: object) -> Paper:
    values: dict[str, object] = {
        "id": "abc123XYZ",
        "title": "A Title",
        "abstract": "An abstract.",
        "decision": "Accept (Poster)",
        "url": "https://openreview.net/forum?id=abc123XYZ",
    }
    values.update(fields)
    return Paper(**values)  # type: ignore[arg-type]


def test_every_real_title_with_special_characters_parses_back_unchanged() -> None:
    papers = load_papers([CORPUS_JSONL])
    special = [
        p
        for p in papers
        if any(c in p.title for c in "&%$#_{}~^\\") or any(ord(c) > 127 for c in p.title)
    ]
    assert len(special) >= 20  # the corpus has math, accents, dashes, ampersands and an emoji
    text = bibtex(special)
    entries = parse(text).entries
    assert len(entries) == len(special)
    for p, entry in zip(special, entries, strict=True):
        # The title as text (issue 31: the one normaliser), not its LaTeX source escaped.
        assert entry.fields_dict["title"].value == to_text(p.title)
        assert entry.entry_type == "inproceedings"
        assert entry.fields_dict["booktitle"].value == BOOKTITLE
        assert entry.fields_dict["year"].value == "2025"
        assert entry.fields_dict["url"].value == p.url
    # Escaped in the file itself, so classic BibTeX reads it.
    raw = {
        p.title: e.fields_dict["title"].value
        for p, e in zip(special, bibtexparser.parse_string(text).entries, strict=True)
    }
    tau = next(v for t, v in raw.items() if t.startswith("{ τ }-bench"))
    assert "\\tau" in tau and "textbackslash" not in tau and "underline" not in tau, tau
    assert "Min-K\\%++" in next(v for t, v in raw.items() if t.startswith("Min-K"))


def test_escapes_every_latex_special_and_keeps_capitals() -> None:
    # No LaTeX command in it: the normaliser leaves it as written (issue 31).
    title = "Q&A at 50% cost of $5: x_1 ~ ^ {DNA} # α — Müller’s é"
    text = bibtex([paper(title=title)])
    raw = bibtexparser.parse_string(text).entries[0].fields_dict["title"].value
    for escaped in ("\\&", "\\%", "\\$", "\\_", "\\#", "\\{DNA\\}", "\\textasciitilde"):
        assert escaped in raw, escaped
    assert raw.startswith("{") and raw.endswith("}")  # capitals protected
    # pylatexenc decodes \\textasciicircum to the modifier letter ˆ; LaTeX prints ^.
    decoded = parse(text).entries[0].fields_dict["title"].value
    assert decoded.replace("\u02c6", "^") == title


def test_bundled_authors_are_written_with_a_note_that_their_order_is_unknown() -> None:
    bundled = [p for p in load_papers([CORPUS_JSONL]) if p.authors][:3]
    assert bundled and all(p.extra.get("authors_ordered") is False for p in bundled)
    entries = parse(bibtex(bundled)).entries
    for p, entry in zip(bundled, entries, strict=True):
        assert entry.fields_dict["author"].value.split(" and ") == list(p.authors)
        assert "order not known" in entry.fields_dict["note"].value
        # The key does not name a first author the source did not give.
        assert not entry.key.startswith(p.authors[0].split()[-1].lower())


def test_ordered_authors_are_written_in_order_and_name_the_key() -> None:
    ordered = paper(
        title="Scaling Laws for {Sparse} Models",
        authors=("José Álvarez", "Anne-Marie O'Neil", "Li Wei"),
        extra={"authors_ordered": True},
    )
    entry = parse(bibtex([ordered])).entries[0]
    assert entry.fields_dict["author"].value == "José Álvarez and Anne-Marie O'Neil and Li Wei"
    assert entry.key == "alvarez2025scaling"
    assert citation_key(ordered) == entry.key


def test_keys_are_unique_and_duplicates_written_once() -> None:
    a = paper(id="id1", title="Graph Transformers Revisited")
    b = paper(id="id2", title="Graph Transformers Revisited")
    entries = parse(bibtex([a, b, a])).entries
    assert [e.key for e in entries] == ["graph2025transformers", "graph2025transformers2"]


def bibtex_blocks(text: str) -> list[str]:
    """What classic BibTeX reads: an `@` at brace depth 0 starts an entry, braces nest
    whatever precedes them (BibTeX has no `\\{` escape). Fails on a brace closed below 0."""
    starts, depth = [], 0
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            assert depth >= 0, f"a '}}' closes more than was opened at {i}: {text[i - 40 : i]!r}"
        elif c == "@" and depth == 0:
            starts.append(text[i : text.index("{", i)])
    assert depth == 0, "unbalanced braces"
    return starts


HOSTILE = {
    "title": [
        "T}} @misc{pwned, title={x",
        "Closing } without opening",
        "Opening { without closing",
        "}{ reversed }{ pairs",
        "A {balanced} title",
        "Backslash at the end \\",
    ],
    "authors": [
        ("A} and @misc{evil", "Bob and Alice", "AND Carol", "others"),
        ("Dan {", "} Eve", "and Frank"),
    ],
}


def decode(value: str) -> str:
    """A field as LaTeX prints it (what LatexDecodingMiddleware does, for one value)."""
    from pylatexenc.latex2text import LatexNodes2Text

    text = value[1:-1] if value.startswith("{") and value.endswith("}") else value
    return str(LatexNodes2Text().latex_to_text(text))


def test_hostile_titles_and_authors_make_one_entry_each_and_parse_back_unchanged() -> None:
    papers = [
        paper(id=f"p{i}", title=title, authors=authors, extra={"authors_ordered": True})
        for i, (title, authors) in enumerate(
            (t, a) for t in HOSTILE["title"] for a in HOSTILE["authors"]
        )
    ]
    text = bibtex(papers)
    assert bibtex_blocks(text) == ["@inproceedings"] * len(papers), text
    library = bibtexparser.parse_string(
        text,
        # Split as BibTeX does (on the braces as written); each name is decoded below.
        append_middleware=[middlewares.SeparateCoAuthors()],
    )
    assert not library.failed_blocks and len(library.blocks) == len(papers), text
    for p, entry in zip(papers, library.entries, strict=True):
        assert set(entry.fields_dict) == {"title", "author", "booktitle", "year", "url"}
        assert decode(entry.fields_dict["title"].value) == to_text(p.title), text
        names = entry.fields_dict["author"].value
        assert [decode(n) for n in names] == list(p.authors), names


def test_an_and_inside_one_author_does_not_split_it_for_bibtex() -> None:
    text = bibtex([paper(authors=("Bob and Alice", "Carol"), extra={"authors_ordered": True})])
    raw = bibtexparser.parse_string(text).entries[0].fields_dict["author"].value
    # BibTeX splits names at " and " outside braces only: one separator, between the two.
    depth, separators = 0, 0
    for i, c in enumerate(raw):
        depth += {"{": 1, "}": -1}.get(c, 0)
        separators += depth == 0 and raw[i : i + 5].lower() == " and "
    assert separators == 1, raw


def test_many_colliding_keys_stay_plain_ascii_with_numeric_suffixes() -> None:
    same = [paper(id=f"id{i}", title="Graph Transformers Revisited") for i in range(40)]
    keys = [e.key for e in parse(bibtex(same)).entries]
    assert len(set(keys)) == 40
    assert keys[:3] == ["graph2025transformers", "graph2025transformers2", "graph2025transformers3"]
    assert all(re.fullmatch(r"[a-z0-9]+", k) for k in keys), keys


def test_an_and_inside_a_word_is_left_as_written() -> None:
    """ "Ashwinee P{and}a": every "and" was braced, inside a word too (a name BibTeX reads
    right, a reader and a copy into another tool do not)."""
    text = bibtex([paper(authors=("Ashwinee Panda", "Andrea Anders"))])
    raw = bibtexparser.parse_string(text).entries[0].fields_dict["author"].value
    assert raw == "Ashwinee Panda and Andrea Anders"
