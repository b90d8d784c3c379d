"""Check an answer's [n] citations against its sources and attach the supporting quotes.

Markers are parsed in the forms `[1]`, `[1, 2]`, `[1][2]` and `[1-3]`. Numbers that name no
source are removed from the text and counted. Then `source_order` and `renumber` number the
sources as the reader sees them: cited sources first, 1..k in order of first citation, then
the uncited ones, with no gaps (the one place numbers change). Each cited source gets one
quote: the sentence of its abstract (an exact slice, from `rag.index.passages.split_sentences`)
that best supports the answer sentences citing it, by the embedding model's similarity plus
the rare terms they share (`rag.common.similarity`).

Each quote also carries a support score: how well the weakest claim citing that source is
found in its abstract (below the fitted `Calibration.support_floor`, with the weight of shared
terms `Calibration.support_lexical_weight`: rag.retrieval.calibration, fitted by
bench/calibrate_support.py). A claim below the floor is not backed by any sentence, so no
sentence may be shown as if it supported it.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.answer.citations import MARKER, Quote, parse_markers, unique
from rag.answer.claim_check import contradicts, fold_lookalikes, new_numbers
from rag.common.similarity import abbreviations, lexical_scores, unit_rows
from rag.index.passages import split_sentences
from rag.index.shipped import StoredVectors
from rag.lang.gloss import english_part, is_english
from rag.retrieval.calibration import MINILM, Calibration
from rag.types import Paper

T = TypeVar("T")

# Shared exact terms (numbers, names) are strong evidence that the small embedding model
# can miss ("1.4 times faster" vs "MDMs ... faster"), so they add to the cosine similarity
# (x Calibration.support_lexical_weight). A claim whose support (its best passage's cosine +
# that weight x the share of its rare terms, by corpus IDF, the passage contains) is below
# Calibration.support_floor is "not found in the abstract". What the floor misses are
# contradictions that reuse the abstract's own words.


@dataclass(frozen=True)
class Claim:
    """A sentence of the answer (markers removed) and the source numbers it cites."""

    text: str
    numbers: tuple[int, ...]


def claims(text: str) -> list[Claim]:
    """Sentences of the answer with the numbers they cite.

    A marker standing at the start of a sentence ("... claim. [1] Next ...") belongs to
    the sentence before it; at the start of the reply, with no sentence before it ("[1] The
    scaling rate ...", Qwen2.5's habit), to the sentence it opens.
    """
    found: list[tuple[str, list[int]]] = []
    for line in text.splitlines():
        for start, end in split_sentences(line):
            sentence = line[start:end]
            numbers: list[int] = []
            body_start = 0
            for marker in parse_markers(sentence):
                if sentence[body_start : marker.start].strip():
                    break
                numbers.extend(marker.numbers)
                body_start = marker.end
            opening: list[int] = []
            if numbers and found:
                found[-1][1].extend(numbers)
            elif numbers:
                opening = numbers
            rest = sentence[body_start:]
            rest_numbers = opening + [n for m in parse_markers(rest) for n in m.numbers]
            body = MARKER.sub("", rest).strip(" -*•\t")
            if body or rest_numbers:
                found.append((" ".join(body.split()), rest_numbers))
    return [Claim(t, tuple(unique(ns))) for t, ns in found if ns]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def _claims_nothing(claim: str, titles: Sequence[str]) -> bool:
    """A bare "[1]", or "[1] CHASE-SQL", "[1] SCBench [2] ThinK": markers beside nothing but
    words of the cited papers' titles (a small model lists titles with markers) say nothing
    a quote could back."""
    said = _words(claim)
    return not said or said <= set().union(*(_words(t) for t in titles))


def best_quotes(
    text: str,
    papers: dict[int, Paper],
    embeddings: Embeddings,
    fallback_claim: str | None = "",
    idf: Callable[[str], float] | None = None,
    measure_support: bool = True,
    calibration: Calibration = MINILM,
) -> dict[int, Quote]:
    """For each cited number in `papers`, the abstract sentence that best supports its claims,
    and the support of its weakest claim.

    `idf` gives a term's rarity in the corpus (`KeywordIndex.idf`, what the support floor was
    measured with); without it, rarity is measured among the abstract's own sentences.
    `measure_support` False (embeddings other than the bundled English model's, on which the
    floor was measured) leaves support unmeasured, as does a claim that is not in English
    (one that is mostly English is measured on its Latin part: `rag.lang.gloss.english_part`).
    `calibration` gives the weight of shared terms and the floor. `fallback_claim` None: a
    marker with no sentence of its own gets no quote.
    """
    by_number: dict[int, list[str]] = {}
    cited_with: dict[str, set[int]] = {}  # a claim's numbers may come from any source it cites
    for claim in claims(text):
        for n in claim.numbers:
            if n in papers:
                titles = [papers[m].title for m in claim.numbers if m in papers]
                if fallback_claim is None and _claims_nothing(claim.text, titles):
                    continue  # a bare marker or title: no claim to support (a model's answer)
                # Read as a person reads it (Cyrillic look-alikes as Latin letters), then
                # judged on what the English model can read of it: a mostly English claim
                # without its few Chinese letters; a Chinese claim stays as it is (unmeasured).
                said = fold_lookalikes(claim.text or fallback_claim or text)
                said = english_part(said) or said
                by_number.setdefault(n, []).append(said)
                cited_with.setdefault(said, set()).update(claim.numbers)
    if not by_number:
        return {}
    candidates: dict[int, list[str]] = {
        n: [papers[n].abstract[s:e] for s, e in split_sentences(papers[n].abstract)]
        or [papers[n].abstract]
        for n in by_number
    }
    # Matched in their spelled-out form; quoted exactly as written.
    readable = {
        n: dict(zip(ss, spell_out(papers[n].abstract, ss), strict=True))
        for n, ss in candidates.items()
    }
    # Support reads a claim with the abstract's abbreviations spelled out as well, and also
    # weighs adjacent sentence pairs, since one claim often sums up two sentences.
    spelled_claims: dict[int, dict[str, str]] = {}
    passages: dict[int, list[str]] = {}
    if measure_support:
        for n, cs in by_number.items():
            spelled_claims[n] = dict(zip(cs, spell_out(papers[n].abstract, cs), strict=True))
            passages[n] = _with_pairs([readable[n][s] for s in candidates[n]])
    claim_texts = unique(
        [c for cs in by_number.values() for c in cs]
        + [c for table in spelled_claims.values() for c in table.values()]
    )
    sentence_texts = unique(
        [readable[n][s] for n, ss in candidates.items() for s in ss]
        + [p for ps in passages.values() for p in ps]
    )
    vectors = _embed(embeddings, claim_texts + sentence_texts)
    claim_vec = dict(zip(claim_texts, vectors[: len(claim_texts)], strict=True))
    sentence_vec = dict(zip(sentence_texts, vectors[len(claim_texts) :], strict=True))
    quotes: dict[int, Quote] = {}
    for n, claim_list in by_number.items():
        spelled = [readable[n][s] for s in candidates[n]]
        sims = (
            np.stack([sentence_vec[s] for s in spelled])
            @ np.stack([claim_vec[c] for c in claim_list]).T
        )
        weight = calibration.support_lexical_weight
        sims = sims + weight * np.stack([lexical_scores(c, spelled) for c in claim_list]).T
        best = np.unravel_index(int(np.argmax(sims)), sims.shape)
        quote = candidates[n][int(best[0])]
        support, contradicted = None, False
        if measure_support and all(is_english(c) for c in claim_list):
            matrix = np.stack([sentence_vec[p] for p in passages[n]])
            scores = [
                passage_scores(
                    spelled_claims[n][c], passages[n], claim_vec, matrix, idf, calibration
                )
                for c in claim_list
            ]
            support = min(float(np.max(s)) for s in scores)
            contradicted = any(
                contradicts(c, passages[n][int(np.argmax(s))])
                or new_numbers(
                    c, " ".join(papers[m].abstract for m in cited_with[c] if m in papers)
                )
                for c, s in zip(claim_list, scores, strict=True)
            )
        floor = calibration.support_floor
        quotes[n] = Quote(n, papers[n].id, quote, float(sims[best]), support, floor, contradicted)
    return quotes


def passage_scores(
    claim: str,
    passages: Sequence[str],
    claim_vec: dict[str, np.ndarray],
    passage_matrix: np.ndarray,
    idf: Callable[[str], float] | None,
    calibration: Calibration = MINILM,
) -> np.ndarray:
    """Each passage's cosine to `claim` + the lexical weight x the rare terms they share."""
    shared = lexical_scores(claim, passages, idf)
    return passage_matrix @ claim_vec[claim] + calibration.support_lexical_weight * shared


def _with_pairs(sentences: list[str]) -> list[str]:
    return sentences + [f"{a} {b}" for a, b in zip(sentences, sentences[1:], strict=False)]


def spell_out(abstract: str, texts: Sequence[str]) -> list[str]:
    """`texts` (sentences of `abstract`) with its defined abbreviations spelled out."""
    table = abbreviations(abstract)
    if not table:
        return list(texts)
    names = "|".join(map(re.escape, sorted(table, key=len)[::-1]))
    pattern = re.compile(r"(?<!\()\b(" + names + r")\b(?!\))")
    return [pattern.sub(lambda m: f"{table[m.group(1)]} ({m.group(1)})", t) for t in texts]


def embedded_texts(paper: Paper) -> list[str]:
    """What the answer stage embeds of a paper: its shown title and its sentences (the list
    cut, rag.answer.judge.listed) and its passages (the extractive writer), abbreviations spelled
    out. `rag vectors build` ships their vectors for the bundled corpus."""
    from rag.index.passages import passages, sentences

    if not paper.abstract:
        return [paper.shown_title]
    said = sentences(paper.abstract) or [paper.abstract]
    read = [p.text for p in passages(paper.abstract)]
    return unique(
        [
            paper.shown_title,
            *spell_out(paper.abstract, said),
            *spell_out(paper.abstract, read),
        ]
    )


class CachedEmbeddings(Embeddings):
    """Remembers document vectors: the same abstracts' sentences come back turn after turn;
    `shipped` gives the vectors shipped for the bundled corpus's (`embedded_texts`), read on
    first use, so a new question embeds only the texts of papers fetched since.

    Shared by every session of the app, so it is thread-safe: the lock guards the table, and
    the model runs outside it (another thread may embed the same text meanwhile; harmless).
    """

    def __init__(
        self,
        inner: Embeddings,
        size: int = 20_000,
        shipped: Callable[[], StoredVectors | None] | None = None,
    ) -> None:
        self.inner = inner
        self.size = size
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        self._shipped = shipped
        self._stored: StoredVectors | None = None

    def read_shipped(self) -> None:
        """Read the shipped vectors now (the app's warm-up), not at the first answer."""
        with self._lock:
            if self._shipped is not None:  # read once, by the first caller
                self._stored, self._shipped = self._shipped(), None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.read_shipped()
        with self._lock:
            found = {t: self._vectors[t] for t in texts if t in self._vectors}
            for text in found:
                self._vectors.move_to_end(text)
        missing = unique([t for t in texts if t not in found])
        if missing and self._stored is not None:
            stored = self._stored.lookup(missing)
            found.update(
                (t, v.tolist()) for t, v in zip(missing, stored, strict=True) if v is not None
            )
            missing = [t for t in missing if t not in found]
        if missing:
            computed = dict(zip(missing, self.inner.embed_documents(missing), strict=True))
            found.update(computed)
            with self._lock:
                self._vectors.update(computed)
                while len(self._vectors) > self.size:
                    self._vectors.popitem(last=False)
        return [found[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def _embed(embeddings: Embeddings, texts: Sequence[str]) -> np.ndarray:
    return unit_rows(np.asarray(embeddings.embed_documents(list(texts)), dtype=np.float32))
