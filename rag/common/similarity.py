"""How alike two texts are: by the exact terms they share, and by their vectors.

- **Terms**: which of a question's content words a text contains, weighted by rarity. The
  small embedding model can miss exact terms ("reverse curse", "1.4 times"); retrieval's
  relevance check, quote matching and the offline answerer add this to cosine similarity.
  BM25 (`rag.index.bm25`) reads words through the same stopword list and the same stemmer, so
  a term means one thing in every part of the relevance score.
- **Vectors**: unit-length rows and maximal marginal relevance.

      matrix = unit_rows(vectors)                     # each row scaled to length 1 (zeros stay 0)
      picked = mmr(matrix, relevance, k=5, lam=0.7)   # indices: relevant, and not alike

  The retriever diversifies papers with `mmr`; the offline answerer picks sentences with it,
  with its own exclusions (a cap per paper, a margin below the best).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from functools import cache

import numpy as np


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row of `vectors` divided by its length (all-zero rows stay zero); the dtype kept."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def mmr(
    matrix: np.ndarray,
    relevance: np.ndarray,
    k: int,
    lam: float,
    first: int = 0,
    excluded: Callable[[list[int]], np.ndarray] | None = None,
) -> list[int]:
    """Maximal marginal relevance: up to `k` row indices of `matrix` (unit rows), `first` first.

    Each next pick maximises `lam * relevance - (1 - lam) * (its highest similarity to a row
    already picked)`, among rows not picked and not `excluded(picked)` (a boolean mask); the
    picking stops early when no row is left.
    """
    chosen = [first]
    while len(chosen) < k:
        redundancy = (matrix @ matrix[chosen].T).max(axis=1)
        value = lam * relevance - (1 - lam) * redundancy
        value[chosen] = -np.inf
        if excluded is not None:
            value[excluded(chosen)] = -np.inf
        pick = int(value.argmax())
        if not np.isfinite(value[pick]):
            break
        chosen.append(pick)
    return chosen


_WORD = re.compile(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*")
_LETTERS = re.compile(r"[a-z]+")
# Function words (bm25s' English list and a few more).
FUNCTION_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with from were has have had its than them which "
    "while when where what who how can also over those our we more most about between both "
    "each other only did does any".split()
)
STOPWORDS = FUNCTION_WORDS | frozenset(
    # words every abstract uses, whatever it is about
    "paper papers paper's work works method model models approach show shows propose proposed "
    "using use used based new find found study studies authors author "
    # how questions are framed, not what they are about
    "summarize summarise summary overview explain describe tell list give anyone someone "
    "recent research ones".split()
)


class Stemmer:
    """The Snowball English stemmer (PyStemmer), which keeps the "s" of a word with no vowel:
    "LLMs" stays "llms" apart from "LLM", "GNNs" from "GNN". Here an acronym's plural is its
    singular, so a question's "LLM" finds an abstract's "LLMs"."""

    def __init__(self) -> None:
        import Stemmer as PyStemmer

        self.snowball = PyStemmer.Stemmer("english")

    def stemWord(self, word: str) -> str:  # noqa: N802  (PyStemmer's name, which bm25s calls)
        if len(word) > 2 and word[-1] == "s" and not _VOWELS.intersection(word):
            word = word[:-1]
        return str(self.snowball.stemWord(word))

    def stemWords(self, words: Sequence[str]) -> list[str]:  # noqa: N802
        return [self.stemWord(w) for w in words]


_VOWELS = frozenset("aeiouy")


@cache
def stemmer() -> Stemmer:
    """The stemmer shared by BM25 and `terms`."""
    return Stemmer()


@cache  # a corpus repeats its words: the term sets of all abstracts took 0.61 s, now 0.45 s
def stem(word: str) -> str:
    """`word` stemmed; in compounds ("surface-codes", "gpt-4o") each run of letters is."""
    if word.isalpha():
        return stemmer().stemWord(word)
    return _LETTERS.sub(lambda m: stemmer().stemWord(m.group()), word)


# BM25's words (bm25s' token pattern): two or more letters or digits.
_BM25_WORD = re.compile(r"(?u)\b\w\w+\b")


def word_pairs(text: str) -> tuple[list[str], int]:
    """`text`'s neighbouring word pairs, stemmed, function words left out and none of a word
    every abstract uses ("consistency models" -> "consist model"; not "papers study"), and how
    many words it has besides those: the phrase index's tokens (rag.index.bm25)."""
    words = [stem(w) for w in _BM25_WORD.findall(text.lower()) if w not in FUNCTION_WORDS]
    common = _common_stems()
    pairs = [f"{a} {b}" for a, b in zip(words, words[1:], strict=False) if not {a, b} & common]
    return pairs, sum(w not in common for w in words)


@cache
def _common_stems() -> frozenset[str]:
    """The stems of the words every abstract uses, but "model" ("consistency models")."""
    return frozenset(stem(w) for w in STOPWORDS - FUNCTION_WORDS) - {"model"}


def lexical_scores(
    query: str, texts: Sequence[str], idf: Callable[[str], float] | None = None
) -> np.ndarray:
    """For each text, the share of the query's content terms it contains, weighted by rarity.

    Rarity (IDF) is `idf(term)` when given (the corpus's, `KeywordIndex.idf`), else measured
    among `texts` themselves, so the words every candidate shares ("masked diffusion") count
    little and the distinctive ones ("reverse curse") count most.
    """
    wanted = terms(query)
    if not wanted or not texts:
        return np.zeros(len(texts))
    found = [terms(t) for t in texts]
    if idf is not None:
        weight = {term: idf(term) for term in wanted}
    else:
        df = {term: sum(term in f for f in found) for term in wanted}
        weight = {term: math.log(1 + len(texts) / (1 + df[term])) for term in wanted}
    total = sum(weight.values())
    if total <= 0:  # an empty corpus rates no term
        return np.zeros(len(texts))
    return np.array([sum(weight[t] for t in wanted & f) / total for f in found])


def terms(text: str) -> set[str]:
    """Content words of `text`: lower-cased, stopwords dropped, stemmed."""
    return set(written_terms(text))


def written_terms(text: str) -> dict[str, str]:
    """`terms(text)`, each with the word it was first written as ("specul": "speculative")."""
    found: dict[str, str] = {}
    for word in _WORD.findall(text.lower()):
        if word not in STOPWORDS and (len(word) >= 3 or word[0].isdigit()):
            found.setdefault(stem(word), word)
    return found


def held(wanted: set[str], found: set[str]) -> set[str]:
    """The `wanted` terms among a text's terms `found`, a hyphenated one also when written as
    one word: "over-smooth" is held by "oversmoothing", "pretrain" by "pre-training",
    "multi-modal" by "multimodal" (abstracts write both ways)."""
    joined = {_joined(t) for t in found}
    return {t for t in wanted if t in found or _joined(t) in joined}


def _joined(term: str) -> str:
    """A hyphenated term as the stem of its word written as one ("multi-modal": "multimod",
    as "multimodal" stems); any other term as it is."""
    return stem(term.replace("-", "")) if "-" in term else term


def written_words(text: str) -> set[str]:
    """The words of `text` as written (letters and digits, case kept)."""
    return set("".join(c if c.isalnum() else " " for c in text).split())


def acronyms(text: str) -> set[str]:
    """Two-letter acronyms written in capitals ("RL", "KV"): too short to be terms, so a topic
    made of one is matched as written."""
    return {w for w in written_words(text) if len(w) == 2 and w.isupper() and w.isalpha()}


def term_parts(text: str) -> set[str]:
    """`terms(text)` plus the parts of hyphenated terms ("surface-code": "surface", "code")."""
    found = terms(text)
    return found | {part for t in found if "-" in t for part in t.split("-") if part}


# "Masked diffusion models (MDMs)": the abbreviation in brackets, then up to 8 words before it
# (found from the bracket back: a pattern that starts with the words tries every position).
_DEFINED = re.compile(r"\s+\(([A-Z][A-Za-z0-9-]*[A-Z]s?)\)")
_WORDS_BEFORE = re.compile(r"((?:[A-Za-z][\w-]*\s+){0,7}[A-Za-z][\w-]*)$")


def abbreviations(text: str, within_words: bool = False) -> dict[str, str]:
    """Abbreviations the text defines, "Masked diffusion models (MDMs)" -> {"MDMs": ...}.

    `within_words`: when no phrase's initials spell it, also letters inside its words, in
    order ("sparse autoencoders (SAEs)", "low-rank adaptation (LoRA)"), for a question. The
    abstracts' table leaves it off: their spelled-out sentences are what the shipped vectors
    hold (rag.answer.support.embedded_texts).
    """
    found: dict[str, str] = {}
    for match in _DEFINED.finditer(text):
        start = max(0, match.start() - 400)
        if start:  # from a word's start
            start = text.find(" ", start, match.start()) + 1 or start
        before = _WORDS_BEFORE.search(text, start, match.start())
        if before is None:
            continue
        abbr = match.group(1)
        letters = re.sub(r"[^A-Za-z]", "", abbr.removesuffix("s")).lower()
        words = before.group(1).split()
        phrases = [words[-size:] for size in range(1, min(len(words), 8) + 1)]
        phrase = next((p for p in phrases if _initials(letters, p)), None)
        if phrase is None and within_words:
            phrase = next((p for p in phrases[1:] if _spells(letters, p)), None)
        if phrase is not None:
            found[abbr] = " ".join(phrase)
            if abbr.endswith("s") and phrase[-1].endswith("s"):
                found.setdefault(abbr[:-1], " ".join([*phrase[:-1], phrase[-1][:-1]]))
    return found


def _initials(letters: str, phrase: list[str]) -> bool:
    """Whether `letters` are the initials of the phrase's words (or of their hyphen parts)."""
    initials = "".join(w[0] for w in phrase).lower()
    parts = "".join(p[0] for w in phrase for p in w.split("-") if p).lower()
    return letters in (initials, parts)


def _spells(letters: str, phrase: list[str]) -> bool:
    """Whether each word gives `letters` its initial and perhaps more of its letters, in
    order ("sae": "sparse autoencoders")."""
    if not phrase:
        return not letters
    word = phrase[0].lower()
    if not letters or letters[0] != word[0]:
        return False
    for end in range(1, len(letters) + 1):
        rest = iter(word[1:])
        if all(c in rest for c in letters[1:end]) and _spells(letters[end:], phrase[1:]):
            return True
    return False


def coined(abstract: str) -> list[str]:
    """Abbreviations an abstract coins by capitals inside its words ("REPresentation Alignment
    (REPA)", a name); not those of initials ("process reward model (PRM)", "Hilbert-Schmidt
    ...")."""
    return [
        short
        for short, full in abbreviations(abstract, within_words=True).items()
        if len(short) >= 3
        and any(c.isupper() for w in full.replace("-", " ").split() for c in w[1:])
    ]
