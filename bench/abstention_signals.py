"""Would a query-performance signal help a Chinese question's abstention? Measured, not used.

The configured relevance score (Retriever.relevance) refuses 18 of the 24 unanswerable Chinese
questions on the full corpus, short of issue 13's 20. This script adds one signal at a time
to that score, with a weight swept over both signs, and reports the best held-out result of
each at the same false-refusal budget as bench/calibrate_threshold.py (5% on the full corpus,
10% on the seeds; threshold chosen on odd-numbered questions, scored on even ones and the
other way round). The signals are the classic ones for predicting that retrieval failed:

- peak: how far the best cosine stands above the mean of the top 10 (a clear answer stands
  out), for the multilingual vectors and for the gloss's MiniLM chunks;
- spread: the standard deviation of the top 20 cosines (normalised query commitment,
  Shtok et al. 2012), for both routes;
- uncovered: the question's dictionary words none of whose senses the top 1 or top 5 papers
  contain;
- rare uncovered: the same, counting only words rare in the corpus (every sense in at most 20
  chunks), which is what an off-topic question tends to add;
- unconfirmed: words the unknown-word rule lets through because a sense shares a stem with
  some abstract's word, but whose best such word the multilingual encoder rates below 0.55
  or 0.6 against the Chinese word (电梯 "elevator" against "elevate", 法庭 "court of law"
  against "law").

    .venv/bin/python bench/abstention_signals.py [--index DIR] [--seed-index DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibrate_threshold import (  # noqa: E402
    DEFAULT_INDEX,
    SEED_INDEX,
    Scored,
    choose,
    corpus_settings,
    held_out_counts,
    read_questions,
    seed_questions,
    sweep,
)

from rag.common.lexical import _WORD, STOPWORDS, stem, terms  # noqa: E402
from rag.lang.gloss import GlossUnit, english_query, gloss_units, language  # noqa: E402
from rag.models.multilingual import shared_embeddings  # noqa: E402
from rag.retrieval.retriever import open_retriever  # noqa: E402

THRESHOLDS = [round(-1.5 + i * 0.01, 2) for i in range(351)]
WEIGHTS = [-1.0, -0.5, -0.3, -0.2, -0.1, -0.05, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0]
RARE = 20  # chunks


class Confirmer:
    """The multilingual encoder's cosine between a Chinese word and the abstracts' words that
    share a stem with one of its senses (the best of them), or None when none does."""

    def __init__(self, papers: list[Any], encoder: Any) -> None:
        self.encoder = encoder
        self.surface: dict[str, set[str]] = defaultdict(set)
        for paper in papers:
            for word in _WORD.findall(f"{paper.title}\n{paper.abstract}".lower()):
                for part in {word, *word.split("-")}:
                    if part and part not in STOPWORDS:
                        self.surface[stem(part)].add(part)
        self.vectors: dict[str, np.ndarray] = {}

    def _embed(self, texts: list[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        for text, vector in zip(new, self.encoder.embed_documents(new), strict=True):
            v = np.asarray(vector)
            self.vectors[text] = v / (np.linalg.norm(v) or 1.0)
        return np.stack([self.vectors[t] for t in texts])

    def __call__(self, unit: GlossUnit) -> float | None:
        words = sorted({w for part in _senses(unit) for w in self.surface.get(part, ())})
        if not words:
            return None
        return float((self._embed(words) @ self._embed([unit.word])[0]).max())


def _senses(unit: GlossUnit) -> set[str]:
    return {part for sense in unit.lookup for t in terms(sense) for part in {t, *t.split("-")}}


def signals(
    question: str,
    found: list[Any],
    use: list[float],
    gloss: list[float],
    counts: dict[str, int],
    confirm: Confirmer,
) -> dict[str, float]:
    """Each signal's value for one question (see the module docstring)."""
    senses = {
        u: _senses(u)
        for u in gloss_units(question)
        if u.dictionary and len(u.word) >= 2 and not u.word.isascii()
    }
    words = [u for u, parts in senses.items() if parts]
    texts = [terms(f"{r.paper.title}\n{r.paper.abstract}") for r in found]

    def uncovered(n: int, rare_only: bool = False) -> float:
        seen = set().union(*texts[:n])
        return sum(
            1
            for u in words
            if not senses[u] & seen
            and (not rare_only or max(counts.get(p, 0) for p in senses[u]) <= RARE)
        )

    out = {}
    for name, values in (("multilingual", use), ("gloss", gloss)):
        v = np.array(values or [0.0])
        out[f"{name} peak"] = float(v[0] - v[:10].mean())
        out[f"{name} spread"] = float(v[:20].std())
    for n in (1, 5):
        out[f"uncovered, top {n}"] = uncovered(n)
        out[f"rare uncovered, top {n}"] = uncovered(n, rare_only=True)
    known = [c for c in map(confirm, words) if c is not None]
    for bar in (0.55, 0.6):
        out[f"unconfirmed, below {bar}"] = sum(1 for c in known if c < bar)
    return out


def measure(index: Path, seeds: bool, questions: Path) -> tuple[list[Scored], list[dict]]:
    """The configured score and the signals of every Chinese question on one index."""
    settings = corpus_settings(index, seeds_only=seeds)
    retriever = open_retriever(settings)
    counts = retriever.index.keyword_index().term_counts
    confirm = Confirmer(retriever.index.all_papers(), shared_embeddings())
    rows = seed_questions(questions) if seeds else read_questions(questions)
    scored, values = [], []
    for row in rows:
        q = row["question"]
        if language(q) != "zh":
            continue
        found = retriever.search(q)
        multilingual = retriever.multilingual
        use = sorted((multilingual.search(q, 20) if multilingual else {}).values(), reverse=True)
        vector = retriever.embeddings.embed_query(english_query(q))
        gloss = [hit.similarity for hit in retriever.index.dense_search(vector, 20)]
        kind = str(row.get("kind", ""))
        scored.append(Scored(str(row.get("id", "")), kind, q, retriever.relevance(q, found), "zh"))
        values.append(signals(q, found, use, gloss, counts, confirm))
    return scored, values


def best(scored: list[Scored], budget: float, shift: list[float]) -> tuple[int, ...]:
    """(unanswerable refused, answerable refused), chosen on all, then held out."""
    moved = [
        Scored(s.id, s.kind, s.question, s.best + d, s.language)
        for s, d in zip(scored, shift, strict=True)
    ]
    try:
        point = choose(sweep(moved, THRESHOLDS), budget)
    except SystemExit:  # no threshold within the budget
        return (0, len(moved), 0, len(moved))
    refused = [s for s in moved if s.best < point.threshold]
    held = held_out_counts(moved, THRESHOLDS, budget)
    return (
        sum(not s.answerable for s in refused),
        sum(s.answerable for s in refused),
        held[0],
        held[1],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=DEFAULT_INDEX)
    parser.add_argument("--seed-index", type=Path, default=SEED_INDEX)
    parser.add_argument("--questions", type=Path, default=ROOT / "bench" / "questions.jsonl")
    args = parser.parse_args(argv)
    for label, index, seeds, budget in (
        ("full corpus", args.index, False, 0.05),
        ("seed corpus", args.seed_index, True, 0.10),
    ):
        scored, values = measure(index, seeds, args.questions)
        n_u = sum(not s.answerable for s in scored)
        n_a = len(scored) - n_u
        base = best(scored, budget, [0.0] * len(scored))
        print(
            f"\n{label}: {n_u} unanswerable, {n_a} answerable Chinese questions, "
            f"false refusals <= {budget:.0%}"
        )
        print(f"  {'signal':<26} weight  refused  false  held out: refused  false")
        print(
            f"  {'configured score alone':<26} {'':6}  {base[0]:>2}/{n_u:<5} {base[1]:>2}/{n_a:<3}"
            f"  {base[2]:>2}/{n_u:<16} {base[3]}/{n_a}"
        )
        for name in values[0]:
            tried = [(best(scored, budget, [w * v[name] for v in values]), w) for w in WEIGHTS]
            # most unanswerable refused held out, then fewest false refusals held out
            got, w = max(tried, key=lambda t: (t[0][2], -t[0][3], t[0][0], -t[0][1]))
            print(
                f"  {name:<26} {w:+6.2f}  {got[0]:>2}/{n_u:<5} {got[1]:>2}/{n_a:<3}"
                f"  {got[2]:>2}/{n_u:<16} {got[3]}/{n_a}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
