"""Where a list answer stops: which candidates a "Which papers ...?" question names.

The sources setting is a maximum, not a quota: a list checks `Calibration.list_pool`
candidates and names those about its subject, up to the sources setting. A paper is listed
when its relevance clears the abstention threshold and it is about the list's subject
(`list_subject`: the words after "Which papers study", "Any work on", "哪些论文…" read
through the gloss), by two signals added up:

- the share of the subject's terms its title and abstract hold, each term weighted by its
  rarity and by how many of the `list_lead` leading candidates hold it (`subject_shares`):
  a term the leading papers share is the subject ("unlearning", "speculative"); one they
  lack is the question's phrasing ("make", "outputs", a gloss's extra sense "buffer");
- how far its title or best sentence is from the best such cosine among the candidates
  that may be listed (`subject_closeness`; only theirs is measured: each of their sentences
  is embedded), times `list_closeness_weight`: a paraphrase that shares few terms
  (FlexPrefill's abstract says neither "cheaper" nor "sequences") is kept by its closeness.

share - list_closeness_weight x (best closeness - its closeness) >= list_min_coverage. The
first paper is always listed. The constants are fitted by bench/list_precision.py.

A list under a filter ("oral papers on diffusion language models") weighs its subject's
terms by the papers found without the filter (`leaders`): the few orals that come first
would take "language" for phrasing (bench/list_precision.py --tiers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.answer.support import spell_out
from rag.common.similarity import held, terms, unit_rows
from rag.index.papers import PaperIndex
from rag.index.passages import sentences
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


def subject_shares(
    subject: str,
    sources: Sequence[RetrievedPaper],
    idf: Callable[[str], float],
    lead: int,
    leaders: Sequence[RetrievedPaper] = (),
) -> list[float]:
    """Per source, the share of the subject's terms its title and abstract hold, each term
    weighted by its rarity (`idf`) and by the share of the `lead` first sources holding it
    (of `leaders` when given: the unfiltered search's, when the sources were filtered)."""
    wanted = terms(subject)

    def holds(s: RetrievedPaper) -> set[str]:
        return held(wanted, terms(f"{s.paper.title}\n{s.paper.abstract}"))

    holding = [holds(s) for s in sources]
    leading = [holds(s) for s in leaders[:lead]] if leaders else holding[:lead]
    weight = {
        t: idf(t) * sum(t in h for h in leading) / len(leading) if leading else 0.0 for t in wanted
    }
    total = sum(weight.values())
    return [sum(weight[t] for t in h) / total if total else 0.0 for h in holding]


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
    idf = relevance.index.keyword_index().idf
    shares = subject_shares(subject, sources, idf, c.list_lead, leaders)
    # Closeness (the costly part: every sentence embedded) only for the papers that may be
    # listed: the first, and those relevant enough whose share of the subject could clear
    # the bar; the best closeness among them sets it.
    could = [
        n == 0 or (score >= relevance.threshold and share >= c.list_min_coverage)
        for n, (score, share) in enumerate(zip(scores, shares, strict=True))
    ]
    picked = [s for s, ok in zip(sources, could, strict=True) if ok]
    measured = iter(subject_closeness(subject, picked, embeddings) if picked else [])
    close = [next(measured) if ok else None for ok in could]
    top = max((near for near in close if near is not None), default=0.0)
    return tuple(
        n == 0
        or (
            near is not None
            and share - c.list_closeness_weight * (top - near) >= c.list_min_coverage
        )
        for n, (share, near) in enumerate(zip(shares, close, strict=True))
    )
