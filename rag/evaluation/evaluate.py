"""Score retrieval on a labelled question set: our hybrid retriever against three baselines.

    rag eval [--index DIR] [--questions FILE] [--json]

Baselines, run in the same process on the same papers: the LangChain tutorial pipeline
(RecursiveCharacterTextSplitter 1000/200 + Chroma + similarity_search, chunks de-duplicated to
papers), BM25 alone and dense alone. Every system abstains by the app's rule:
`Retriever.relevance` of its own top k below `Retriever.threshold`. The questions
and the metrics are `rag.evaluation.metrics`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from rag.evaluation.lists import ListQuestion, ListScores, answer_lister, format_lists, score_lists
from rag.evaluation.metrics import DEPTH, KINDS, Abstention, Question, Scores, normalise
from rag.lang.gloss import language
from rag.settings import Settings
from rag.types import Paper

# The tutorial's splitter settings (python.langchain.com RAG tutorial).
TUTORIAL_CHUNK_SIZE = 1000
TUTORIAL_CHUNK_OVERLAP = 200


# Systems ------------------------------------------------------------------------------


@dataclass
class Ranked:
    """One system's answer to one question: papers best first, and whether it abstains."""

    paper_ids: list[str]
    abstracts: list[str]
    abstained: bool


System = Callable[[str], Ranked]


@dataclass
class SystemReport:
    name: str
    per_kind: dict[str, Scores] = field(default_factory=dict)
    overall: Scores = field(default_factory=Scores)
    abstention: Abstention = field(default_factory=Abstention)
    # The same over the English questions only (Chinese ones, answerable or not, take the
    # gloss route and are judged on their own score).
    abstention_english: Abstention = field(default_factory=Abstention)
    # The Chinese questions alone: the answerable ones and the Chinese versions of the
    # unanswerable ones, judged on their own score (rag.retrieval.relevance).
    abstention_chinese: Abstention = field(default_factory=Abstention)
    seconds: float = 0.0
    rankings: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "per_kind": {k: s.as_dict() for k, s in self.per_kind.items()},
            "overall": self.overall.as_dict(),
            "abstention": self.abstention.as_dict(),
            "abstention_english": self.abstention_english.as_dict(),
            "abstention_chinese": self.abstention_chinese.as_dict(),
            "seconds": self.seconds,
        }


def evaluate_system(name: str, system: System, questions: Sequence[Question]) -> SystemReport:
    """Run every question through `system` and score it."""
    report = SystemReport(name)
    started = time.perf_counter()
    for q in questions:
        ranked = system(q.question)
        report.rankings[q.id] = ranked.paper_ids
        report.abstention.add(q.answerable, ranked.abstained)
        lang = language(q.question)
        if lang == "en":
            report.abstention_english.add(q.answerable, ranked.abstained)
        elif lang == "zh":
            report.abstention_chinese.add(q.answerable, ranked.abstained)
        if q.answerable:
            report.per_kind.setdefault(q.kind, Scores()).add(q.gold, ranked.abstracts)
            report.overall.add(q.gold, ranked.abstracts)
    report.seconds = time.perf_counter() - started
    report.per_kind = {k: report.per_kind[k] for k in KINDS if k in report.per_kind}
    return report


def retriever_system(retriever: Any, mode: str, threshold: float, k: int) -> System:
    """A system backed by `Retriever.search`; it abstains as the app does, on its top `k`."""

    def run(question: str) -> Ranked:
        results = retriever.search(question, k=max(DEPTH, k), mode=mode)
        # As the app: a question naming the paper found first is answered (rag.retrieval.names).
        by_name = mode == "hybrid" and retriever.names.naming(question, results) is not None
        return Ranked(
            [r.paper.id for r in results[:DEPTH]],
            [r.paper.abstract for r in results[:DEPTH]],
            not by_name and retriever.relevance(question, results[:k]) < threshold,
        )

    return run


class TutorialPipeline:
    """The LangChain RAG tutorial's retrieval, over the same papers and embedding model."""

    def __init__(self, store: Any, papers: dict[str, Paper]) -> None:
        self.store = store
        self.papers = papers

    @staticmethod
    def documents(papers: Sequence[Paper]) -> list[Any]:
        from langchain_core.documents import Document
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(
            chunk_size=TUTORIAL_CHUNK_SIZE, chunk_overlap=TUTORIAL_CHUNK_OVERLAP
        )
        docs = [
            Document(page_content=f"{p.title}\n\n{p.abstract}", metadata={"paper_id": p.id})
            for p in papers
        ]
        return splitter.split_documents(docs)

    @classmethod
    def build(
        cls, papers: Sequence[Paper], embeddings: Embeddings, directory: Path
    ) -> TutorialPipeline:
        """Split and embed everything into a fresh Chroma store in `directory`."""
        from langchain_chroma import Chroma

        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        store = Chroma.from_documents(
            cls.documents(papers),
            embeddings,
            collection_name="tutorial",
            persist_directory=str(directory),
        )
        return cls(store, {p.id: p for p in papers})

    @classmethod
    def open_or_build(
        cls, papers: Sequence[Paper], embeddings: Embeddings, directory: Path
    ) -> TutorialPipeline:
        """Reuse the store in `directory` when it was built from the same papers and model."""
        from langchain_chroma import Chroma

        from rag.models.factory import embeddings_name

        stamp = hashlib.sha256(
            json.dumps(
                [
                    embeddings_name(embeddings),
                    str(getattr(embeddings, "backend", "")),
                    TUTORIAL_CHUNK_SIZE,
                    TUTORIAL_CHUNK_OVERLAP,
                    sorted((p.id, p.content_hash) for p in papers),
                ]
            ).encode()
        ).hexdigest()
        marker = directory / "built-from.sha256"
        if marker.exists() and marker.read_text().strip() == stamp:
            store = Chroma(
                collection_name="tutorial",
                embedding_function=embeddings,
                persist_directory=str(directory),
            )
            return cls(store, {p.id: p for p in papers})
        pipeline = cls.build(papers, embeddings, directory)
        from rag.common.atomic import atomic_write

        atomic_write(marker, stamp)
        return pipeline

    def search(self, question: str, k: int = DEPTH, fetch_k: int = 50) -> list[tuple[str, float]]:
        """(paper id, cosine similarity of its best chunk), best first, at most `k` papers."""
        hits = self.store.similarity_search_with_score(question, k=fetch_k)
        seen: dict[str, float] = {}
        for doc, distance in hits:
            pid = doc.metadata["paper_id"]
            if pid not in seen:
                # Chroma's default space is squared L2; on unit vectors cos = 1 - d / 2.
                seen[pid] = 1.0 - float(distance) / 2
        return list(seen.items())[:k]

    def system(self, threshold: float, k: int, judge: Any = None) -> System:
        """Its ranking; it abstains when `judge.relevance` (the app's rule; without a judge,
        the best cosine) of its own top `k` is below `threshold`."""
        from rag.types import RetrievedPaper

        def run(question: str) -> Ranked:
            found = self.search(question)
            ids = [pid for pid, _ in found]
            if judge is None:
                relevance = max((sim for _, sim in found[:k]), default=-1.0)
            else:
                top = [RetrievedPaper(self.papers[pid], sim, sim) for pid, sim in found[:k]]
                relevance = judge.relevance(question, top)
            return Ranked(ids, [self.papers[pid].abstract for pid in ids], relevance < threshold)

        return run


# The whole evaluation -----------------------------------------------------------------


@dataclass
class EvalReport:
    questions: str
    index: str
    papers: int
    counts: dict[str, int]
    systems: list[SystemReport]
    warnings: list[str]
    threshold: float
    # List questions (rag.evaluation.lists): (system, scores), and the file they came from.
    lists: list[tuple[str, ListScores]] = field(default_factory=list)
    lists_source: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "index": self.index,
            "papers": self.papers,
            "counts": self.counts,
            "relevance_threshold": self.threshold,
            "systems": [s.as_dict() for s in self.systems],
            "warnings": self.warnings,
            "lists": {name: s.as_dict() for name, s in self.lists},
        }


def check_gold(questions: Sequence[Question], papers: Sequence[Paper]) -> list[str]:
    """Warnings for gold snippets found in no indexed abstract, or in different ones.

    A seed that is also in the corpus is one paper: two abstracts are the same paper when one
    contains the first 200 characters of the other.
    """
    texts = sorted({normalise(p.abstract) for p in papers})
    warnings = []
    for q in questions:
        for snippet in q.gold:
            found: list[str] = []
            for text in (t for t in texts if normalise(snippet) in t):
                if not any(text[:200] in other or other[:200] in text for other in found):
                    found.append(text)
            hits = len(found)
            if hits != 1:
                what = "no indexed abstract" if not hits else f"{hits} different abstracts"
                warnings.append(f"question {q.id} (line {q.line}): gold {snippet[:50]!r} in {what}")
    return warnings


def tutorial_dir(settings: Settings) -> Path:
    """The tutorial pipeline's own Chroma store, beside the index."""
    index_dir = settings.store.index_dir
    return index_dir.parent / f"{index_dir.name}-tutorial"


def run_eval(
    settings: Settings,
    questions: Sequence[Question],
    questions_name: str = "",
    embeddings: Embeddings | None = None,
    baselines: bool = True,
    progress: Callable[[str], None] | None = None,
    list_questions: Sequence[ListQuestion] = (),
    list_source: str = "",
) -> EvalReport:
    """Our retriever and the baselines on `questions`, over the index in `settings`."""
    from rag.models.factory import make_embeddings
    from rag.retrieval.retriever import open_retriever

    embeddings = embeddings or make_embeddings(settings.embedding)
    retriever = open_retriever(settings, embeddings)
    papers = retriever.index.all_papers()
    threshold = retriever.threshold
    k = settings.retrieval.k
    systems: list[tuple[str, Callable[[], System]]] = [
        ("hybrid", lambda: retriever_system(retriever, "hybrid", threshold, k))
    ]
    if baselines:
        systems += [
            (
                "tutorial",
                lambda: TutorialPipeline.open_or_build(
                    papers, embeddings, tutorial_dir(settings)
                ).system(threshold, k, judge=retriever),
            ),
            ("bm25", lambda: retriever_system(retriever, "keyword", threshold, k)),
            ("dense", lambda: retriever_system(retriever, "dense", threshold, k)),
        ]
    reports = []
    lists: list[tuple[str, ListScores]] = []
    known = {p.id for p in papers}
    # A list question whose gold names a paper outside this index cannot be scored here.
    list_questions = [q for q in list_questions if q.gold <= known]
    for name, make in systems:
        if progress:
            progress(name)
        system = make()
        reports.append(evaluate_system(name, system, questions))
        if list_questions:
            lister = (
                answer_lister(settings, embeddings, retriever)
                if name == "hybrid"
                else lambda question, k, system=system: system(question).paper_ids[:k]
            )
            lists.append((name, score_lists(lister, list_questions)))
    counts: dict[str, int] = {}
    for q in questions:
        counts[q.kind] = counts.get(q.kind, 0) + 1
    return EvalReport(
        questions=questions_name,
        index=str(settings.store.index_dir),
        papers=len(papers),
        counts={k: counts[k] for k in KINDS if k in counts},
        systems=reports,
        warnings=check_gold(questions, papers),
        threshold=threshold,
        lists=lists,
        lists_source=list_source,
    )


def format_report(report: EvalReport) -> str:
    """The tables `rag eval` prints: ranking metrics per kind, then abstention."""
    lines = [
        f"{sum(report.counts.values())} questions from {report.questions} "
        f"({', '.join(f'{k} {n}' for k, n in report.counts.items())}); "
        f"index {report.index} ({report.papers} papers)",
        "",
        f"{'kind':<13}{'n':>4}  {'system':<10}{'R@1':>7}{'R@5':>7}{'MRR@10':>8}{'nDCG@10':>9}",
    ]
    kinds = [k for k in KINDS if any(k in s.per_kind for s in report.systems)]
    for kind in [*kinds, "overall"]:
        for i, system in enumerate(report.systems):
            s = system.overall if kind == "overall" else system.per_kind.get(kind, Scores())
            head = f"{kind:<13}{s.n:>4}" if i == 0 else " " * 17
            lines.append(
                f"{head}  {system.name:<10}{100 * s.recall_1:>7.1f}{100 * s.recall_5:>7.1f}"
                f"{100 * s.mrr_10:>8.1f}{100 * s.ndcg_10:>9.1f}"
            )
    lines += [
        "",
        f"abstention (threshold {report.threshold:g} on the relevance score of the top "
        "papers); 'unanswerable' is the positive class",
        f"{'system':<10}{'questions':<11}{'precision':>10}{'recall':>8}{'F1':>7}"
        f"{'false refusals':>16}{'s/question':>12}",
    ]
    n = max(sum(report.counts.values()), 1)

    def row(name: str, questions: str, a: Abstention, seconds: str = "") -> str:
        return (
            f"{name:<10}{questions:<11}{100 * a.precision:>10.1f}{100 * a.recall:>8.1f}"
            f"{100 * a.f1:>7.1f}{100 * a.false_refusal_rate:>15.1f}%{seconds}"
        )

    for system in report.systems:
        lines.append(row(system.name, "all", system.abstention, f"{system.seconds / n:>12.3f}"))
        lines.append(row("", "English", system.abstention_english))
        chinese = system.abstention_chinese
        if chinese.refused_answerable + chinese.answered_answerable:
            lines.append(row("", "Chinese", chinese))
    if report.lists:
        lines += format_lists(report.lists, report.lists_source)
    if report.warnings:
        lines += ["", f"{len(report.warnings)} gold label warning(s):"]
        lines += [f"  {w}" for w in report.warnings[:20]]
    return "\n".join(lines)
