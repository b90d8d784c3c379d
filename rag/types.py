"""The records every stage shares: a paper, a chunk of it, search filters, a retrieved paper.

They live apart from the stages so that any stage can name them without importing another.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rag.venue import VENUE

TIERS = VENUE.tiers
OFFLINE_MODEL = "offline:extractive"  # the model name of answers and tables built without an LLM
# The decisions that name a tier, whole (case and runs of spaces aside): "Accept (Oral)" as the
# loaders and `rag fetch` write it, the bare tier, and OpenReview's venue ("ICLR 2025 Oral").
# Any other decision names none, so "Reject (considered for an Oral)" gets no Oral badge.
_TIERS_WORD = "|".join(re.escape(t.lower()) for t in TIERS)
_TIER_DECISION = re.compile(
    rf"(?:accept \(({_TIERS_WORD})\)|(?:{re.escape(VENUE.name.lower())} \d{{4}} )?({_TIERS_WORD}))",
    re.IGNORECASE,
)
NEAREST_SHOWN = 3  # a refusal names (and the page shows) this many closest, low-match papers
# A comparison table compares 2 to 4 papers (rag.explore.compare; "compare them" in the chat).
MIN_COMPARED, MAX_COMPARED = 2, 4
# The longest question answered (rag.answer refuses longer); the page's chat box stops there,
# and draws itself before the answer stage is imported (issue 31: the page opens first).
MAX_QUESTION_CHARS = 4000


# Extra fields a re-fetch from OpenReview may change and a reader may see (not provenance).
SHOWN_EXTRA = ("tldr", "primary_area", "license", "pdf")
# Four or more letters or digits spaced apart, as a PDF's title may hold them ("I n t e r L C M").
_SPACED = re.compile(r"(?<!\S)(?:\w ){3,}\w(?!\S)")


def letters_joined(text: str) -> str:
    """`text` with letters spaced apart joined: "I n t e r L C M : ..." is "InterLCM : ..."."""
    return _SPACED.sub(lambda m: m.group().replace(" ", ""), text)


# What an untitled seed abstract is called where a title goes (`Paper.shown_title`).
UNIDENTIFIED = "An unidentified seed abstract"


@dataclass(frozen=True)
class Paper:
    id: str
    title: str
    abstract: str
    authors: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    decision: str = ""
    url: str = ""
    source: str = ""
    position: int = 0
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def tier(self) -> str:
        """Oral / Spotlight / Poster, or '' when the decision does not say."""
        return tier_of(self.decision)

    @property
    def has_abstract(self) -> bool:
        """False for a title record: an accepted paper whose abstract the corpus lacks
        (data/iclr2025/iclr2025_accepted_no_abstract.jsonl), indexed by title and authors."""
        return bool(self.abstract)

    @property
    def authors_ordered(self) -> bool:
        """Whether `authors` is in the paper's order: the bundled sources list them in
        another (`authors_ordered: false`), so a first author must not be read from it."""
        flag = self.extra.get("authors_ordered")
        return bool(self.authors) and flag is not False and str(flag).lower() != "false"

    @property
    def untitled(self) -> bool:
        """A seed abstract (a plain-text file of untitled paragraphs) that no title list named:
        its "title" is a label made from its own text, and no venue or decision is known."""
        return self.source.lower().endswith(".txt") and not self.extra.get("title_from")

    @property
    def shown_title(self) -> str:
        """The title to show and cite: for an untitled abstract, what it is ("An unidentified
        seed abstract", issue 31: no file names for titles), after the method name it
        introduces when its label is one ("ReBIND"), never its first sentence; letters a
        PDF spaced apart joined ("InterLCM")."""
        if not self.untitled:
            return letters_joined(self.title)
        label = self.title.strip()
        named = label and not label.endswith(("…", "...")) and len(label.split()) <= 3
        return f"{label} ({UNIDENTIFIED.lower()})" if named else UNIDENTIFIED

    @cached_property  # read several times per paper in an ingest (14,000 times for 2,123)
    def content_hash(self) -> str:
        """Changes whenever anything indexed or shown changes (a re-fetched TL;DR too)."""
        fields: list[Any] = [self.title, self.abstract, list(self.authors), list(self.keywords)]
        fields += [self.decision, self.url]
        # Only when present, so papers without them keep the hash they always had.
        shown = {k: self.extra[k] for k in SHOWN_EXTRA if self.extra.get(k)}
        if shown:
            fields.append(shown)
        return hashlib.sha256(json.dumps(fields, default=str).encode()).hexdigest()[:16]


def tier_of(decision: str) -> str:
    """The tier a decision names exactly ("Accept (Oral)" -> "Oral"), '' for any other text."""
    match = _TIER_DECISION.fullmatch(" ".join(decision.split()))
    word = (match.group(1) or match.group(2)).lower() if match else ""
    return next((t for t in TIERS if t.lower() == word), "")


@dataclass(frozen=True)
class Chunk:
    id: str
    paper_id: str
    index: int
    text: str
    start: int
    end: int
    tokens: int  # word pieces of `text`, without [CLS] and [SEP]


@dataclass
class Filters:
    tiers: list[str] = field(default_factory=list)  # Oral / Spotlight / Poster
    keywords: list[str] = field(default_factory=list)

    def accepts(self, paper: Paper) -> bool:
        if self.tiers and paper.tier not in self.tiers:
            return False
        wanted = {k.lower() for k in self.keywords}
        return not wanted or bool(wanted & {k.lower() for k in paper.keywords})


@dataclass
class RetrievedPaper:
    paper: Paper
    score: float
    similarity: float  # cosine similarity of the paper's best chunk to the question
    dense_rank: int | None = None
    keyword_rank: int | None = None
    # the multilingual encoder's cosine to the original question (non-English questions only)
    multilingual: float | None = None
    # why retrieval put it first, decided once there: the question writes its "name", its
    # "title" (or its title's words), or one of its authors ("author"); "" when by score
    asked_by: str = ""
