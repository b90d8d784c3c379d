"""Hybrid retrieval: dense (Chroma) and BM25 ranks fused, grouped into papers, filtered."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from numbers import Integral
from typing import Literal

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.common.similarity import mmr
from rag.index.bm25 import KeywordIndex
from rag.index.multilingual import MultilingualIndex
from rag.index.papers import DenseHit, PaperIndex
from rag.lang.gloss import english_query
from rag.lang.intent import read_question, without_venue
from rag.retrieval.calibration import MINILM, Calibration, calibration_for
from rag.retrieval.names import PaperNames, asked_titles, named_first, named_records
from rag.retrieval.people import PaperPeople, lifted, person_first
from rag.retrieval.relevance import Relevance
from rag.retrieval.spelling import Spelling
from rag.retrieval.titles import PaperTitles
from rag.settings import MAX_K, RetrievalSettings, Settings
from rag.types import Filters, Paper, RetrievedPaper

Mode = Literal["hybrid", "dense", "keyword"]


@dataclass
class Retriever:
    index: PaperIndex
    embeddings: Embeddings
    settings: RetrievalSettings
    # The multilingual vector set (rag.index.multilingual), read for questions not in English.
    multilingual: MultilingualIndex | None = None
    # The fitted constants of the embedding model (fusion and the relevance decision).
    calibration: Calibration = MINILM
    # chunk id -> paper id of the keyword index it was built from (rebuilt when that changes)
    _paper_of: tuple[object, dict[str, str]] | None = field(default=None, init=False, repr=False)
    # the spelling of the keyword index's generation (rebuilt when that changes)
    _spelling: tuple[str, Spelling] | None = field(default=None, init=False, repr=False)
    # The method names of the papers' titles ("What is FlexPrefill?", rag.retrieval.names).
    names: PaperNames = field(init=False, repr=False)
    # The authors of the papers ("papers by Max Tegmark", rag.retrieval.people).
    people: PaperPeople = field(init=False, repr=False)
    # The words of the papers' titles ("deep MMD gradient flow", rag.retrieval.titles).
    titles: PaperTitles = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.names = PaperNames(self.index)
        self.people = PaperPeople(self.index)
        self.titles = PaperTitles(self.index)

    def search(
        self,
        query: str,
        k: int | None = None,
        filters: Filters | None = None,
        diverse: bool = False,
        mode: Mode = "hybrid",
        read_names: bool = True,
        with_records: int = 0,
    ) -> list[RetrievedPaper]:
        """The `k` best papers for `query`, one entry per paper, best first. `read_names`:
        off for a search the assistant wrote of papers' titles ("more like these"), where a
        name or an author's surname ("Markov") asks for no paper. `with_records`: after them, as
        many title records as their titles are closest (a list judges them by their titles)."""
        if k is None:
            k = self.settings.k
        if isinstance(k, bool) or not isinstance(k, Integral) or not 1 <= k <= MAX_K:
            raise ValueError(f"k = {k!r}: ask for 1 to {MAX_K} papers")
        filters = filters or Filters()
        original = self.spelled(query.strip())  # "difusion models": the word meant
        query = english_query(without_venue(original))  # "at ICLR 2025" names every paper
        if not query:
            return []
        fetch = self.settings.fetch_k
        # Title records (no abstract in the corpus) are found by their name, title or authors
        # below, never by their title's words among abstracts: left out of the candidates.
        records = self.people.current().titles
        vector = self.embeddings.embed_query(query)
        dense = self.index.dense_search(
            vector, fetch * (2 if records else 1), filters.tiers or None
        )
        closest = dense[0] if dense else None  # records included: a described record
        near = [hit for hit in dense if hit.paper_id in records]
        dense = [hit for hit in dense if hit.paper_id not in records][:fetch]
        similarity: dict[str, float] = {}
        dense_ranks: dict[str, int] = {}
        for hit in dense:
            if hit.paper_id not in similarity:
                dense_ranks[hit.paper_id] = len(dense_ranks)
                similarity[hit.paper_id] = hit.similarity
        keyword_ranks: dict[str, int] = {}
        keyword_scores: dict[str, float] = {}
        keyword: KeywordIndex | None = None
        if mode != "dense":
            keyword = self.index.keyword_index()
            depth = fetch * (4 if filters.tiers or filters.keywords else 1)
            lookup = self._chunk_papers(keyword)
            for chunk_id, score in keyword.search(query, depth):
                pid = lookup[chunk_id]
                if pid not in keyword_ranks:
                    keyword_ranks[pid] = len(keyword_ranks)
                    keyword_scores[pid] = score
        if mode == "keyword":
            dense_ranks = {}
        fused = self._fuse(dense_ranks, keyword_ranks, similarity, keyword_scores)
        crosslingual: dict[str, float] = {}
        if mode == "hybrid" and query != original:
            fused, crosslingual = self._add_multilingual(
                original, fused, fetch, filters.tiers or None, records
            )
        crosslingual_floor = min(crosslingual.values(), default=0.0)
        ranked = sorted(fused, key=lambda pid: -fused[pid])
        asked_by: dict[str, str] = {}  # why a paper leads, carried to the answer stage
        if mode == "hybrid" and read_names:  # a question that names a method: its paper first
            match = self.names.named(original, keyword)
            if match is not None:  # a name two papers define: the one with an abstract first
                ids = sorted(match.paper_ids, key=lambda pid: pid in records)
                match = replace(match, paper_ids=tuple(ids))
            ranked, fused = named_first(ranked, match, fused)
            # A title record named inside a longer question, by any name it writes.
            named = self.names.named_all(original, keyword) if match is not None else []
            alone = len(named) == 1
            ids = [pid for m in named for pid in named_records(original, m, records, alone)]
            ranked, fused = lifted(ranked, list(dict.fromkeys(ids)), fused)
            # Every candidate a name of the question names (the judge keeps them together).
            written = [
                *(match.paper_ids if match else ()),
                *(p for m in named for p in m.paper_ids),
            ]
            asked_by |= dict.fromkeys((p for p in written if p in ranked), "name")
            # A question that names an author: all their papers first.
            asked = read_question(original)
            person = self.people.named(original, asked.people, keyword)
            ranked, fused = person_first(ranked, person, fused)
            if person is not None:  # a paper the question also names stays named by it
                asked_by |= {p: "author" for p in person.paper_ids if p not in asked_by}
            # A title record asked by its title ("Interpreting the Second-Order Effects of
            # Neurons in CLIP") or by its title's words (its head, its subtitle, a run of it:
            # "deep MMD gradient flow"), not in a list question: first.
            titled = [] if asked.listing else asked_titles(original, records)
            said = person.written if person is not None else ""  # a person's words
            if not asked.listing and not titled:
                found = self.titles.asked(original, keyword, said)
                titled = [pid for pid in found if pid in records]
            elif asked.listing:  # a list that writes a record's whole title out names it
                found = self.titles.asked(original, keyword, said)
                titled = [p for p in found if self.titles.writes(original, p, keyword)]
            if asked.one_paper and not titled and match is None and closest is not None:
                titled = described(closest, dense, records)
            # A title quoted ('explain "Not All Heads Matter"'), of any paper: first.
            quoted = [] if asked.listing else self.titles.quoted(original, keyword, match is None)
            titled = quoted + [pid for pid in titled if pid not in quoted]
            ranked, fused = lifted(ranked, titled, fused)
            asked_by |= dict.fromkeys(titled, "title")
            # The first paper, when the question writes its whole title out ("who wrote
            # 'Scaling and evaluating sparse autoencoders'?"): asked for by its title.
            if (
                ranked
                and ranked[0] not in asked_by
                and self.titles.writes(original, ranked[0], keyword)
            ):
                asked_by[ranked[0]] = "title"
        floor = min(similarity.values(), default=0.0)
        results: list[RetrievedPaper] = []
        wanted = k * 4 if diverse else k
        # Read only the papers needed, more when a filter may drop some.
        step = max(wanted, 20) if filters.tiers or filters.keywords else wanted
        for start in range(0, len(ranked), step):
            ids = ranked[start : start + step]
            papers = self.index.get_papers(ids)
            for pid in ids:
                paper = papers.get(pid)
                if paper is None or not filters.accepts(paper):
                    continue
                results.append(
                    RetrievedPaper(
                        paper=paper,
                        score=fused[pid],
                        similarity=similarity.get(pid, floor),
                        dense_rank=dense_ranks.get(pid),
                        keyword_rank=keyword_ranks.get(pid),
                        multilingual=crosslingual.get(pid, crosslingual_floor)
                        if crosslingual
                        else None,
                        asked_by=asked_by.get(pid, ""),
                    )
                )
            if len(results) >= wanted:
                break
        if diverse:
            return self._mmr(results, k)
        shown = {r.paper.id for r in results[:k]}
        return results[:k] + (self._titled(near, with_records, filters, shown) if shown else [])

    def _titled(
        self, hits: list[DenseHit], n: int, filters: Filters, shown: set[str]
    ) -> list[RetrievedPaper]:
        """The `n` title records of the dense `hits` (best first) not `shown`, as candidates."""
        near: dict[str, float] = {}  # a record's one chunk is its title
        for hit in hits if n > 0 else []:
            if hit.paper_id not in shown:
                near.setdefault(hit.paper_id, hit.similarity)
        papers = self.index.get_papers(list(near)) if near else {}
        found = [papers[p] for p in near if p in papers and filters.accepts(papers[p])]
        return [RetrievedPaper(p, near[p.id], near[p.id]) for p in found[:n]]

    def _chunk_papers(self, keyword: KeywordIndex) -> dict[str, str]:
        if self._paper_of is None or self._paper_of[0] is not keyword:
            self._paper_of = (keyword, dict(zip(keyword.chunk_ids, keyword.paper_ids, strict=True)))
        return self._paper_of[1]

    def _fuse(
        self,
        dense_ranks: dict[str, int],
        keyword_ranks: dict[str, int],
        similarity: dict[str, float],
        keyword_scores: dict[str, float],
    ) -> dict[str, float]:
        """RRF over the two rank lists, or w x cosine + (1 - w) x BM25 / best BM25 score.

        In the weighted form a paper that dense search missed gets the lowest cosine seen, so
        a strong exact-term match still ranks first (bench/tune_retrieval.py measured both).
        """
        w = self.calibration.dense_weight
        fused: dict[str, float] = {}
        if self.calibration.fusion == "rrf" or not (dense_ranks and keyword_ranks):
            c = self.calibration.rrf_k
            for pid, rank in dense_ranks.items():
                fused[pid] = w / (c + rank + 1)
            for pid, rank in keyword_ranks.items():
                fused[pid] = fused.get(pid, 0.0) + (1 - w) / (c + rank + 1)
            return fused
        top_keyword = max(keyword_scores.values(), default=1.0) or 1.0
        floor = min(similarity.values(), default=0.0)
        # In rank order, dense then keyword: equal scores keep that order in every process
        # (a set's order of strings changes with each process's hash seed).
        for pid in dict.fromkeys([*dense_ranks, *keyword_ranks]):
            dense_part = similarity.get(pid, floor)
            keyword_part = keyword_scores.get(pid, 0.0) / top_keyword
            fused[pid] = w * dense_part + (1 - w) * keyword_part
        return fused

    def _add_multilingual(
        self,
        question: str,
        fused: dict[str, float],
        n: int,
        tiers: list[str] | None,
        records: dict[str, str],
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Blend in the multilingual encoder's similarity of the original question.

        (1 - w) x the English route's score (read from the gloss) + w x the USE cosine; a paper
        one side missed gets that side's lowest score seen. Without the vectors (not built
        yet, or switched off) the English route alone answers.
        """
        w = self.calibration.multilingual_weight
        if self.multilingual is None or w <= 0:
            return fused, {}
        found = self.multilingual.search(question, n * (2 if records else 1), tiers)
        found = dict([(pid, s) for pid, s in found.items() if pid not in records][:n])
        if not found:
            return fused, {}
        fused_floor = min(fused.values(), default=0.0)
        use_floor = min(found.values())
        blended = {
            pid: (1 - w) * fused.get(pid, fused_floor) + w * found.get(pid, use_floor)
            for pid in dict.fromkeys([*fused, *found])  # in order, as in `_fuse`
        }
        return blended, found

    def _mmr(self, candidates: list[RetrievedPaper], k: int) -> list[RetrievedPaper]:
        """Maximal marginal relevance over paper vectors, for broad questions."""
        if len(candidates) <= k:
            return candidates
        vectors = self.index.paper_vectors([c.paper.id for c in candidates])
        matrix = np.stack([vectors[c.paper.id] for c in candidates])
        scores = np.array([c.score for c in candidates])
        relevance = (scores - scores.min()) / ((scores.max() - scores.min()) or 1.0)
        return [candidates[i] for i in mmr(matrix, relevance, k, self.settings.mmr_lambda)]

    def spelled(self, text: str) -> str:
        """`text` with each word nothing in the index holds (no abstract's chunk, title or
        author's name) as the user meant it (rag.retrieval.spelling)."""
        return self.spelling().text(text)

    def spelling(self) -> Spelling:
        """The spelling of the index's words (rag.retrieval.spelling), per generation."""
        keyword = self.index.keyword_index()
        if self._spelling is None or self._spelling[0] != keyword.generation:
            titles = self.titles.current(keyword).postings
            names = frozenset(w for key in self.people.current(keyword).keys for w in key.split())
            counts = keyword.term_counts
            spelling = Spelling(
                lambda s: counts.get(s, 0) + len(titles.get(s, ())), titles.__contains__, names
            )
            self._spelling = (keyword.generation, spelling)
        return self._spelling[1]

    @property
    def judge(self) -> Relevance:
        """The relevance decision (rag.retrieval.relevance) over this index."""
        return Relevance(self.index, self.calibration, self.settings.strictness)

    @property
    def threshold(self) -> float:
        """Relevance below which we abstain (the fitted threshold + retrieval.strictness)."""
        return self.judge.threshold

    def relevance(self, query: str, results: list[RetrievedPaper]) -> float:
        """How well the best result covers `query` (`Relevance.relevance`)."""
        return self.judge.relevance(query, results)

    def paper_relevance(self, query: str, results: list[RetrievedPaper]) -> list[float]:
        """Each result's own relevance to `query` (`Relevance.paper_relevance`)."""
        return self.judge.paper_relevance(query, results)

    def topic_relevance(self, topic: str, papers: list[Paper]) -> list[float]:
        """Each paper's relevance to `topic`, on the scale of `threshold`, from its own vector
        (a person's papers, found by name, were never searched for the topic)."""
        vectors = self.index.paper_vectors([p.id for p in papers])
        topic = english_query(topic)  # "因果发现": "causal discovery"
        query = np.asarray(self.embeddings.embed_query(topic))
        cosine = {
            pid: float(v @ query / (np.linalg.norm(v) * np.linalg.norm(query) or 1.0))
            for pid, v in vectors.items()
        }
        return self.paper_relevance(
            topic, [RetrievedPaper(p, 0.0, cosine.get(p.id, 0.0)) for p in papers]
        )

    def coverage(self, query: str, results: list[RetrievedPaper]) -> list[float]:
        """Each result's share of the question's terms (`Relevance.coverage`)."""
        return self.judge.coverage(query, results)

    def is_relevant(self, query: str, results: list[RetrievedPaper]) -> bool:
        """Whether the results answer `query` well enough to answer from them."""
        return self.judge.is_relevant(query, results)


# A record "the paper on X" describes: its title is the closest of all, by this much more than
# any abstract's chunk, and close in itself (the three such questions of the tuning sets: by
# 0.19 to 0.43; none of the 322 topical questions of data/eval holds such a phrase and a
# record closest).
DESCRIBED_MARGIN, DESCRIBED_FLOOR = 0.15, 0.5


def described(closest: DenseHit, dense: list[DenseHit], records: dict[str, str]) -> list[str]:
    """The title record a question that describes one paper means: the closest of all."""
    best_abstract = dense[0].similarity if dense else 0.0
    if (
        closest.paper_id in records
        and closest.similarity >= DESCRIBED_FLOOR
        and closest.similarity >= best_abstract + DESCRIBED_MARGIN
    ):
        return [closest.paper_id]
    return []


def open_retriever(settings: Settings, embeddings: Embeddings | None = None) -> Retriever:
    """The retriever over the configured index, with the configured embeddings."""
    from rag.models.factory import make_embeddings

    embeddings = embeddings or make_embeddings(settings.embedding)
    index = PaperIndex.open(settings, embeddings)
    return Retriever(
        index,
        embeddings,
        settings.retrieval,
        open_multilingual(settings, index),
        calibration_for(settings),
    )


def open_multilingual(settings: Settings, index: PaperIndex) -> MultilingualIndex | None:
    """The multilingual vector set beside `index`, its encoder loaded on first use."""
    if not settings.embedding.multilingual:
        return None
    from rag.models.multilingual import LazyMultilingualEmbeddings

    return MultilingualIndex(index.client, settings.store.collection, LazyMultilingualEmbeddings())
