"""People: the authors of the indexed papers, and the person a question names.

"Which papers did Max Tegmark co-author?", "papers by Y. Bengio", "Florian Tramer papers",
"Katia Sycara 参与了哪些论文？": a name is found as the user writes it, with or without accents
("Tramèr"/"Tramer", "Jörg"/"Joerg"), middle initials ("Michael W. Mahoney"/"Michael Mahoney")
or with the first name as an initial ("Y. Bengio"). A surname alone ("Tegmark papers") names a
person only when one author has it, it is not an ordinary English word, and the question
either writes it capitalised or asks for someone's papers. The index is built from the paper
records once per index generation and saved beside the BM25 index, like the method names.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

from rag.common.similarity import STOPWORDS, terms
from rag.index.bm25 import KeywordIndex, SavedPerGeneration
from rag.index.papers import PaperIndex
from rag.lang.gloss import english_words
from rag.lang.intent import phrase_pattern, words
from rag.retrieval.names import scored_first
from rag.retrieval.spelling import TYPO_LETTERS, one_slip
from rag.types import Paper
from rag.venue import VENUE

# Letters NFKD does not take apart.
_PLAIN = str.maketrans({"ø": "o", "Ø": "o", "ß": "ss", "ł": "l", "Ł": "l", "đ": "d", "æ": "ae"})
_GERMAN = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "ae", "Ö": "oe", "Ü": "ue"})
MIN_SURNAME = 4  # letters of a surname asked alone or after an initial ("Y. Bengio")
MAX_NAME_WORDS = 5
# A name no indexed text writes: a word of it is in at most this many chunks ("Hinton").
RARE_CHUNKS = 2
SIMILAR = 0.8  # difflib ratio of an author's name to a name no paper lists ("did you mean")


def fold(text: str, german: bool = False) -> list[str]:
    """The Latin words of `text`, lower-case, without accents: "Jörg K.H." -> jorg k h."""
    text = text.translate(_GERMAN) if german else text
    text = unicodedata.normalize("NFKD", text.translate(_PLAIN))
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    return re.findall(r"[a-z0-9]+", text)


def name_keys(author: str) -> tuple[set[str], str]:
    """The ways to write `author` in full, and the surname alone."""
    keys: set[str] = set()
    surname = ""
    for german in (False, True):
        words = fold(author, german)
        if len(words) < 2:
            continue
        first, last = words[0], words[-1]
        surname = surname or last
        keys |= {" ".join(words), f"{first} {last}"}
        if len(last) >= MIN_SURNAME:
            keys.add(f"{first[0]} {last}")
    return keys, surname


@dataclass(frozen=True)
class Person:
    names: tuple[str, ...]  # the authors as recorded ("Max Tegmark"), usually one
    paper_ids: tuple[str, ...]
    written: str  # the words of the question that named them


class AuthorIndex:
    def __init__(
        self,
        keys: dict[str, list[str]],
        papers: dict[str, list[str]],
        titles: dict[str, str] | None = None,
    ) -> None:
        self.keys = keys  # a folded way of writing a name -> the authors it names
        self.papers = papers  # an author as recorded -> their papers' ids
        # The title records (no abstract in the corpus): id -> title. Retrieval finds them by
        # name, title and author only (rag.retrieval.retriever).
        self.titles = titles or {}

    @cached_property
    def first_names(self) -> frozenset[str]:
        """The first names of the indexed authors, folded ("max", "yoshua")."""
        return frozenset(key.split()[0] for key in self.keys if " " in key and key[1] != " ")

    @classmethod
    def build(cls, papers: Iterable[Paper]) -> AuthorIndex:
        by_author: dict[str, list[str]] = {}
        titles: dict[str, str] = {}
        for paper in papers:
            if not paper.has_abstract:
                titles[paper.id] = paper.title
            for author in paper.authors:
                ids = by_author.setdefault(author, [])
                if paper.id not in ids:
                    ids.append(paper.id)
        keys: dict[str, set[str]] = {}
        surnames: dict[str, set[str]] = {}
        for author in by_author:
            full, surname = name_keys(author)
            for key in full:
                keys.setdefault(key, set()).add(author)
            if surname:
                surnames.setdefault(surname, set()).add(author)
        ordinary = english_words()
        for surname, authors in surnames.items():
            alone = len(authors) == 1 and len(surname) >= MIN_SURNAME and surname not in ordinary
            if alone and surname not in keys:
                keys[f"={surname}"] = authors  # a surname alone: see `match`
        return cls({k: sorted(v) for k, v in keys.items()}, by_author, titles)

    def match(self, question: str, asks_people: bool = False) -> Person | None:
        """The person `question` names (the longest name written in it), or None."""
        for german in (False, True):
            words = fold(question, german)
            for size in range(min(MAX_NAME_WORDS, len(words)), 0, -1):
                for start in range(len(words) - size + 1):
                    key = " ".join(words[start : start + size])
                    authors = self.keys.get(key) if size > 1 else self._alone(key, question)
                    if authors and (size > 1 or asks_people or _capitalised(key, question)):
                        ids = [pid for a in authors for pid in self.papers.get(a, [])]
                        return Person(tuple(authors), tuple(dict.fromkeys(ids)), key)
        mistyped = asks_people or _only_a_name(question)  # "Michael Bronstien — any orals?"
        return self._mistyped(fold(question)) if mistyped else None

    def _mistyped(self, words: list[str]) -> Person | None:
        """A question that asks for someone's papers and writes a full name with one slip in
        its last word ("what did sergey levin publish"): the one author of that first name
        whose surname is one slip away (`TYPO_LETTERS` letters or more), else None."""
        for first, last in zip(words, words[1:], strict=False):
            if len(last) < TYPO_LETTERS or not last.isalpha():
                continue
            near = {f"{first} {w}" for w in one_slip(last)} & self.keys.keys()
            authors = {a for key in near for a in self.keys[key]}
            if len(authors) == 1:
                (author,) = authors
                return Person((author,), tuple(self.papers.get(author, [])), f"{first} {last}")
        return None

    def _alone(self, word: str, question: str) -> list[str] | None:
        """The author whose surname `word` is, unless the question writes another first name
        before it ("Michael I. Jordan" is not Julian Jordan)."""
        authors = self.keys.get(f"={word}")
        if not authors:  # most words: the question is not read again
            return None
        run = next((r for r in written_names(question) if fold(r.words[-1]) == [word]), None)
        return None if run is not None and len(run.words) > 1 else authors

    def similar(self, name: str, n: int = 3) -> list[tuple[str, int]]:
        """The authors whose names are spelled much like `name`, each with their papers."""
        folded = {" ".join(fold(a)): a for a in self.papers}
        close = difflib.get_close_matches(" ".join(fold(name)), folded, n=n, cutoff=SIMILAR)
        return [(folded[c], len(self.papers[folded[c]])) for c in close]


_TOKEN = re.compile(r"[^\W\d_][\w\-]*\.?|\S")


@cache
def _frame() -> frozenset[str]:
    """The words of a question about someone's papers that are not the name: the question's
    frame ("which", "papers", "did", "co-author", "this year"), a title, the venue."""
    table = words()
    phrases = [
        *table["words"]["people"],
        *table["words"]["list_openers"],
        *table["words"]["name_frame"],
        *table["words"]["count_frame"],
        *table["venue"],
        *VENUE.question_words,
        *(w for tier in table["tiers"].values() for w in tier),
        *table["words"]["person_frame"],
    ]
    return frozenset(w for p in phrases for w in fold(p)) | STOPWORDS


def _only_a_name(question: str) -> bool:
    """The question writes one capitalised name and, besides it, only the words that ask for
    someone's papers ("Michael Bronstien — any spotlight papers at iclr 2025?")."""
    runs = [r for r in written_names(question) if 2 <= len(r.words) <= 3]
    if len(runs) != 1:
        return False
    rest = fold(question[: runs[0].start] + " " + question[runs[0].end :])
    return bool(rest) and set(rest) <= _frame()


@dataclass(frozen=True)
class Written:
    """A run of capitalised words a question writes, and where."""

    words: tuple[str, ...]
    start: int
    end: int


def written_names(question: str) -> list[Written]:
    """The runs of capitalised words and initials a question writes that are not its frame
    ("Which papers did Max Tegmark co-author?" -> Max Tegmark)."""
    frame = _frame()
    runs: list[Written] = []
    run: list[re.Match[str]] = []
    for m in [*_TOKEN.finditer(question), None]:
        word = m.group().rstrip(".") if m else ""
        named = (
            word[:1].isupper()
            and word.isascii()
            and fold(word)
            and (len(word) == 1 or " ".join(fold(word)) not in frame)
        )
        if named and m is not None:
            run.append(m)
        elif run:
            words = tuple(r.group().rstrip(".") for r in run)
            runs.append(Written(words, run[0].start(), run[-1].end()))
            run = []
    return runs


# A name beside one of these words is the person asked about ("papers by X", "did X
# publish", "X 的论文"): at most this many words between.
NEAR = 2
_PRONOUN = frozenset("he she his her they their".split())


def absent_name(
    question: str,
    term_counts: dict[str, int],
    first_names: frozenset[str] = frozenset(),
    asks_people: bool = True,
) -> str | None:
    """The person a question about someone's papers names when no indexed author has that
    name ("papers by Tri Dao", "Jason Wei 发表了哪些论文"): the one run of two to four
    capitalised words it writes, first and last a whole word, beside the words that ask for
    someone's papers (or just before "papers"), with a word no indexed text holds more than
    `RARE_CHUNKS` times (a topic's words are: "Vision Transformer"). A name in lower case is
    read only as a first name some indexed author has and a surname that is no English word
    ("andrej karpathy papers"; not "ray tracing papers"). Unless the question `asks_people`,
    only a name just before "papers" is read."""
    runs = [r for r in written_names(question) if 2 <= len(r.words) <= 4]
    if not runs:
        runs = _lower_case_names(question, first_names)
    if len(runs) != 1 or min(len(runs[0].words[0]), len(runs[0].words[-1])) < 2:
        return None
    run = runs[0]
    asks = phrase_pattern((*words()["words"]["people"], "by", "from"))
    before_papers = fold(question[run.end :])[:1] in (["papers"], ["publications"])
    near = (
        before_papers
        or (
            asks_people
            and any(
                _PRONOUN & set(fold(m.group()))  # "what has he got", "his papers": the one named
                or _words_between(
                    question[run.end : m.start()]
                    if m.start() >= run.end
                    else question[m.end() : run.start]
                )
                <= NEAR
                for m in asks.finditer(question)
                if m.end() <= run.start or m.start() >= run.end
            )
        )
    )
    named = [w for w in run.words if len(w) > 1]
    if not near or all(term_counts.get(t, 0) > RARE_CHUNKS for w in named for t in terms(w)):
        return None
    return " ".join(w if len(w) > 1 else f"{w}." for w in run.words)


def _lower_case_names(question: str, first_names: frozenset[str]) -> list[Written]:
    """The pairs of lower-case words that read as a name: an indexed author's first name,
    then a word that is neither English nor the question's frame, written as a name is."""
    ordinary, frame = english_words(), _frame()
    tokens = [m for m in _TOKEN.finditer(question) if m.group().isalpha()]
    return [
        Written((a.group().title(), b.group().title()), a.start(), b.end())
        for a, b in zip(tokens, tokens[1:], strict=False)
        if a.group().islower()
        and b.group().islower()
        and question[a.end() : b.start()] == " "
        and a.group() in first_names
        and a.group() not in STOPWORDS  # "the openreview link": "the" is no first name here
        and len(b.group()) >= 3
        and b.group() not in ordinary
        and b.group() not in frame
    ]


def _words_between(text: str) -> int:
    """Words in `text`, a Chinese character counting as one."""
    return len(re.findall(r"[\u4e00-\u9fff]|[^\s\u4e00-\u9fff]+", text))


def _capitalised(word: str, question: str) -> bool:
    return any(fold(w) == [word] and w[:1].isupper() for w in re.findall(r"\S+", question))


def person_first(
    ranked: Sequence[str], person: Person | None, fused: dict[str, float]
) -> tuple[list[str], dict[str, float]]:
    """`ranked` with the person's papers first (those retrieval scored, best first, then the
    rest in index order), each scored above the best, so they fill the top of the list."""
    if person is None:
        return list(ranked), fused
    return lifted(ranked, person.paper_ids, fused)


def lifted(
    ranked: Sequence[str], ids: Sequence[str], fused: dict[str, float]
) -> tuple[list[str], dict[str, float]]:
    """`ranked` with `ids` first (those ranked, in rank order, then the rest), each scored
    above the best."""
    if not ids:
        return list(ranked), fused
    theirs = set(ids)
    lead = [pid for pid in ranked if pid in theirs]
    lead += [pid for pid in ids if pid not in lead]
    return scored_first(lead, ranked, fused)


PEOPLE_VERSION = 2


class PaperPeople:
    """The author index of a paper index, built once per index generation and saved."""

    def __init__(self, index: PaperIndex) -> None:
        self.index = index
        self._people = SavedPerGeneration(
            index,
            "people",
            PEOPLE_VERSION,
            build=lambda papers, _keyword: AuthorIndex.build(papers),
            load=_saved_people,
            dump=lambda p: {"keys": p.keys, "papers": p.papers, "titles": p.titles},
        )

    def current(self, keyword: KeywordIndex | None = None) -> AuthorIndex:
        return self._people.current(keyword)

    def named(
        self, question: str, asks_people: bool = False, keyword: KeywordIndex | None = None
    ) -> Person | None:
        """The person `question` names, or None."""
        return self.current(keyword).match(question, asks_people)

    def topic(self, question: str, person: Person) -> str:
        """What `question` asks of `person`'s papers besides them, in its folded words: what
        follows "on", "about", "interested in" ("any by percy liang on benchmarks?" ->
        "benchmarks"), else the words just before "papers" ("neel nanda interp papers" ->
        "interp"); "" when it asks for all of them, or for the others ("besides the SAE
        stuff"), or names them in a way not cut out safely (a slip, a German spelling)."""
        lists = words()["words"]
        if phrase_pattern(tuple(lists["person_topic_except"])).search(question):
            return ""
        name, frame = person.written.split(), _asking_words()
        marker = list(phrase_pattern(tuple(lists["person_topic"])).finditer(question))
        if not marker and (zh := _ZH_TOPIC.search(question)):  # "发表了哪些因果发现的论文"
            said = zh.group(1)  # less a tier it names ("哪些被录用为 oral 的论文": a filter)
            for tier in sorted((w for ws in words()["tiers"].values() for w in ws), key=len)[::-1]:
                said = re.sub(rf"(?:被录用为|录用为)?\s*{re.escape(tier)}", " ", said, flags=re.I)
            said = " ".join(said.split()).strip(" 的")
            return said if re.search(r"[\u4e00-\u9fff]{2}", said) else ""
        if marker:
            after = fold(_CLAUSE.split(question[marker[-1].end() :])[0])
            run = after[: _at(after, name)]
        else:
            folded = fold(question)
            at = _at(folded, name)
            nouns = [i for i, w in enumerate(folded) if w in ("papers", "paper", "stuff", "work")]
            if at is None or not nouns:
                return ""
            before = folded[at + len(name) if at < nouns[0] else 0 : nouns[0]]
            run = []
            for word in reversed(before):  # "neel nanda interp papers": the words next to it
                if word in frame or len(word) < 2:
                    break
                run.insert(0, word)
        while run and (run[0] in frame or len(run[0]) < 2):
            run.pop(0)
        while run and (run[-1] in frame or len(run[-1]) < 2):
            run.pop()
        spelled = words()["acronyms"]  # "rl" is no term: "reinforcement learning" is
        return " ".join(spelled.get(w.upper(), w) if len(w) == 2 else w for w in run)

    def absent(self, question: str, asks_people: bool = True) -> str | None:
        """The name of a person a question asks about whom no indexed paper lists as an
        author ("papers by Tri Dao"), or None (see `absent_name`); asked once `named` found
        no one."""
        keyword = self.index.keyword_index()  # one read of the index's generation, not two
        first_names = self.current(keyword).first_names
        return absent_name(question, keyword.term_counts, first_names, asks_people)

    def similar(self, name: str) -> list[tuple[str, int]]:
        """The indexed authors spelled much like `name`, with their papers' number."""
        return self.current().similar(name)


def _at(words: list[str], name: list[str]) -> int | None:
    """Where the words of `name` start in `words`, or None."""
    return next((i for i in range(len(words)) if words[i : i + len(name)] == name), None)


@cache
def _asking_words() -> frozenset[str]:
    """The words that ask for a person's papers or frame a question, not what it is about."""
    lists = words()["words"]
    phrases = [*lists["people"], *lists["person_frame"], *lists["topic_frame"], *lists["filler"]]
    tiers = [w for names in words()["tiers"].values() for w in names]
    said = frozenset(w for p in [*phrases, *tiers] for w in fold(p)) | STOPWORDS
    return said - {"model", "models"}  # "diffusion language model": a topic's word


# Where the words of a topic end: a clause's punctuation, or a dash between spaces.
# "Kun Zhang 发表了哪些因果发现的论文": the words between "哪些" and "(的)论文"
_ZH_TOPIC = re.compile(
    r"(?:哪些|什么|几篇)\s*([\u4e00-\u9fff][\u4e00-\u9fff\w -]{1,19}?)的?(?:论文|文章)"
)
_CLAUSE = re.compile(r"[?!;,.。，？！；]\s|[?!;,。，？！；]|\s[-–—]+\s")


def _saved_people(saved: Any) -> AuthorIndex | None:
    """The saved author index, or None when none is saved or it is not of the saved shape."""
    try:
        return AuthorIndex(dict(saved["keys"]), dict(saved["papers"]), dict(saved["titles"]))
    except (TypeError, KeyError, AttributeError):
        return None
