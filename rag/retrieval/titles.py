"""Title records asked by their title's words: "Chain-of-Focus Prompting", "kolmogorov arnold
networks", "deep MMD gradient flow", "identifying counterfeit songs - what did they do?".

A title record (a paper without an abstract in the corpus) is found only when a question asks
for it (rag.retrieval.retriever). Besides its name and its exact title, a question asks for it
when its words are that title's: its head (before ": "), its subtitle, or a run of it, written
in any case, with or without accents, hyphens and punctuation, in a longer sentence whose other
words only frame the question ("the ... paper", "I saw a poster on ..."). All of these must
hold, with words weighted by their rarity (IDF over the titles of all papers and the chunks of
the abstracts), so that a topical question is not taken for a title ("papers on diffusion
models" is not "Diffusion Models ..."):

- most of the question (`QUESTION_SHARE` of its weight, framing words left out) is the title's;
- what it shares with the title is specific: `MIN_WEIGHT` or more (one rare word, such as a
  name no abstract uses, or several less rare ones), and no other paper's title, with or without
  an abstract, holds all of it;
- it covers a whole part of the title (the head, the subtitle or the title), or a contiguous run
  of `RUN_WORDS` or more of the title's words (three of a title of four: "decentralised
  learning with teleportation") that is `RUN_SHARE` of its weight or more
  ("Aligning generative denoising with discriminative objectives"; "sequential decision
  making", three words of "On the Modeling Capabilities of Large Language Models for
  Sequential Decision Making" that ten abstracts use, is a topic).

Or the question writes the whole title, its head or its subtitle out, in order, before or
inside a question of its own ("Reflective Gaussian Splatting - how do they handle reflective
surfaces?"): `PHRASE_WORDS` content words or more, `MIN_WEIGHT` of rarity, held by no other
title. A long part may be quoted from memory: one word missed or said another way, a word of
the question's own between two of its words ("contextualizing biological perturbation
experiments with language"), `NEARLY` of its weight.
A question is read as typed: Greek letters spelled out, a word no title or abstract holds
taken for its American spelling or the title word a typing slip away ("languge"), a named
person's words left out, a question in parts read part by part; a Chinese one by its Latin
words, its gloss completing a part of the title they begin.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache

from rag.common.similarity import STOPWORDS, stem
from rag.index.bm25 import KeywordIndex, SavedPerGeneration
from rag.index.papers import PaperIndex
from rag.lang.gloss import american, as_typed, english_query, spelled_out, title_text
from rag.lang.intent import without_venue, words
from rag.lang.question_kind import QUOTED
from rag.retrieval.people import fold
from rag.retrieval.spelling import TYPO_LETTERS, one_slip
from rag.types import Paper

QUESTION_SHARE = 0.8  # of the question's weight, in the title
MIN_WEIGHT = 8.0  # IDF (natural log) of what the question shares with the title
COVERED = 0.9  # share of a part's weight that counts as the whole part
RUN_SHARE = 0.5  # of the title's weight, for a contiguous run of its words
PHRASE_WORDS = 3  # content words of a title part written out whole inside a question
RUN_WORDS = 4  # content words of such a run at least ("sequential decision making" is a topic)
NEARLY = 0.75  # of a long title part's weight, written out from memory (one word missed)
# Where a title's parts meet: "Head: Subtitle", "Head - Subtitle" (en or em dash too).
_THE_X = re.compile(r"\bthe\s+((?:[\w,'-]+\s+){2,8}?)(?:paper|one)\b", re.IGNORECASE)
_PARTS = re.compile(r"\s*:\s+|:(?=[A-Z])|\s+(?:-{1,2}|[\u2013\u2014])\s+")


# An acronym's plural: "MLLMs", "GNNs" (the stemmer reads lower case, where "mllms" is a word).
_ACRONYM_PLURAL = re.compile(r"\b([A-Z][A-Z0-9]*[A-Z0-9])s\b")


def title_words(text: str) -> list[str]:
    """The content words of `text` in order, once each: folded (case, accents), split at any
    punctuation ("Online-to-Offline", "Kolmogorov–Arnold"), stopwords dropped, stemmed (an
    acronym's plural too: "MLLMs" is "MLLM")."""
    return list(dict.fromkeys(word_sequence(text)))


def word_sequence(text: str) -> list[str]:
    """`title_words` with repeats: the content words as written, in order."""
    return [stemmed for _word, stemmed in _content_words(text)]


def _content_words(text: str) -> list[tuple[str, str]]:
    """(word, its stem) for the content words of `text` in order, Greek letters spelled out
    ("γ − MoD" is "gamma mod", as "gamma-MoD" is)."""
    text = _ACRONYM_PLURAL.sub(r"\1", as_typed(unicodedata.normalize("NFKC", text)))
    return [
        (word, stem(word))
        for word in fold(text)
        if word not in STOPWORDS and (len(word) >= 2 or word.isdigit())
    ]


def _frame() -> frozenset[str]:
    return frozenset(title_words(" ".join(words()["words"]["name_frame"])))


def title_parts(title: str) -> list[list[str]]:
    """The words of the whole title, then of each of its parts when it has several (the head
    before ": ", the subtitle after it, a part after " - ")."""
    whole = title_words(title)
    pieces = [title_words(p) for p in _PARTS.split(" ".join(title.split()))]
    pieces = [p for p in pieces if p]
    return [whole, *pieces] if whole and len(pieces) > 1 else [whole] if whole else []


@dataclass
class TitleIndex:
    """The words of every paper's title (whole, head, subtitle), and the title records."""

    ids: list[str]
    parts: list[list[list[str]]]  # per paper, `title_parts` of its title
    records: frozenset[str]
    postings: dict[str, set[int]] = field(init=False, repr=False)
    position: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.position = {pid: i for i, pid in enumerate(self.ids)}
        self.postings = {}
        for i, parts in enumerate(self.parts):
            for word in parts[0] if parts else ():
                self.postings.setdefault(word, set()).add(i)
        self._frame = _frame()

    @classmethod
    def build(cls, papers: Iterable[Paper]) -> TitleIndex:
        papers = list(papers)
        records = frozenset(p.id for p in papers if not p.has_abstract)
        return cls([p.id for p in papers], [title_parts(p.title) for p in papers], records)

    def asked(
        self, question: str, keyword: KeywordIndex | None = None, person: str = ""
    ) -> list[str]:
        """The title record (its id, in a list of one or none) whose title `question` asks
        for; `keyword` (the abstracts' BM25 index) gives its term counts to the rarity. The
        words of the `person` it names (folded: "florian tramer") are no title's words."""
        counts = keyword.term_counts if keyword is not None else {}
        n = len(self.ids) + (len(keyword.chunk_ids) if keyword is not None else 0)

        def idf(word: str) -> float:  # rarity among the titles and the abstracts' chunks
            held = len(self.postings.get(word, ())) + counts.get(word, 0)
            return math.log(1 + n / (1 + held))

        said = person.split()

        @cache  # the parts are read again: each word is spelled once
        def spelled(word: str, stemmed: str) -> str:
            return self._spelled(word, stemmed, counts)

        def read(text: str, reading: Callable[[str], str] = title_text) -> list[str]:
            return [
                spelled(word, stemmed)
                for word, stemmed in _content_words(reading(without_venue(text)))
                if word not in said
            ]

        sequence = read(question)
        # A Chinese question may quote a title's first words in Latin letters and say the rest
        # in Chinese ("好像叫 Temporal Flexibility ... 脉冲神经网络 ... 泛化"): its gloss's
        # words may complete a part of the title, but are not what it asks (a gloss adds
        # senses no title has: 叫 "shout call").
        quoted = title_text(question) != english_query(question)  # Latin words, not a gloss
        glossed = set(read(question, english_query)) if quoted else set()
        found = self._held(sequence, counts, idf, glossed=glossed)
        # A question in parts is read part by part too, as a title is ("kolmogorov-arnold
        # attention for graph neural networks - does it beat GAT?" asks for its first part),
        # where the part holds `PHRASE_WORDS` of the title's words or more (fewer is a name's,
        # rag.retrieval.names: "Salvage explainability method: what are ...?").
        pieces = _PARTS.split(question) if not found else []
        for piece in pieces if len(pieces) > 1 else []:
            found = self._held(read(piece), counts, idf, PHRASE_WORDS)
            if found:
                return found
        return found or self._written_out(sequence, idf)

    def _held(
        self,
        sequence: list[str],
        counts: dict[str, int],
        idf: Callable[[str], float],
        least: int = 1,
        glossed: set[str] | frozenset[str] = frozenset(),
    ) -> list[str]:
        """The record whose title holds most of the question's words (`asked`'s first rule);
        `glossed`: words of a Chinese question's gloss, which may complete a part."""
        written = list(dict.fromkeys(sequence))
        # A word no title or abstract holds (a typo no title explains) tells no title apart.
        known = [w for w in written if self._known(w, counts)]
        asked = [w for w in known if w not in self._frame]
        written = known
        weight = {w: idf(w) for w in written}
        total = sum(weight[w] for w in asked)
        # A title without the heaviest words, worth more than 1 - QUESTION_SHARE of the
        # question, cannot hold enough of it: the candidates are the titles with one of them.
        heaviest, left = [], total
        for w in sorted(asked, key=lambda w: -weight[w]):
            if left < QUESTION_SHARE * total:
                break
            heaviest.append(w)
            left -= weight[w]
        best: tuple[float, float, str] | None = None
        for i in {i for w in heaviest for i in self.postings.get(w, ())}:
            if self.ids[i] not in self.records:
                continue
            # A framing word the title holds is the title's ("Earlier Tokens Contribute More").
            shared = [w for w in written if i in self.postings.get(w, ())]
            framing = sum(weight[w] for w in shared if w in self._frame)
            held = sum(weight[w] for w in shared)
            if len(shared) < least or held < max(MIN_WEIGHT, QUESTION_SHARE * (total + framing)):
                continue
            if set.intersection(*(self.postings[w] for w in shared)) != {i}:
                continue  # another paper's title holds these words too: not this one
            also = {w for w in glossed if i in self.postings.get(w, ())}
            covered = _covered(self.parts[i], shared, idf, also)
            if covered is not None and (best is None or (covered, held) > best[:2]):
                best = (covered, held, self.ids[i])
        return [best[2]] if best else []

    def holds(self, text: str) -> bool:
        """Whether some title holds every word of `text` ("Attention Is All You Need": no)."""
        said = title_words(title_text(text))
        return bool(said) and bool(set.intersection(*(self.postings.get(w, set()) for w in said)))

    def quoted(self, question: str, called: bool = True) -> list[str]:
        """The paper, with or without an abstract, whose title the question quotes: its
        opening words or a whole part, `PHRASE_WORDS` content words or more, in order, in
        quotes ('explain "Not All Heads Matter"'), held in order by no other title; or,
        unquoted, its head before ": " written out whole, whose words no other title holds
        all of ("explain the idea behind Not All Heads Matter"). No rarity floor."""
        found: set[str] = set()
        for span in QUOTED.findall(question):
            said = title_words(title_text(next(s for s in span if s)))
            if len(said) < PHRASE_WORDS or any(w not in self.postings for w in said):
                continue
            held = set.intersection(*(self.postings[w] for w in said))
            parts = self.parts
            opened = [i for i in held if parts[i][0][: len(said)] == said or said in parts[i][1:]]
            if len(opened) == 1:
                found.add(self.ids[opened[0]])
        for phrase in [] if found or not called else _THE_X.findall(question):
            # "cite the no pose no problem paper": a head of two words or more, called so
            said = title_words(title_text(phrase))
            if len(said) < 2 or any(w not in self.postings for w in said):
                continue
            held = set.intersection(*(self.postings[w] for w in said))
            exact = [i for i in held if len(self.parts[i]) > 1 and self.parts[i][1] == said]
            found |= {self.ids[exact[0]]} if len(exact) == 1 else set()
        if not found:  # unquoted, a title's head written out whole, in no other title
            sequence = word_sequence(title_text(question))
            heads = {
                i
                for w in set(sequence)
                for i in self.postings.get(w, ())
                if len(self.parts[i]) > 1 and len(self.parts[i][1]) >= PHRASE_WORDS
            }
            found = {
                self.ids[i]
                for i in heads
                if _inside(self.parts[i][1], sequence)
                and set.intersection(*(self.postings[w] for w in self.parts[i][1])) == {i}
            }
        return sorted(found) if len(found) == 1 else []

    def writes(self, question: str, paper_id: str) -> bool:
        """The question writes the paper's whole title out, in order (`PHRASE_WORDS` content
        words or more; a long one nearly, as `_nearly` reads it): "who wrote 'Scaling and
        evaluating sparse autoencoders'?" asks about that paper, whatever else it says."""
        i = self.position.get(paper_id)
        if i is None or not self.parts[i]:
            return False
        whole, text = self.parts[i][0], title_text(without_venue(question))
        if len(whole) < PHRASE_WORDS:
            return False
        return any(  # as written, or its acronyms spelled out as titles write them
            _inside(whole, sequence) or _nearly(whole, sequence, lambda _w: 1.0)
            for sequence in (word_sequence(text), word_sequence(spelled_out(text)))
        )

    def _known(self, word: str, counts: dict[str, int]) -> bool:
        """A title or an abstract's chunk holds `word` (a stem)."""
        return word in self.postings or bool(counts.get(word))

    def _spelled(self, word: str, stemmed: str, counts: dict[str, int]) -> str:
        """`stemmed`, or the title word a word no title or abstract holds stands for: its
        American spelling ("decentralised"), or the one title word a single typing slip away
        ("languge", "refinment"; `TYPO_LETTERS` letters or more, and no other word as near)."""
        if self._known(stemmed, counts):
            return stemmed
        us = american(word)
        if us is not None and self._known(stem(us), counts):
            return stem(us)
        if len(stemmed) < TYPO_LETTERS or not stemmed.isalpha():
            return stemmed
        near = {w for w in one_slip(stemmed) if w in self.postings}
        return near.pop() if len(near) == 1 else stemmed

    def _written_out(self, sequence: list[str], idf: Callable[[str], float]) -> list[str]:
        """The record whose title, head or subtitle the question writes out whole, in order,
        inside a longer question ("Reflective Gaussian Splatting - how do they handle
        reflective surfaces?", "does the implicit search via discrete diffusion chess paper
        beat MCTS?"): `PHRASE_WORDS` content words or more, `MIN_WEIGHT` of rarity, and no
        other title holds them all."""
        held = Counter(i for w in set(sequence) for i in self.postings.get(w, ()))
        best: tuple[float, str] | None = None
        for i, count in held.items():
            if count < PHRASE_WORDS or self.ids[i] not in self.records:
                continue
            for part in self.parts[i]:
                weight = sum(idf(w) for w in part)
                if len(part) < PHRASE_WORDS or weight < MIN_WEIGHT:
                    continue
                written = part if _inside(part, sequence) else _nearly(part, sequence, idf)
                if (
                    written
                    and set.intersection(*(self.postings[w] for w in written)) == {i}
                    and (best is None or weight > best[0])
                ):
                    best = (weight, self.ids[i])
        return [best[1]] if best else []


def _inside(part: list[str], sequence: list[str]) -> bool:
    """`part` is a contiguous run of `sequence`."""
    size = len(part)
    return any(sequence[j : j + size] == part for j in range(len(sequence) - size + 1))


def _nearly(part: list[str], sequence: list[str], idf: Callable[[str], float]) -> list[str]:
    """The words of a long title `part` (`RUN_WORDS` + 1 content words or more) the question
    writes out in its order, as people quote a title from memory: one of its words missing or
    said another way, and one word of their own between two of its words at most
    ("contextualizing biological perturbation experiments with language", "rectified
    diffusion says straightness is not what you need in rectified flow"), worth `NEARLY` of
    its weight; else []."""
    if len(part) <= RUN_WORDS:
        return []
    total = sum(idf(w) for w in part)
    for j, word in enumerate(sequence):
        if word not in part[:2]:
            continue
        start = part.index(word)
        missed, at, said = start, j, [word]
        for w in part[start + 1 :]:
            step = next((p for p in (at + 1, at + 2) if p < len(sequence) and sequence[p] == w), 0)
            if step:
                at = step
                said.append(w)
            else:
                missed += 1
        if missed <= 1 and sum(idf(w) for w in said) >= NEARLY * total:
            return said
    return []


def _covered(
    parts: list[list[str]],
    shared: list[str],
    idf: Callable[[str], float],
    also: set[str] | frozenset[str] = frozenset(),
) -> float | None:
    """The share of the title's weight that `shared` covers, when it covers a whole part of
    the title (with the words `also` said another way: a gloss), or holds a contiguous run of
    `RUN_WORDS` of its words or more, in the title's order, worth `RUN_SHARE` of its weight;
    else None. `shared` is in the question's order."""

    def share(words: list[str], said: set[str] | frozenset[str] = frozenset()) -> float:
        weights = [idf(w) for w in words]
        held = sum(x for x, w in zip(weights, words, strict=True) if w in shared or w in said)
        return held / (sum(weights) or 1.0)

    whole = share(parts[0])
    if any(share(part, also) >= COVERED for part in parts):
        return whole
    positions = [parts[0].index(word) for word in shared]  # in the question's order
    run = _longest_run(positions)
    words = parts[0][run[0] : run[0] + len(run)] if run else []
    least = min(RUN_WORDS, max(len(parts[0]) - 1, 3))  # of a four-word title: three
    return whole if len(run) >= least and share(words) >= RUN_SHARE else None


def _longest_run(positions: list[int]) -> list[int]:
    """The longest stretch of `positions` that counts up by one: title words the question
    writes in a row ("self-correcting decoding with generative feedback to cut ...")."""
    best: list[int] = []
    current: list[int] = []
    for p in positions:
        current = [*current, p] if current and p == current[-1] + 1 else [p]
        best = current if len(current) > len(best) else best
    return best


TITLES_VERSION = 5  # 5: Greek letters spelled out ("gamma-MoD")


class PaperTitles:
    """The title index of a paper index, built once per index generation and saved with the
    BM25 index, like the names and the authors."""

    def __init__(self, index: PaperIndex) -> None:
        self.index = index
        self._titles = SavedPerGeneration(
            index,
            "titles",
            TITLES_VERSION,
            build=lambda papers, _keyword: TitleIndex.build(papers),
            load=_checked,
            dump=lambda t: {"ids": t.ids, "parts": t.parts, "records": sorted(t.records)},
        )

    def current(self, keyword: KeywordIndex | None = None) -> TitleIndex:
        return self._titles.current(keyword)

    def asked(
        self, question: str, keyword: KeywordIndex | None = None, person: str = ""
    ) -> list[str]:
        """The title record `question` asks for by its title's words (`TitleIndex.asked`)."""
        keyword = keyword or self.index.keyword_index()
        return self.current(keyword).asked(question, keyword, person)

    def holds(self, text: str) -> bool:  # `TitleIndex.holds`
        return self.current(self.index.keyword_index()).holds(text)

    def quoted(
        self, question: str, keyword: KeywordIndex | None = None, called: bool = True
    ) -> list[str]:
        """The paper whose title `question` quotes, or calls "the ... paper" (`called`: not
        beside a name, which comes first; `TitleIndex.quoted`)."""
        return self.current(keyword or self.index.keyword_index()).quoted(question, called)

    def writes(self, question: str, paper_id: str, keyword: KeywordIndex | None = None) -> bool:
        """Whether `question` writes the paper's whole title out (`TitleIndex.writes`)."""
        return self.current(keyword or self.index.keyword_index()).writes(question, paper_id)


def _checked(saved: object) -> TitleIndex | None:
    """The saved title index when it is of the shape `PaperTitles` saves, else None."""
    if not isinstance(saved, dict):
        return None
    ids, parts, records = saved.get("ids"), saved.get("parts"), saved.get("records")
    if not (isinstance(ids, list) and isinstance(parts, list) and isinstance(records, list)):
        return None
    if len(parts) != len(ids) or not all(isinstance(v, str) for v in ids + records):
        return None
    for title in parts:
        if not isinstance(title, list) or not all(
            isinstance(part, list) and all(isinstance(w, str) for w in part) for part in title
        ):
            return None
    return TitleIndex(ids, parts, frozenset(records))
