"""The conference the app answers about, as one record: `VENUE`.

Every text that names it (prompts, fixed messages, BibTeX, the page, the CLI's help), the tiers
and the words that name it in a question are derived from this record, so no other module
writes "ICLR 2025" (tests/test_venue.py checks). It is code, not a setting: the bundled corpus,
its vectors and the evaluation sets belong to this one venue.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Venue:
    name: str  # "ICLR"
    year: int  # 2025
    full_name: str  # "International Conference on Learning Representations"
    edition: str  # "Thirteenth": BibTeX's booktitle, as OpenReview writes it
    tiers: tuple[str, ...]  # the accepted papers' tiers, most selective first

    @property
    def label(self) -> str:
        """How every text names it: "ICLR 2025"."""
        return f"{self.name} {self.year}"

    @property
    def slug(self) -> str:
        """The Chroma collection's prefix and downloaded files' names: "iclr2025"."""
        return f"{self.name.lower()}{self.year}"

    @property
    def booktitle(self) -> str:
        """BibTeX's booktitle: "The Thirteenth International Conference on Learning ..."."""
        return f"The {self.edition} {self.full_name}"

    @property
    def openreview_id(self) -> str:
        """Its group id on OpenReview (`rag fetch openreview`): "ICLR.cc/2025/Conference"."""
        return f"{self.name}.cc/{self.year}/Conference"

    @property
    def question_words(self) -> tuple[str, ...]:
        """What names it in a question, lower case: "iclr 2025", "iclr2025", "iclr'25",
        "iclr-2025", "iclr 25", "iclr" (rag.lang.intent_words.toml's `venue` may add more).
        None is a search term: every paper shares it."""
        name, year, short = self.name.lower(), self.year, f"{self.year % 100:02d}"
        spelled = (f"{name} {year}", f"{name}{year}", f"{name}'{short}", f"{name}-{year}")
        return (*spelled, f"{name} {short}", name)


VENUE = Venue(
    name="ICLR",
    year=2025,
    full_name="International Conference on Learning Representations",
    edition="Thirteenth",
    tiers=("Oral", "Spotlight", "Poster"),
)
