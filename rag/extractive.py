"""The offline answerer: a cited summary made only of sentences quoted from the abstracts.

No language model and no network. The sentences of the retrieved abstracts that answer the
question best (embedding similarity, redundancy removed by MMR) are grouped by paper, most
relevant paper first, each cited `[n]`. For "summarize X" questions the top paper(s) get a
problem / method / result line each. Deterministic; the only text not quoted from an
abstract is the fixed heading, the titles and the labels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.chunking import split_sentences
from rag.lexical import lexical_scores
from rag.retrieve import RetrievedPaper
from rag.verify import LEXICAL_WEIGHT, Quote, inert_markers, spell_out

HEADING = (
    "Offline extractive summary (no language model): "
    "every sentence below is quoted from the cited abstract."
)
SUMMARY_REQUEST = re.compile(
    r"\b(?:summari[sz]e|summari[sz]ing|summary|overview|tl;?dr|gist)\b", re.IGNORECASE
)
_METHOD = re.compile(
    r"\b(?:we|this (?:paper|work)|our (?:paper|work))\b[^.;]{0,60}?"
    r"\b(?:propos|introduc|present|develop|design|build|formulat)\w*",
    re.IGNORECASE,
)
_RESULT = re.compile(
    r"\b(?:outperform|improv|achiev|surpass|state-of-the-art|sota|speed-?up|faster|reduc|"
    r"boost|gain|exceed|better|match|competitive|accura|demonstrat|show)\w*|\d+(?:\.\d+)?\s*%|"
    r"\d+(?:\.\d+)?\s*[x×]\b",
    re.IGNORECASE,
)
# Sentences that only point elsewhere answer nothing.
_NOISE = re.compile(
    r"https?://|www\.|github\.com|\b(?:code|data|models?|project page)\b[^.]{0,40}"
    r"\b(?:available|released|found)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Sentence:
    n: int  # source number
    position: int  # index of the sentence in its abstract
    text: str  # an exact slice of the abstract
    similarity: float  # cosine similarity to the question, plus shared rare terms


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    quotes: list[Quote]  # one per cited source, in order of appearance


@dataclass(frozen=True)
class ExtractiveOptions:
    max_sentences: int = 6
    max_papers: int = 3  # sentences are embedded per question: this bounds the cost
    per_paper: int = 3
    mmr_lambda: float = 0.7
    margin: float = 0.25  # drop sentences this far below the best one
    summary_papers: int = 2
    summary_margin: float = 0.05  # a second paper joins a summary if this close to the first
    min_similarity: float = -1.0  # sources below this (but the first) are not quoted


def is_summary_request(question: str) -> bool:
    return bool(SUMMARY_REQUEST.search(question))


def extractive_answer(
    question: str,
    sources: Sequence[RetrievedPaper],
    embeddings: Embeddings,
    options: ExtractiveOptions | None = None,
) -> ExtractiveAnswer:
    """Quote the sentences of `sources` (numbered from 1, best first) that answer `question`."""
    options = options or ExtractiveOptions()
    usable = [
        n
        for n, source in enumerate(sources, start=1)
        if n == 1 or source.similarity >= options.min_similarity
    ][: options.max_papers]
    candidates = _score_sentences(question, sources, usable, embeddings)
    if not candidates:
        return ExtractiveAnswer(HEADING, [])
    if is_summary_request(question):
        return _summary(sources, candidates, options)
    chosen = _select(candidates, options, lead=1)
    return _render(sources, {n: [(s, "") for s in group] for n, group in _grouped(chosen).items()})


def _score_sentences(
    question: str, sources: Sequence[RetrievedPaper], usable: list[int], embeddings: Embeddings
) -> list[tuple[Sentence, np.ndarray]]:
    found: list[tuple[int, int, str]] = []
    spelled: list[str] = []  # what is embedded: abbreviations spelled out
    for n in usable:
        abstract = sources[n - 1].paper.abstract
        texts = [abstract[s:e] for s, e in split_sentences(abstract)] or [abstract]
        for position, (text, readable) in enumerate(
            zip(texts, spell_out(abstract, texts), strict=True)
        ):
            if not _NOISE.search(text) or len(texts) == 1:
                found.append((n, position, text))
                spelled.append(readable)
    if not found:
        return []
    matrix = _normalise(embeddings.embed_documents(spelled))
    query = _normalise([embeddings.embed_query(question)])[0]
    sims = matrix @ query + LEXICAL_WEIGHT * lexical_scores(question, spelled)
    return [
        (Sentence(n, position, text, float(sim)), vector)
        for (n, position, text), sim, vector in zip(found, sims, matrix, strict=True)
    ]


def _select(
    candidates: list[tuple[Sentence, np.ndarray]], options: ExtractiveOptions, lead: int
) -> list[Sentence]:
    """MMR over sentences, starting with the best sentence of source `lead`."""
    relevance = np.array([s.similarity for s, _ in candidates])
    matrix = np.stack([v for _, v in candidates])
    best = float(relevance.max())
    leads = [i for i, (s, _) in enumerate(candidates) if s.n == lead]
    first = max(leads, key=lambda i: relevance[i]) if leads else int(relevance.argmax())
    chosen = [first]
    per_paper = {candidates[first][0].n: 1}
    while len(chosen) < options.max_sentences:
        redundancy = (matrix @ matrix[chosen].T).max(axis=1)
        value = options.mmr_lambda * relevance - (1 - options.mmr_lambda) * redundancy
        for i, (sentence, _) in enumerate(candidates):
            if (
                i in chosen
                or per_paper.get(sentence.n, 0) >= options.per_paper
                or sentence.similarity < best - options.margin
            ):
                value[i] = -np.inf
        pick = int(value.argmax())
        if not np.isfinite(value[pick]):
            break
        chosen.append(pick)
        per_paper[candidates[pick][0].n] = per_paper.get(candidates[pick][0].n, 0) + 1
    return [candidates[i][0] for i in chosen]


def _grouped(chosen: list[Sentence]) -> dict[int, list[Sentence]]:
    """By source number (retrieval rank), sentences in abstract order."""
    groups: dict[int, list[Sentence]] = {}
    for sentence in chosen:
        groups.setdefault(sentence.n, []).append(sentence)
    return {n: sorted(groups[n], key=lambda s: s.position) for n in sorted(groups)}


def _summary(
    sources: Sequence[RetrievedPaper],
    candidates: list[tuple[Sentence, np.ndarray]],
    options: ExtractiveOptions,
) -> ExtractiveAnswer:
    """Problem, method and result sentences of the top paper(s).

    "Summarize X" names X, so papers are ranked by their best sentence's match to the
    question (rare shared terms count), not by retrieval rank alone.
    """
    best: dict[int, float] = {}
    for sentence, _ in candidates:
        best[sentence.n] = max(best.get(sentence.n, -1.0), sentence.similarity)
    ranked = sorted(best, key=lambda n: (-best[n], n))
    papers = [n for n in ranked if best[n] >= best[ranked[0]] - options.summary_margin]
    papers = papers[: options.summary_papers]
    groups: dict[int, list[tuple[Sentence, str]]] = {}
    for n in papers:
        own = sorted((s for s, _ in candidates if s.n == n), key=lambda s: s.position)
        groups[n] = _problem_method_result(own)
    return _render(sources, groups)


def _problem_method_result(own: list[Sentence]) -> list[tuple[Sentence, str]]:
    if not own:
        return []
    method = next((s for s in own if _METHOD.search(s.text)), None)
    if method is None:
        method = max(own[1:] or own, key=lambda s: s.similarity)
    problem = own[0] if own[0] is not method else None
    taken = {id(method), id(problem)}
    results = [s for s in own if id(s) not in taken and s.position > method.position]
    results = [s for s in results if _RESULT.search(s.text)] or results
    # The sentence with the most result cues; the later one wins a tie (findings close).
    result = max(results, key=lambda s: (len(_RESULT.findall(s.text)), s.position), default=None)
    lines = [(problem, "Problem"), (method, "Method"), (result, "Result")]
    return [(s, label) for s, label in lines if s is not None]


def _render(
    sources: Sequence[RetrievedPaper], groups: dict[int, list[tuple[Sentence, str]]]
) -> ExtractiveAnswer:
    lines = [HEADING]
    quotes: list[Quote] = []
    for n, group in groups.items():
        if not group:
            continue
        paper = sources[n - 1].paper
        # Only the markers written here are citations; an abstract's own "[2]" is text.
        lines += ["", f"**{inert_markers(paper.title)}** [{n}]"]
        for sentence, label in group:
            prefix = f"{label}: " if label else ""
            lines.append(f"- {prefix}{inert_markers(sentence.text)} [{n}]")
        best = max((s for s, _ in group), key=lambda s: s.similarity)
        quotes.append(Quote(n, paper.id, best.text, best.similarity))
    return ExtractiveAnswer("\n".join(lines), quotes)


def _normalise(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
