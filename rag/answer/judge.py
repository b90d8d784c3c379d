"""Which retrieved papers belong in the answer: the stage between retrieval and writing.

The retriever ranks candidates; a judge decides which of them answer the question, each with a
score and a reason, and whether anything does (else the answer abstains). The writer (the
model or the extractive answerer) then writes from those papers only, and a list answer says
how many candidates were checked and how many belong, so a reader knows what was left out.

`OfflineJudge` reads the signals the index has: a paper the question names and retrieval put
first belongs, whatever the phrasing ("explain BodyGen in simple terms", "FlexPrefill 的方法
是什么？"); a list keeps the papers about its subject (`rag.answer.list_cut`); any other paper
belongs when its relevance clears the calibrated threshold. A list is judged over
`Calibration.list_pool` candidates, more than the sources setting shows (`kept`): "checked
20, 7 match".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from langchain_core.embeddings import Embeddings

from rag.answer.list_cut import listed
from rag.lang.intent import Intent
from rag.lang.intent import words as intent_words
from rag.lang.messages import message
from rag.lang.question_kind import quoted_title, titled
from rag.retrieval.names import NameMatch
from rag.retrieval.retriever import Retriever
from rag.types import MAX_COMPARED, Filters, RetrievedPaper

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
        # which papers are on web agents?"); the preamble was searched with it.
        judged_on = intent.focus or question
        scores = self.retriever.paper_relevance(judged_on, sources)
        # A list's subject is English (a Chinese list's is its gloss): judged on English
        # evidence, not on the multilingual cosine of a Chinese question
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
        if named is not None and about_it_alone(intent, named.name):
            # "How did the authors evaluate RobustKV?": that paper, not the topic around it;
            # another paper belongs only when the question names it too (retrieval says so).
            flags = tuple(n == 0 or s.asked_by == "name" for n, s in enumerate(sources))
            reasons = [NAMED if f else ABOUT_NAMED for f in flags]
        judged = tuple(
            Judged(s.paper.id, bool(f), float(score), reason)
            for s, f, score, reason in zip(sources, flags, scores, reasons, strict=True)
        )
        # A list asks for papers about its subject: the words around it ("my boss asked me to
        # find papers on model compression, can you list some?") may dilute the question.
        answers = (
            by_name
            or self.retriever.is_relevant(judged_on, sources)
            or (
                intent.listing
                and intent.subject != judged_on  # the same text was just judged
                and self.retriever.is_relevant(intent.subject, english)
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
    belong first (in their retrieved order), then the others, `k` in all; the verdict keeps
    how many were checked and how many belong."""
    order = sorted(range(len(candidates)), key=lambda i: not verdict.judged[i].belongs)[:k]
    judged = tuple(verdict.judged[i] for i in order)
    narrowed = replace(verdict, judged=judged, pool=verdict.checked, found=verdict.matched)
    return [candidates[i] for i in order], narrowed


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
    return {
        "judged_by": verdict.by,
        "checked": verdict.checked,
        "matched": verdict.matching,
        "judge_note": note,
    }
