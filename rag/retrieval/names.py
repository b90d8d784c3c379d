"""Method names and the papers that introduce them: "What is FlexPrefill?" is FlexPrefill's paper.

The names come from the titles of the indexed papers, computed once per index generation: a
title's leading name, `NAME: ...` or `NAME - ...` ("FlexPrefill: ..."), one word or a short head
holding a name-shaped word ("TetSphere Splatting", and "TetSphere" if no other paper writes it:
not "kNN" of "kNN Attention Demystified"); an acronym or CamelCase word the title defines in
parentheses ("(NEAR)") or as its whole (seed abstracts titled "SPACE"); a whole title of two or
three capitalised words ("Differential Transformer").

A name is found as the user writes it ("flexprefill", "sam2" for "SAM 2"). One that is also
an ordinary English word ("CAKE", "MUSE", "Drama": a whole word of BERT's vocabulary, or a
stopword) names its paper only in capitals as in the title, as the question's whole subject
("What is MUSE?", "介绍一下 Drama") or just before "paper" ("the kan paper"). A name many
papers use (15 or more abstracts, "DNNs"; an acronym that spells a word, as written: "RAG")
names no paper in particular. A method-like name no paper is called and no abstract contains
("What is FooBarNet?") is `unknown_name`; `closest` offers the nearest names.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rag.common.side_files import warn
from rag.common.similarity import STOPWORDS, coined, terms
from rag.index.bm25 import KeywordIndex, SavedPerGeneration
from rag.index.papers import PaperIndex
from rag.lang.gloss import as_typed, made_up, ordinary, title_text
from rag.lang.intent import without_venue, words
from rag.lang.question_kind import subject
from rag.types import Paper, RetrievedPaper
from rag.venue import VENUE

MAX_PAPERS_USING = 15  # a name this many papers write names none in particular
# A word of a longer head that other papers write too is a term, not the paper's name:
# "kNN" ("kNN Attention Demystified: ..."), "SWE-bench" ("SWE-bench Multimodal: ...").
MAX_PART_USERS = 2
# A title's head before ": ", " - ", " -- ", a dash, or a colon before a capital ("GDrag:Towards").
_HEAD = re.compile(
    r"^\s*([^:\u2013\u2014]{2,60}?)\s*(?::\s+\S|:(?=[A-Z])|\s(?:-{1,2}|[\u2013\u2014])\s+\S)"
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9+.\-]*[A-Za-z0-9+]|[A-Za-z0-9]")
_VERSION = re.compile(r"\d+(?:\.\d+)*")
VENUES = frozenset({VENUE.name.lower(), *"neurips icml cvpr iccv eccv acl emnlp aaai".split()})
# (in this app "ICLR 2025" is the conference, not "ICLR: In-Context Learning of ...")
_CAMEL = re.compile(r"[a-z][A-Z]")
ABSTRACT_USES = 2  # an abstract defines a name it writes this often (`abstract_names`)
_PARENS = re.compile(r"\(([A-Za-z][A-Za-z0-9+\-]{1,30})\)")
_SHAPED = re.compile(
    r"^(?=.*[A-Za-z])(?:[A-Za-z0-9+\-]*[a-z][A-Z][A-Za-z0-9+\-]*"  # CamelCase: FlexPrefill
    r"|[A-Z0-9+\-]*[A-Z][A-Z0-9+\-]*[A-Z0-9][A-Za-z0-9+\-]*"  # capitals: CAKE, DPLM-2
    r"|[A-Za-z+\-]*[A-Za-z][0-9][A-Za-z0-9+\-]*|[0-9][A-Za-z0-9+\-]*[A-Za-z][A-Za-z0-9+\-]*)$"
)


def name_shaped(word: str) -> bool:
    """CamelCase, two capitals or more, or letters and digits: a word that looks like a name."""
    return bool(_SHAPED.match(word)) and len(word) >= 2


TITLE_SHARE, QUESTION_SHARE = 0.8, 0.6  # of a title's words said, of the question's in it
# (to ask by title: "Any papers on federated learning?" is no "...-Free Federated Learning")


def asked_titles(question: str, titles: dict[str, str]) -> list[str]:
    """The ids of `titles` (id -> title) that the question asks about by title."""
    asked, found = terms(title_text(question)), []
    for pid, title in titles.items():
        words = terms(title)
        shared = len(asked & words)
        if words and shared / len(words) >= TITLE_SHARE and shared / len(asked) >= QUESTION_SHARE:
            found.append(pid)
    return found


def named_records(
    question: str, match: NameMatch | None, titles: dict[str, str], only: bool = False
) -> list[str]:
    """The title records (id -> title in `titles`) a question names inside a longer question:
    "what does CaPo do for multi-agent cooperation" (a word of the rest is in its title), "Is
    there a paper called KAN?" (the rest only frames the name), or by a coined name that is
    the `only` one it writes.
    Retrieval has no candidates to check them against (they are not among them), so the title
    stands in."""
    ids = [pid for pid in (match.paper_ids if match else ()) if pid in titles]
    if match is None or not ids or match.whole_subject:  # the whole subject: `named_first`
        return []
    from rag.retrieval.titles import title_words  # titles.py imports people, which imports us

    frame = set(title_words(" ".join(words()["words"]["name_frame"])))
    rest = set(title_words(title_text(without_venue(question))))  # "... at iclr 2025?"
    rest -= set(title_words(match.name)) | frame
    # The only name written, and coined ("GenEx", "gamma-MoD"), is the paper's whatever the
    # rest asks; beside another name ("tldr OpenMathInstruct-2 pls") it may be a word.
    coined = only and name_shaped(match.name) and made_up(match.name)
    return [pid for pid in ids if coined or not rest or rest & set(title_words(titles[pid]))]


def title_names(title: str) -> list[str]:
    """The names a title defines: its leading name, parenthesised acronyms, a one-word title."""
    title = as_typed(unicodedata.normalize("NFKC", " ".join(title.split())))
    found: list[str] = []
    if title.endswith(("\u2026", "...")):  # an untitled seed abstract: its first words, cut short
        return found
    m = _HEAD.match(title)
    if m:
        head = m.group(1).strip()
        words = head.split()
        if len(words) == 1 and _WORD.fullmatch(head) and any(c.isalpha() for c in head):
            found.append(head)
        elif len(words) == 2 and words[0][:1].isupper() and _VERSION.fullmatch(words[1]):
            found.append(head)  # "Spider 2.0", "SAM 2"
        elif 1 < len(words) <= 3 and any(name_shaped(w) for w in words):
            # "TetSphere Splatting", "The 3D-PC", "OSDA Agent": the head, and its name.
            found.append(head)
            found += head_parts(title)
        elif (
            1 < len(words) <= 3
            and all(w[:1].isupper() for w in words)
            and words[0].casefold() not in STOPWORDS
        ):
            # A head of two or three capitalised words names its method, as a short title
            # does: "Block Diffusion: Interpolating ...", "Generative Verifiers: ..."; not a
            # phrase ("The Ramanujan Library - ...").
            found.append(head)
    found += [a for a in _PARENS.findall(title) if name_shaped(a)]
    if _WORD.fullmatch(title) and name_shaped(title):
        found.append(title)
    words = title.split()
    # A short capitalised title names its method: "Differential Transformer".
    if not m and 2 <= len(words) <= 3 and all(w[:1].isupper() for w in words):
        found.append(title)
    return list(dict.fromkeys(found))


def head_parts(title: str) -> list[str]:
    """The name-shaped words of a head of two or three words ("TetSphere Splatting: ..."):
    names of the paper only when it coined them (`MAX_PART_USERS`)."""
    m = _HEAD.match(as_typed(unicodedata.normalize("NFKC", " ".join(title.split()))))
    words = m.group(1).split() if m else []
    if not 1 < len(words) <= 3 or (len(words) == 2 and _VERSION.fullmatch(words[1])):
        return []
    return [w for w in words if name_shaped(w) and len(w) >= 3]


def abstract_names(papers: list[Paper]) -> list[tuple[str, str]]:
    """(paper id, name): a name its abstract defines (`_own_names`) and no other paper writes."""
    exact: Counter[str] = Counter()
    folded: Counter[str] = Counter()
    for paper in papers:
        written = set(_WORD.findall(f"{paper.title} {paper.abstract}"))
        exact.update(written)
        folded.update({_fold(w) for w in written})

    def unique(word: str) -> bool:
        return (exact[word] if ordinary(word) else folded[_fold(word)]) == 1

    return [(p.id, w) for p in papers for w in sorted(_own_names(p.abstract)) if unique(w)]


def _own_names(abstract: str) -> set[str]:
    """CamelCase words an abstract writes twice ("SCoRe ... SCoRe") or defines once ("Neurons
    (*AKOrN*)"), and capitals it coins (REPA); a title record's, none."""
    uses = Counter(_WORD.findall(abstract))
    defined = {w for w in _PARENS.findall(abstract.replace("*", "")) if w in uses}
    named = {w for w, n in uses.items() if n >= ABSTRACT_USES} | defined
    return {w for w in named if _defined_name(w)} | {w for w in coined(abstract) if w in uses}


def _defined_name(word: str) -> bool:  # capitals alone may be a term's abbreviation: INT4
    return len(word) >= 3 and _CAMEL.search(word) is not None and not word[:1].isdigit()


@dataclass(frozen=True)
class NameMatch:
    name: str  # as the title writes it
    paper_ids: tuple[str, ...]  # the papers it names (almost always one)
    whole_subject: bool  # the question asks about the name alone ("What is X?")


@dataclass
class NameIndex:
    """Folded name -> the papers whose titles define it, and the name as written there."""

    papers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, papers: Iterable[Paper], term_counts: dict[str, int] | None = None) -> NameIndex:
        """The names of `papers`' titles; `term_counts` (content term -> chunks containing it,
        the keyword index's) drops the names too many papers use ("DNNs")."""
        papers = list(papers)
        defined: dict[str, list[str]] = {}
        written: dict[str, str] = {}
        parts: set[str] = set()  # a word of a longer head ("kNN"): the paper's if coined
        for paper in papers:
            parts |= {_fold(w) for w in head_parts(paper.title)}
            for name in title_names(paper.title):
                key = _fold(name)
                if paper.id not in defined.setdefault(key, []):
                    defined[key].append(paper.id)
                written.setdefault(key, name)
        for pid, name in abstract_names(papers):
            key = _fold(name)
            if key not in defined:  # a title's name comes first
                defined[key], written[key] = [pid], name
        counts = term_counts or {}

        def suspect(key: str) -> bool:
            """Its term is in many chunks (a stemmed term may be another word's: SIMPL), or
            an acronym that spells a word ("Speculative RAG" defines "RAG")."""
            found = terms(written[key])
            term = next(iter(found), "")
            acronym = sum(c.isupper() for c in written[key]) >= 2
            if len(found) != 1 or (ordinary(written[key]) and not acronym):
                return False  # an ordinary word is matched as written, not by its use
            return counts.get(term, 0) - len(defined[key]) >= MAX_PAPERS_USING

        suspects = [k for k in defined if k in parts or suspect(k)]
        usage: Counter[str] = Counter()
        # Papers writing a suspect name, any case; an acronym that spells a word as written.
        find = {
            k: re.compile(rf"(?<![A-Za-z0-9]){re.escape(written[k])}(?![A-Za-z0-9])")
            if ordinary(written[k])
            else re.compile(rf"(?<![A-Za-z0-9]){re.escape(k)}(?![A-Za-z0-9])", re.I)
            for k in suspects
        }
        for paper in papers:  # its text made once; most suspects are not in it at all
            text = f"{paper.title} {paper.abstract}"
            lower = text.lower()
            usage.update(k for k in suspects if k in lower and find[k].search(text))
        keep = {
            k: tuple(ids)
            for k, ids in defined.items()
            if k not in STOPWORDS
            and k not in VENUES
            and len(k) >= 2
            and usage[k] - len(ids) < (MAX_PART_USERS if k in parts else MAX_PAPERS_USING)
        }
        return cls(keep, {k: written[k] for k in keep})

    def __len__(self) -> int:
        return len(self.papers)

    def match(self, question: str) -> NameMatch | None:
        """The name the question asks about, when it names one of the indexed papers."""
        found = self.matches(question)
        return found[0] if found else None

    def matches(self, question: str) -> list[NameMatch]:
        """Every name of an indexed paper the question writes, its whole subject first ("What
        is KAN?"), then in the order written ("tldr OpenMathInstruct-2 pls" writes TLDR, a
        paper's name too, before the one it asks about)."""
        text = as_typed(unicodedata.normalize("NFKC", question))  # "γ-MoD", "gamma-MoD"
        found: dict[str, NameMatch] = {}
        # "What is KAN?", or the name alone ("KAN"): the question's whole subject.
        about = subject(text) or text.strip(" \t?.!。？！\"'")
        if about and _fold(about) in self.papers:
            key = _fold(about)
            found[key] = NameMatch(self.written[key], self.papers[key], True)
        words = _WORD.findall(text)
        # Inside a Chinese sentence a Latin word written as the title writes it is a name
        # ("Century针对的是什么问题").
        chinese = any("\u4e00" <= c <= "\u9fff" for c in text)
        for i in range(len(words)):
            for size in (3, 2, 1):  # at each word the longest name ("TetSphere Splatting")
                seen = " ".join(words[i : i + size])
                key = _fold(seen)
                if size == 1 and key not in self.written:  # "sam2", "llama3": "SAM 2"
                    key = re.sub(r"(?<=[a-z])(?=\d)", " ", key)
                name = self.written.get(key)
                paper = [w.casefold() for w in words[i + size : i + size + 1]] == ["paper"]
                if name and self._written_as_name(seen, name, chinese, paper):
                    found.setdefault(key, NameMatch(name, self.papers[key], False))
                    break
        return list(found.values())

    @staticmethod
    def _written_as_name(seen: str, name: str, chinese: bool = False, paper: bool = False) -> bool:
        """Any case for a name that is no English word; an ordinary word only as the title
        writes it, with two capitals or more ("CAKE", not "cake" or "Drama"), or with one
        inside a Chinese question, or in any case just before "paper" ("the kan paper", "the
        drama paper": a paper called so, not a cake or a play)."""
        if not ordinary(name) or paper:
            return True
        return seen == name and (chinese or sum(c.isupper() for c in name) >= 2)

    def unknown_name(self, question: str, known_terms: dict[str, int]) -> str | None:
        """The name a "What is X?" question asks about when X looks like a method name, no
        paper is called X, and no indexed text contains it (`known_terms`: term -> chunks)."""
        about = subject(question)
        if not about or " " in about or not name_shaped(about) or _fold(about) in self.papers:
            return None
        if any(known_terms.get(t) for t in terms(about)):
            return None
        return about

    def closest(self, name: str, n: int = 3) -> list[str]:
        """The indexed names nearest to `name` in spelling (difflib), best first."""
        keys = difflib.get_close_matches(_fold(name), list(self.papers), n=n, cutoff=0.5)
        return [self.written[k] for k in keys]


def _checked_names(saved: object) -> NameIndex | None:
    """The saved name index when it is of the shape `build` makes, else None."""
    papers, written = (
        (saved.get("papers"), saved.get("written")) if isinstance(saved, dict) else 2 * (None,)
    )
    if (
        not (isinstance(papers, dict) and isinstance(written, dict))
        or papers.keys() != written.keys()
    ):
        return None
    if not all(isinstance(v, str) for v in written.values()) or not all(
        isinstance(ids, list) and ids and all(isinstance(i, str) for i in ids)
        for ids in papers.values()
    ):
        return None
    return NameIndex({k: tuple(ids) for k, ids in papers.items()}, dict(written))


def _fold(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).split()).casefold()


def named_first(
    ranked: Sequence[str], match: NameMatch | None, fused: dict[str, float]
) -> tuple[list[str], dict[str, float]]:
    """`ranked` (paper ids, best first) with the named papers first, each scored just above
    the best. A question that is the name alone ("What is FlexPrefill?") gets its paper even when
    retrieval missed it; a name written inside a longer question ("How does CAKE allocate
    ...?") lifts its paper only when retrieval found it among its candidates, so a name used
    for something else ("the BIRD text-to-SQL benchmark") does not bring in an unrelated paper.
    """
    if match is None:
        return list(ranked), fused
    lead = [pid for pid in match.paper_ids if match.whole_subject or pid in fused]
    if not lead:
        return list(ranked), fused
    return scored_first(lead, ranked, fused)


def scored_first(
    lead: Sequence[str], ranked: Sequence[str], fused: dict[str, float]
) -> tuple[list[str], dict[str, float]]:
    """`lead` in its order, then the rest of `ranked`; each of `lead` scored just above the
    best, so the fused list keeps them on top (a named paper, a person's papers)."""
    top = max(fused.values(), default=0.0)
    scores = dict(fused)
    for i, pid in enumerate(lead):
        scores[pid] = top + 1e-3 * (len(lead) - i)
    chosen = set(lead)
    return list(lead) + [pid for pid in ranked if pid not in chosen], scores


# Bumped when NameIndex.build's rules change (saved ones rebuilt); 11: "Neurons (*AKOrN*)"
NAMES_VERSION = 11


class PaperNames:
    """The name index of a paper index, built once per index generation (re-ingest) and
    saved with the BM25 index, so a new process reads it instead of reading every title back
    from Chroma and building it again (about half a second on 2,000 papers, quiet)."""

    def __init__(self, index: PaperIndex) -> None:
        self.index = index
        self._names = SavedPerGeneration(
            index,
            "names",
            NAMES_VERSION,
            build=lambda papers, keyword: NameIndex.build(papers, keyword.term_counts),
            load=_checked_names,
            dump=lambda n: {"papers": n.papers, "written": n.written},
        )
        self._checked: set[str] = set()  # names whose papers' titles were seen to define them
        self._checked_in: NameIndex | None = None  # the name index `_checked` is about

    def current(self, keyword: KeywordIndex | None = None) -> NameIndex:
        names = self._names.current(keyword)
        if names is not self._checked_in:  # another generation: nothing checked in it yet
            self._checked_in, self._checked = names, set()
        return names

    def named(self, question: str, keyword: KeywordIndex | None = None) -> NameMatch | None:
        """The paper(s) a question names ("What is FlexPrefill?"), or None.

        A name read from the saved index is checked against the store the first time it is
        used: its papers' titles must define it, or their abstracts write it twice. A
        rewritten cache is dropped and rebuilt.
        """
        names = self.current(keyword)
        match = names.match(question)
        if match is None or match.name in self._checked:
            return match
        if self._defines(match):
            self._checked.add(match.name)
            return match
        warn(
            f"the saved name index names papers whose titles do not define {match.name!r}; "
            "it is rebuilt"
        )
        built = self._names.rebuild(keyword)
        self._checked_in, self._checked = built, set(built.written.values())
        return built.match(question)

    def named_all(self, question: str, keyword: KeywordIndex | None = None) -> list[NameMatch]:
        """Every name of a paper the question writes ("tldr Field-DiT pls": TLDR and
        Field-DiT), each checked against the store as `named` checks the first."""
        if self.named(question, keyword) is None:
            return []
        return [m for m in self.current(keyword).matches(question) if self._defines(m)]

    def naming(self, question: str, results: Sequence[RetrievedPaper]) -> NameMatch | None:
        """The name the question writes whose paper retrieval put first, or None: such a
        question ("explain bodygen in simple terms") is answered from that paper."""
        if not results or self.named(question) is None:  # named() checks the saved index
            return None
        first = results[0].paper.id
        found = self.current().matches(question)
        return next((m for m in found if first in m.paper_ids and self._defines(m)), None)

    def _defines(self, match: NameMatch) -> bool:
        if match.name in self._checked:
            return True
        papers = self.index.get_papers(list(match.paper_ids))
        return all(
            pid in papers
            and (
                _fold(match.name) in {_fold(n) for n in title_names(papers[pid].title)}
                or match.name in _own_names(papers[pid].abstract)
            )
            for pid in match.paper_ids
        )

    def unknown_name(self, question: str) -> str | None:
        """The method name a "What is X?" question asks about when no paper is called X and
        no abstract mentions it ("What is FooBarNet?"), or None."""
        keyword = self.index.keyword_index()
        return self.current(keyword).unknown_name(question, keyword.term_counts)

    def closest(self, name: str, n: int = 3) -> list[tuple[str, Paper]]:
        """The indexed names nearest in spelling to `name`, each with the paper it names."""
        names = self.current()
        found = [(close, names.papers[_fold(close)][0]) for close in names.closest(name, n)]
        papers = self.index.get_papers([pid for _, pid in found])
        return [(close, papers[pid]) for close, pid in found if pid in papers]
