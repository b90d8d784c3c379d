"""The answer as a typed value: `CitedAnswer`, its `Citation`s and the `Quote`s they are made
from, and the numbering of its sources.

Apart from `rag.answer.pipeline` so that every path that builds an answer (the model's, the
offline extractive one, a follow-up's metadata answer in `rag.answer.followup`) can share it
without a cycle.

Citation markers (`[1]`, `[1, 2]`, `[1][2]`, `[1-3]`) are parsed, checked and renumbered here
too: numbers that name no source are removed from the text and counted; `source_order` and
`renumber` number the sources as the reader sees them (cited first, 1..k in order of first
citation, then the uncited ones, no gaps: the one place numbers change).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Any, TypeVar

from rag.index.passages import passages
from rag.retrieval.calibration import MINILM
from rag.types import Paper, RetrievedPaper

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


def paper_line(n: int, paper: Paper, facts: Sequence[str], no_abstract: str) -> str:
    """`- **Title** [n]: fact · fact`, with `no_abstract` (its wording) for a title record."""
    if not paper.has_abstract:
        facts = [*facts, no_abstract]
    title = inert_markers(" ".join(paper.shown_title.split()))
    return f"- **{title}** [{n}]: " + " · ".join(f for f in facts if f)


def title_quote(n: int, paper: Paper) -> Quote:
    """A title record's evidence: its title, as what it is (the corpus has no abstract)."""
    return Quote(n, paper.id, paper.title, 1.0)


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


# The support of a claim that is the abstract's sentence itself (an offline answer's quotes).
VERBATIM_SUPPORT = 1.0 + MINILM.support_lexical_weight


@dataclass(frozen=True)
class Quote:
    """The sentence of source `n` that backs a claim, and how well (rag.answer.support)."""

    n: int
    paper_id: str
    quote: str
    similarity: float
    # Its weakest claim against the abstract (the best of `passage_scores`); None: not
    # measured, as the sentence model cannot read the claim (the floor holds for English and
    # MiniLM only).
    support: float | None = VERBATIM_SUPPORT
    floor: float = field(default=MINILM.support_floor, repr=False)  # Calibration.support_floor
    # A claim negates its nearest passage, or has a number the abstract does not
    # (rag.answer.claim_check): not supported, whatever the similarity says.
    contradicted: bool = False

    @property
    def supported(self) -> bool | None:
        if self.support is None:
            return None
        return not self.contradicted and self.support >= self.floor


@dataclass
class Citation:
    n: int
    paper_id: str
    title: str
    url: str
    decision: str
    quote: str  # an exact sentence of the paper's abstract; '' when the claim is unsupported
    tier: str = ""  # Oral / Spotlight / Poster (rag.types.TIERS), '' when unknown
    # How well the answer's claim citing it is found in the abstract
    # (rag.answer.support.best_quotes);
    # below the support floor (rag.retrieval.calibration) it is not, and no sentence is quoted.
    # None: not measured (a claim not in English, or embeddings other than the bundled model).
    support: float | None = VERBATIM_SUPPORT
    supported: bool | None = True
    # The paper's authors as recorded (shown in the chat export), whether in the paper's
    # order, and whether the corpus holds its abstract (False: a title record).
    authors: tuple[str, ...] = ()
    authors_ordered: bool = True
    has_abstract: bool = True
    # Where the quote is: "abstract" (a sentence of it, `abstract[start:end]`), "title" (a
    # title record's title, `title[start:end]`), "" (no quote).
    evidence: str = ""
    start: int | None = None
    end: int | None = None


@dataclass
class CitedAnswer:
    """An answer whose `[n]` markers and `Citation.n` name `sources[n - 1]`.

    `sources` is the numbered list the reader sees: the cited papers first, 1..k in order of
    first citation, then the retrieved papers not cited, with no gaps; a comparison
    (`compare`) keeps the order of the list it was asked about.

    A refusal (`abstained`) also keeps its parts as data, so no reader has to cut them out of
    `answer`: `refusal` is what it says, without the list of titles, and `nearest` the
    closest papers it names (the first of `sources`, so `nearest[i]` is source i + 1).
    """

    question: str
    standalone_question: str
    answer: str
    citations: list[Citation]
    sources: list[RetrievedPaper]
    abstained: bool
    model: str
    dropped_citations: int = 0
    offline: bool = False
    refusal: str = ""  # when abstained: the refusal's text, without the nearest titles
    nearest: list[RetrievedPaper] = field(default_factory=list)  # when abstained
    # How the sources were chosen when not by a new search: "answered from the previous
    # answer's sources [2], [5]; the decision filter (Oral) leaves out [3]".
    scope_note: str = ""
    # "compare them": the source numbers the comparison table is built from (2-4).
    compare: tuple[int, ...] = ()
    # A model's answer (rag.answer.grounding): "cited" by its first reply, "reasked" (cited
    # when asked again), "fallback" (it never cited: the offline answer); "" without a model.
    grounding: str = ""
    note: str = ""  # the one line saying why a fallback is shown
    uncited: int = 0  # the model's sentences with no marker
    # Which candidates belong was decided by this judge ("offline" or a model,
    # rag.answer.judge), which checked `checked` retrieved papers and kept `matched`.
    judged_by: str = ""
    checked: int = 0
    matched: int = 0
    judge_note: str = ""  # a list's "checked 10, 7 match", in the question's language
    counted: int = 0  # a count: the papers that matched (its text lists more than `sources`)

    def as_json(self) -> dict[str, Any]:
        """The `rag ask --json` object."""
        return {
            "answer": self.answer,
            "abstained": self.abstained,
            "model": self.model,
            "citations": [
                {
                    "n": c.n,
                    "paper_id": c.paper_id,
                    "title": c.title,
                    "url": c.url,
                    "quote": c.quote,
                    "supported": c.supported,
                    "support": None if c.support is None else round(c.support, 3),
                    "evidence": c.evidence,
                    "start": c.start,
                    "end": c.end,
                }
                for c in self.citations
            ],
            "unsupported": sum(c.supported is False for c in self.citations),
            "sources": [
                {
                    "n": n,
                    "paper_id": s.paper.id,
                    "title": s.paper.shown_title,
                    "decision": s.paper.decision,
                    "url": s.paper.url,
                    "authors": list(s.paper.authors),
                    "authors_ordered": s.paper.authors_ordered,
                    "has_abstract": s.paper.has_abstract,
                }
                for n, s in enumerate(self.sources, start=1)
            ],
            # Added after the fields above (which stay as they were): a refusal as data.
            "refusal": self.refusal,
            "nearest": [
                {"n": n, "paper_id": s.paper.id, "title": s.paper.shown_title}
                for n, s in enumerate(self.nearest, start=1)
            ],
            "scope_note": self.scope_note,
            "compare": list(self.compare),
            "grounding": self.grounding,
            "note": self.note,
            "uncited": self.uncited,
            "judge": {
                "by": self.judged_by,
                "checked": self.checked,
                "matched": self.matched,
                "note": self.judge_note,
            }
            if self.judged_by
            else None,
        }


def numbered(result: CitedAnswer, seen: Sequence[int] = ()) -> CitedAnswer:
    """`result` with its sources in reading order: cited first, by first citation, no gaps.

    The one place source numbers change, for the offline and the model's answers alike;
    the text's markers and each `Citation.n` follow. A comparison keeps the numbers the reader
    saw (`seen[i]` for source i + 1): "compare [1] and [3]" answers with [1] and [3].
    """
    if result.compare:
        if not seen:
            return result
        order = sorted(range(1, len(result.sources) + 1), key=lambda old: seen[old - 1])
    else:
        order = source_order(result.answer, len(result.sources))
    mapping = {old: new for new, old in enumerate(order, start=1)}
    if all(old == new for old, new in mapping.items()):
        return result
    result.answer = renumber(result.answer, mapping)
    result.citations = [replace(c, n=mapping[c.n]) for c in result.citations]
    result.compare = tuple(mapping[n] for n in result.compare)
    result.sources = [result.sources[old - 1] for old in order]
    return result


def cite(quotes: list[Quote], sources: list[RetrievedPaper]) -> list[Citation]:
    """A `Citation` for each quote, naming the paper of the source it cites."""
    citations = []
    for quote in quotes:
        paper = sources[quote.n - 1].paper
        # An unsupported claim gets no quote: no sentence may look like its evidence.
        text = "" if quote.supported is False else quote.quote
        evidence, start, end = located(paper, text)
        citations.append(
            Citation(
                quote.n,
                paper.id,
                paper.shown_title,
                paper.url,
                paper.decision,
                text,
                paper.tier,
                support=quote.support,
                supported=quote.supported,
                authors=paper.authors,
                authors_ordered=paper.authors_ordered,
                has_abstract=paper.has_abstract,
                evidence=evidence,
                start=start,
                end=end,
            )
        )
    return citations


def located(paper: Paper, quote: str) -> tuple[str, int | None, int | None]:
    """Where `quote` is in the paper: a passage of its abstract (its offsets), or its title."""
    if not quote:
        return "", None, None
    for passage in passages(paper.abstract):
        if passage.text == quote:
            return "abstract", passage.start, passage.end
    at = paper.abstract.find(quote)
    if at >= 0:  # two sentences quoted together
        return "abstract", at, at + len(quote)
    at = paper.title.find(quote)
    return ("title", at, at + len(quote)) if at >= 0 else ("", None, None)


def merged(answers: Sequence[CitedAnswer]) -> CitedAnswer:
    """One answer citing every paper the `answers` cited, each once, in the order first cited:
    what "summarize all the papers we discussed" points at."""
    sources: list[RetrievedPaper] = []
    citations: list[Citation] = []
    for earlier in answers:
        for citation in sorted(earlier.citations, key=lambda c: c.n):
            source = earlier.sources[citation.n - 1]
            if all(s.paper.id != source.paper.id for s in sources):
                sources.append(source)
                citations.append(replace(citation, n=len(sources)))
    return replace(answers[-1], sources=sources, citations=citations, compare=(), matched=0)
