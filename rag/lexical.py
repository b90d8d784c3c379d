"""Exact-term evidence: which of a question's content words a text contains, weighted by rarity.

The small embedding model can miss exact terms ("reverse curse", "1.4 times"); retrieval's
relevance check, quote matching and the offline answerer add this to cosine similarity.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*")
_STOPWORDS = frozenset(
    "the and for with that this from are was were has have had its their than then them they "
    "which while when where what who how not but can also into over such these those our we "
    "paper work method model models approach show shows propose proposed using use used based "
    "more most about between both each other only new did does any there any papers works "
    "find found study studies paper's authors author "
    # how questions are framed, not what they are about
    "summarize summarise summary overview explain describe tell list give anyone someone "
    "recent research ones".split()
)


def lexical_scores(query: str, texts: Sequence[str]) -> np.ndarray:
    """For each text, the share of the query's content terms it contains, weighted by rarity.

    Rarity (IDF) is measured among `texts` themselves, so the words every candidate shares
    ("masked diffusion") count little and the distinctive ones ("reverse curse") count most.
    """
    wanted = terms(query)
    if not wanted or not texts:
        return np.zeros(len(texts))
    found = [terms(t) for t in texts]
    df = {term: sum(term in f for f in found) for term in wanted}
    weight = {term: math.log(1 + len(texts) / (1 + df[term])) for term in wanted}
    total = sum(weight.values())
    return np.array([sum(weight[t] for t in wanted & f) / total for f in found])


def terms(text: str) -> set[str]:
    """Content words of `text`, lower-cased and crudely stemmed."""
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS or (len(word) < 3 and not word[0].isdigit()):
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if len(word) > len(suffix) + 3 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        found.add(word)
    return found


def term_parts(text: str) -> set[str]:
    """`terms(text)` plus the parts of hyphenated terms ("surface-code": "surface", "code")."""
    found = terms(text)
    return found | {part for t in found if "-" in t for part in t.split("-") if part}
