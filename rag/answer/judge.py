"""Which retrieved papers belong in the answer: the stage between retrieval and writing.

The retriever ranks candidates; a judge decides which of them answer the question, each with a
score and a reason, and whether anything does (else the answer abstains). The writer (the
model or the extractive answerer) then writes from those papers only, and a list answer says
how many candidates were checked and how many belong, so a reader knows what was left out.

`OfflineJudge` reads the signals the index has: a paper the question names and retrieval put
first belongs, whatever the phrasing ("explain BodyGen in simple terms", "FlexPrefill 的方法
是什么？"); a list keeps the papers about its subject (`listed`, below); any other paper
belongs when its relevance clears the calibrated threshold.

Where a list answer stops (`listed`, the list cut): the sources setting is a maximum, not a
quota; a list checks `Calibration.list_pool` candidates, and the `list_records` title records
closest to it (judged by their titles), and names those about its subject, up to the sources
setting (`kept`: "checked 25, 7 match"). A paper is listed when its relevance clears the
abstention threshold and it is about the list's subject
(`list_subject`: the words after "Which papers study", "Any work on", "哪些论文…" read
through the gloss), by two signals added up:

- the share of the subject's terms its title and abstract hold, each term weighted by its
  rarity and by how many of the `list_lead` leading candidates hold it (`subject_shares`):
  a term the leading papers share is the subject ("unlearning", "speculative"); one they
  lack is the question's phrasing ("make", "outputs", a gloss's extra sense "buffer"); a
  short subject's phrase ("model merging") is one more term, held where its words stand side
  by side ("fragment merging" beside "diffusion model" holds only "merging");
- how far its title or best sentence is from the best such cosine among the abstracts that
  may be listed (`subject_closeness`), times `list_closeness_weight`: a paraphrase that shares
  few terms (FlexPrefill's abstract says neither "cheaper" nor "sequences") is kept.

share - list_closeness_weight x (best closeness - its closeness) >= list_min_coverage. The
first paper is always listed. The constants are fitted by bench/list_precision.py.

A list under a filter ("oral papers on diffusion language models") weighs its subject's
terms by the papers found without the filter (`leaders`): the few orals that come first
would take "language" for phrasing (bench/list_precision.py --tiers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.answer.support import spell_out
from rag.common.similarity import (
    acronyms,
    held,
    stem,
    terms,
    unit_rows,
    word_pairs,
    written_words,
)
from rag.index.passages import sentences
from rag.lang.gloss import english_query
from rag.lang.intent import Intent
from rag.lang.intent import words as intent_words
from rag.lang.messages import message
from rag.lang.question_kind import list_subject, quoted_title, titled
from rag.retrieval.names import NameMatch
from rag.types import MAX_COMPARED, Filters, RetrievedPaper

if TYPE_CHECKING:
    from rag.index.bm25 import KeywordIndex
    from rag.index.papers import PaperIndex
    from rag.retrieval.calibration import Calibration
    from rag.retrieval.retriever import Retriever


class ListRelevance(Protocol):
    """What the cut reads from the retriever (rag.retrieval.relevance.Relevance)."""

    calibration: Calibration

    @property
    def threshold(self) -> float: ...

    def paper_relevance(self, query: str, results: list[RetrievedPaper]) -> list[float]: ...

    @property
    def index(self) -> PaperIndex: ...  # its keyword index gives the terms' rarity


def subject_closeness(
    subject: str, sources: Sequence[RetrievedPaper], embeddings: Embeddings
) -> list[float]:
    """Per source, the best cosine between `subject` and its title or one of its sentences
    (abbreviations spelled out, as the offline answer embeds them)."""
    texts: list[str] = []
    owner: list[int] = []
    for n, source in enumerate(sources):
        abstract = source.paper.abstract
        parts = sentences(abstract) or [abstract] * bool(abstract)  # a record: its title
        for text in [source.paper.shown_title, *spell_out(abstract, parts)]:
            texts.append(text)
            owner.append(n)
    if not texts:
        return []
    matrix = unit_rows(np.asarray(embeddings.embed_documents(texts), dtype=np.float32))
    query = unit_rows(np.asarray([embeddings.embed_query(subject)], dtype=np.float32))[0]
    sims = matrix @ query
    best = [-1.0] * len(sources)
    for n, sim in zip(owner, sims, strict=True):
        best[n] = max(best[n], float(sim))
    return best


def subject_shares(
    subject: str,
    sources: Sequence[RetrievedPaper],
    idf: Callable[[str], float],
    lead: int,
    leaders: Sequence[RetrievedPaper] = (),
    phrases: Sequence[str] = (),
) -> list[float]:
    """Per source, the share of the subject's terms its title and abstract hold, each term
    weighted by its rarity (`idf`) and by the share of the `lead` first sources holding it
    (of `leaders` when given: the unfiltered search's, when the sources were filtered).
    A phrase of the subject (`KeywordIndex.phrases_of`: "model merging") is one more term,
    held where the two words stand side by side in either order, as rare as its rarer word:
    "fragment merging" in a drug-design abstract holds "merging", not "model merging".
    A two-letter acronym of the table (`acronyms`: "RL", too short for a term) is one too,
    held where it is written or spelled out ("reinforcement learning"), as rare as its words:
    "spotlights on RL for LLMs" kept LLM papers with no RL in them."""
    wanted = terms(subject)
    table = intent_words()["acronyms"]
    spelled = {  # not one the subject spells in part ("KV cache": "cache" is there)
        a: word_pairs(table[a])[0]
        for a in sorted(acronyms(subject))
        if a in table and not terms(table[a]) & wanted
    }

    def holds(s: RetrievedPaper) -> set[str]:
        text = f"{s.paper.title}\n{s.paper.abstract}"
        found = held(wanted, terms(text))
        if phrases or spelled:
            pairs = set(word_pairs(text)[0])
            found |= {p for p in phrases if p in pairs or " ".join(p.split()[::-1]) in pairs}
            written = written_words(text)
            found |= {a for a, said in spelled.items() if a in written or pairs & set(said)}
        return found

    rarity = {t: idf(t) for t in wanted} | {p: max(map(idf, p.split())) for p in phrases}
    rarity |= {a: max(map(idf, terms(table[a])), default=0.0) for a in spelled}
    holding = [holds(s) for s in sources]
    leading = [holds(s) for s in leaders[:lead]] if leaders else holding[:lead]
    weight = {
        t: rarity[t] * sum(t in h for h in leading) / len(leading) if leading else 0.0
        for t in rarity
    }
    total = sum(weight.values())
    return [sum(weight[t] for t in h) / total if total else 0.0 for h in holding]


def subject_phrases(subject: str, keywords: KeywordIndex) -> list[str]:
    """The phrases of a short subject a listed paper must write as such (`subject_shares`):
    `KeywordIndex.phrases_of`, less a pair with an acronym, as often spelled out ("LLM
    unlearning": "unlearning ... for Large Language Models")."""
    capitals = {stem(w.casefold()) for w in written_words(subject) if w.isupper()}
    return [p for p in keywords.phrases_of(subject) if not capitals & set(p.split())]


def listed(
    question: str,
    sources: list[RetrievedPaper],
    relevance: ListRelevance,
    embeddings: Embeddings,
    subject: str = "",
    calibration: Calibration | None = None,
    scores: Sequence[float] | None = None,
    leaders: Sequence[RetrievedPaper] = (),
) -> tuple[bool, ...]:
    """Per source, whether a list answer to `question` names it (the first always);
    `subject`: the list's subject, read with the question's `Intent` (else read here);
    `scores`: the sources' relevance when the caller has it (else measured here);
    `leaders`: the first papers found without the filter, when the sources were filtered."""
    c = calibration or relevance.calibration
    if scores is None:
        scores = relevance.paper_relevance(question, sources)
    subject = subject or list_subject(english_query(question))
    keywords = relevance.index.keyword_index()
    phrases = subject_phrases(subject, keywords)
    shares = subject_shares(subject, sources, keywords.idf, c.list_lead, leaders, phrases)
    # Closeness (every sentence embedded) only for the papers that may be listed: the first,
    # and those relevant enough whose share of the subject could clear the bar.
    could = [
        n == 0 or (score >= relevance.threshold and share >= c.list_min_coverage)
        for n, (score, share) in enumerate(zip(scores, shares, strict=True))
    ]
    picked = [s for s, ok in zip(sources, could, strict=True) if ok]
    measured = iter(subject_closeness(subject, picked, embeddings) if picked else [])
    close = [next(measured) if ok else None for ok in could]
    top = max(  # the abstracts': a title record's few words are no bar for sentences
        (n for n, s in zip(close, sources, strict=True) if n and s.paper.has_abstract), default=0.0
    )
    return tuple(
        n == 0
        or (
            near is not None
            and share - c.list_closeness_weight * (top - near) >= c.list_min_coverage
        )
        for n, (share, near) in enumerate(zip(shares, close, strict=True))
    )


NAMED = "named in the question"
ABOUT_SUBJECT = "about the list's subject"
RELEVANT = "relevant to the question"
OFF_SUBJECT = "not about the list's subject"
NOT_RELEVANT = "below the relevance threshold"
ABOUT_NAMED = "not the paper the question asks about"


@dataclass(frozen=True)
class Judged:
    """One candidate's verdict."""

    paper_id: str
    belongs: bool
    score: float
    reason: str


@dataclass(frozen=True)
class Verdict:
    """The judge's decision over the candidates, in their retrieved order."""

    judged: tuple[Judged, ...]
    answers: bool  # anything answers the question (False: the answer abstains)
    by: str  # "offline" or the model that judged
    named: NameMatch | None = None  # the paper the question names, when retrieval put it first
    pool: int = 0  # candidates checked, when more than `judged` keeps (`kept`)
    found: int = 0  # of them, those judged to belong, when more than `judged` keeps
    refusal: str = "no_coverage"  # the refusal's sentence (rag.lang.messages) when none does

    @property
    def belongs(self) -> tuple[bool, ...]:
        return tuple(j.belongs for j in self.judged)

    @property
    def checked(self) -> int:
        return max(len(self.judged), self.pool)

    @property
    def matched(self) -> int:
        return sum(j.belongs for j in self.judged)

    @property
    def matching(self) -> int:
        """Candidates judged to belong, shown or not."""
        return max(self.matched, self.found)


class Judge(Protocol):
    """Decides which of the candidates retrieved for `intent` belong in its answer;
    `leaders`: when the candidates were filtered (a tier), the first papers found without the
    filter, which say what papers on the subject hold."""

    def judge(
        self,
        intent: Intent,
        candidates: Sequence[RetrievedPaper],
        leaders: Sequence[RetrievedPaper] = (),
    ) -> Verdict: ...


class OfflineJudge:
    """The index's own signals: the name the question gives, relevance, the list's subject."""

    def __init__(self, retriever: Retriever, embeddings: Embeddings) -> None:
        self.retriever = retriever
        self.embeddings = embeddings

    def judge(
        self,
        intent: Intent,
        candidates: Sequence[RetrievedPaper],
        leaders: Sequence[RetrievedPaper] = (),
    ) -> Verdict:
        question = intent.search
        sources = list(candidates)
        if not sources:
            return Verdict((), answers=False, by="offline")
        named = self.retriever.names.naming(question, sources)
        first = sources[0]
        if named is None and first.asked_by == "title" and first.paper.has_abstract:
            # The question writes or quotes its title ('explain "Not All Heads Matter"'): it
            # names that paper as surely as a method name does.
            named = NameMatch(first.paper.shown_title, (first.paper.id,), whole_subject=False)
        by_name = named is not None
        # A list after a preamble is judged on its own sentence ("got lost at the posters...
        # which papers are on web agents?").
        judged_on = intent.focus or question
        scores = self.retriever.paper_relevance(judged_on, sources)
        # A list's subject is English (a Chinese list's is its gloss): judged on English evidence
        english = [replace(s, multilingual=None) for s in sources]
        if intent.listing and intent.language != "en" and intent.subject:
            by_subject = self.retriever.paper_relevance(intent.subject, english)
            scores = [max(a, b) for a, b in zip(scores, by_subject, strict=True)]
        threshold = self.retriever.threshold
        if intent.listing:
            flags = listed(
                judged_on,
                sources,
                self.retriever,
                self.embeddings,
                intent.subject,
                scores=scores,
                leaders=leaders,
            )
            reasons = [ABOUT_SUBJECT if f else OFF_SUBJECT for f in flags]
        else:
            flags = tuple(score >= threshold for score in scores)
            reasons = [RELEVANT if f else NOT_RELEVANT for f in flags]
        if by_name:  # the paper the question names leads, in any phrasing
            flags = (True, *flags[1:])
            reasons[0] = NAMED
        if intent.compare and len(compared := compared_papers(sources)) >= 2:
            # "compare X with the Y paper": the papers it names or titles, and no other
            flags = tuple(n in compared for n in range(len(sources)))
            reasons = [NAMED if f else ABOUT_NAMED for f in flags]
        described = named is None and intent.asked.the_paper and flags[0]  # "the X paper"
        if described or (named is not None and about_it_alone(intent, named.name)):
            # "How did the authors evaluate RobustKV?", "the data scaling laws paper - what did
            # they find?": that paper, not the topic around it; another paper belongs only
            # when the question names it too (retrieval says so).
            flags = tuple(n == 0 or s.asked_by == "name" for n, s in enumerate(sources))
            reasons = [NAMED if f else ABOUT_NAMED for f in flags]
        judged = tuple(
            Judged(s.paper.id, bool(f), float(score), reason)
            for s, f, score, reason in zip(sources, flags, scores, reasons, strict=True)
        )
        # Whether any answers is the abstracts' to say (a title record is judged by its title);
        # a list asks about its subject: the words around it may dilute the question.
        told = [n for n, s in enumerate(sources) if s.paper.has_abstract] or range(len(sources))
        answers = (
            by_name
            or self.retriever.is_relevant(judged_on, [sources[n] for n in told])
            or (
                intent.listing
                and intent.subject != judged_on  # the same text was just judged
                and self.retriever.is_relevant(intent.subject, [english[n] for n in told])
            )
        )
        if not (by_name or first.asked_by in ("name", "title")) and (
            intent.asked.presence  # "was the X paper at ICLR 2025?": named or titled only
            or (
                (quoted := quoted_title(intent.question))
                and not titled(quoted, first.paper.title)
                and not self.retriever.titles.holds(quoted)
            )  # "what does the paper 'Attention Is All You Need' say": no title holds it
        ):
            return Verdict(judged, answers=False, by="offline", refusal="not_in_index")
        return Verdict(judged, answers=answers, by="offline", named=named)


def compared_papers(sources: Sequence[RetrievedPaper]) -> list[int]:
    """The candidates a comparison names or titles (retrieval says so), by position; as many
    as a comparison table shows."""
    return [n for n, s in enumerate(sources) if s.asked_by in ("name", "title")][:MAX_COMPARED]


def judged_on_topic(
    judge: Judge,
    retriever: Retriever,
    intent: Intent,
    k: int,
    filters: Filters,
    leaders: Sequence[RetrievedPaper] = (),
) -> tuple[list[RetrievedPaper], Verdict, str] | None:
    """A question the judge found nothing for, searched and judged again on its topic alone
    (`Intent.topic`): the words around it may have diluted it ("i saw a talk on model
    collapse, which paper was it?" -> "model collapse"). The candidates, the verdict and the
    note that says so, or None when the topic is the question or answers no better."""
    if not intent.topic or intent.topic == intent.search:
        return None
    about = replace(intent, search=intent.topic, english=intent.topic, focus=intent.topic)
    found = retriever.search(about.search, k=k, filters=filters)
    verdict = judge.judge(about, found, leaders)
    if not verdict.answers:
        return None
    note = message("topic_searched", intent.question).format(topic=intent.topic)
    return found, verdict, note


def about_it_alone(intent: Intent, name: str) -> bool:
    """A question about the paper it names, not a comparison nor a list of other papers:
    "ALLaM 用了什么数据集？", and a list whose subject is that paper's own ("Which benchmarks is
    COPER tested on?"), unlike "Which papers improve on FlexPrefill?"."""
    if intent.compare:
        return False
    if not intent.listing:
        return True
    words = intent.subject.casefold().split()
    asks_of = intent_words()["words"]["asks_of"]
    return bool(words) and words[0] in asks_of and name.casefold() in " ".join(words[1:4])


def kept(
    verdict: Verdict, candidates: Sequence[RetrievedPaper], k: int
) -> tuple[list[RetrievedPaper], Verdict]:
    """A list checked more candidates than the sources setting `k` shows: those judged to
    belong first (in their retrieved order: the title records after the abstracts), then the
    others, `k` in all; the verdict keeps how many were checked and how many belong."""
    order = sorted(range(len(candidates)), key=lambda i: not verdict.judged[i].belongs)[:k]
    judged = tuple(verdict.judged[i] for i in order)
    narrowed = replace(verdict, judged=judged, pool=verdict.checked, found=verdict.matched)
    return [candidates[i] for i in order], narrowed


def left_out(
    verdict: Verdict, candidates: Sequence[RetrievedPaper], ids: frozenset[str]
) -> tuple[list[RetrievedPaper], Verdict]:
    """ "Any other papers on X?": the list of X as judged with every candidate, less the papers
    already cited (judged without them, the rest took X's words for phrasing and a bandit paper
    was listed for "linear representations"); a refusal that says so when none is left."""
    keep = [n for n, c in enumerate(candidates) if c.paper.id not in ids]
    judged = tuple(verdict.judged[n] for n in keep)
    answers = verdict.answers and any(j.belongs for j in judged)
    named = verdict.named if verdict.named and not ids & set(verdict.named.paper_ids) else None
    refusal = verdict.refusal if answers else "no_other_papers"
    narrowed = replace(verdict, judged=judged, answers=answers, named=named, refusal=refusal)
    return [candidates[n] for n in keep], narrowed


def verdict_fields(verdict: Verdict | None, intent: Intent | None, question: str) -> dict[str, Any]:
    """The `CitedAnswer` fields that say who judged, and for a list how many papers were
    checked and how many match, in the question's language."""
    if verdict is None:
        return {}
    note = ""
    if intent is not None and intent.listing:
        note = message("judged_list", question).format(
            checked=verdict.checked, matched=verdict.matching, by=verdict.by
        )
        if verdict.matching > verdict.matched:  # more belong than the answer shows
            note += message("judged_shown", question).format(shown=verdict.matched)
        elif 0 < verdict.matching < intent.asked.number:  # "give me 5 more": 4 match
            note += message("judged_fewer", question).format(asked=intent.asked.number)
    return {
        "judged_by": verdict.by,
        "checked": verdict.checked,
        "matched": verdict.matching,
        "judge_note": note,
    }
