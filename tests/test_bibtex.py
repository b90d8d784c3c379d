"""BibTeX: entries parse back with bibtexparser, titles with LaTeX specials survive, authors only
when their order is known."""

from __future__ import annotations

import bibtexparser
from bibtexparser import middlewares

from rag.corpus.loaders import load_papers
from rag.explore.bibtex import BOOKTITLE, bibtex, citation_key
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
        assert entry.fields_dict["title"].value == " ".join(p.title.split())
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
    assert tau.startswith("{\\{ ") and "\\textbackslash" in tau and "\\tau" in tau
    assert "Min-K\\%++" in next(v for t, v in raw.items() if t.startswith("Min-K"))


def test_escapes_every_latex_special_and_keeps_capitals() -> None:
    title = "Q&A at 50% cost: $x_1$ ~ ^ {DNA} # \\alpha — Müller’s é"
    text = bibtex([paper(title=title)])
    raw = bibtexparser.parse_string(text).entries[0].fields_dict["title"].value
    for escaped in ("\\&", "\\%", "\\$", "\\_", "\\#", "\\{DNA\\}", "\\textasciitilde"):
        assert escaped in raw, escaped
    assert raw.startswith("{") and raw.endswith("}")  # capitals protected
    # pylatexenc decodes \\textasciicircum to the modifier letter ˆ; LaTeX prints ^.
    decoded = parse(text).entries[0].fields_dict["title"].value
    assert decoded.replace("\u02c6", "^") == title


def test_bundled_authors_are_left_out_because_their_order_is_unknown() -> None:
    bundled = [p for p in load_papers([CORPUS_JSONL]) if p.authors][:3]
    assert bundled and all(p.extra.get("authors_ordered") is False for p in bundled)
    for entry in parse(bibtex(bundled)).entries:
        assert "author" not in entry.fields_dict


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
    assert [e.key for e in entries] == ["graph2025transformers", "graph2025transformersa"]
