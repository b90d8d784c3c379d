"""Where a list answer stops: which retrieved papers a "Which papers ...?" question names.

The sources setting is a maximum, not a quota. A paper is listed when its relevance clears
the abstention threshold and it is about the list's subject (`list_subject`: the words after
"Which papers study", "Any work on", "哪些论文…" read through the gloss): its title and
abstract hold at least `Calibration.list_min_coverage` of the subject's terms, weighted by
rarity, or, for a paraphrase that shares few of them (FlexPrefill's abstract says neither
"cheaper" nor "sequences"), its title or one of its sentences is within
`Calibration.list_subject_margin` of the best such cosine among the retrieved papers. The
first paper is always listed. Both constants are fitted by bench/list_precision.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.answer.support import spell_out
from rag.common.similarity import unit_rows
from rag.index.chunking import sentences
from rag.lang.gloss import english_query
from rag.lang.question_kind import list_subject
from rag.retrieval.calibration import Calibration
from rag.types import RetrievedPaper


class ListRelevance(Protocol):
    """What the cut reads from the retriever (rag.retrieval.relevance.Relevance)."""

    calibration: Calibration

    @property
    def threshold(self) -> float: ...

    def paper_relevance(self, query: str, results: list[RetrievedPaper]) -> list[float]: ...

    def coverage(self, query: str, results: list[RetrievedPaper]) -> list[float]: ...


def subject_closeness(
    subject: str, sources: Sequence[RetrievedPaper], embeddings: Embeddings
) -> list[float]:
    """Per source, the best cosine between `subject` and its title or one of its sentences
    (abbreviations spelled out, as the offline answer embeds them)."""
    texts: list[str] = []
    owner: list[int] = []
    for n, source in enumerate(sources):
        abstract = source.paper.abstract
        parts = sentences(abstract) or [abstract]
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


def listed(
    question: str,
    sources: list[RetrievedPaper],
    relevance: ListRelevance,
    embeddings: Embeddings,
    subject: str = "",
    calibration: Calibration | None = None,
) -> tuple[bool, ...]:
    """Per source, whether a list answer to `question` names it (the first always);
    `subject`: the list's subject, read with the question's `Intent` (else read here)."""
    c = calibration or relevance.calibration
    scores = relevance.paper_relevance(question, sources)
    subject = subject or list_subject(english_query(question))
    shares = relevance.coverage(subject, sources)
    close = subject_closeness(subject, sources, embeddings) if sources else []
    top = max(close, default=0.0)
    return tuple(
        n == 0
        or (
            score >= relevance.threshold
            and (share >= c.list_min_coverage or near >= top - c.list_subject_margin)
        )
        for n, (score, share, near) in enumerate(zip(scores, shares, close, strict=True))
    )
