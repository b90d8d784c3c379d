"""The labelled questions and the metrics that score a ranking against their gold snippets.

A retrieved paper is relevant when its abstract contains one of the question's gold snippets
(whitespace, quotes and case normalised), so any system's ranking can be scored, ours or a
baseline's (`rag.evaluation.evaluate` runs them).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.corpus.loaders import json_lines, read_text
from rag.errors import LoadError

# "named" / "named-zh": a method asked by its name, in English / Chinese
# (data/eval/named_questions.jsonl, bench/make_named_questions.py).
KINDS = (
    "keyword",
    "paraphrase",
    "tail",
    "multi",
    "chinese",
    "named",
    "named-zh",
    "unanswerable",
)
DEPTH = 10  # ranks scored (MRR@10, nDCG@10)


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    question: str
    gold: tuple[str, ...]
    line: int = 0

    @property
    def answerable(self) -> bool:
        return bool(self.gold)


def load_questions(path: Path) -> list[Question]:
    """Questions from JSONL: {"id", "kind", "question", "gold": [snippet, ...], ...}."""
    if not os.path.lexists(path):
        raise LoadError(path, "question file not found")
    text = read_text(path)  # a regular file of bounded size: not a FIFO, not /dev/zero
    questions: list[Question] = []
    seen: set[str] = set()
    for number, record in json_lines(path, text.splitlines()):
        if not isinstance(record, dict):
            raise LoadError(path, "each line must be a JSON object", number)
        qid, kind, question, gold = (record.get(k) for k in ("id", "kind", "question", "gold"))
        if not isinstance(question, str) or not question.strip():
            raise LoadError(path, "'question' must be non-empty text", number)
        if not isinstance(kind, str) or kind not in KINDS:
            raise LoadError(path, f"'kind' must be one of {', '.join(KINDS)}", number)
        if not isinstance(gold, list) or not all(isinstance(g, str) and g.strip() for g in gold):
            raise LoadError(path, "'gold' must be a list of non-empty snippets", number)
        if bool(gold) == (kind == "unanswerable"):
            raise LoadError(path, "'gold' must be empty exactly for unanswerable questions", number)
        qid = str(qid if qid is not None else number)
        if qid in seen:
            raise LoadError(path, f"duplicate id {qid!r}", number)
        seen.add(qid)
        questions.append(Question(qid, kind, question.strip(), tuple(gold), number))
    if not questions:
        raise LoadError(path, "no questions in this file")
    return questions


_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def normalise(text: str) -> str:
    """Whitespace collapsed, typographic quotes folded to ASCII, lower case (as labelled)."""
    return " ".join(text.split()).translate(_QUOTES).lower()


# Metrics ------------------------------------------------------------------------------


def gold_ranks(gold: Sequence[str], abstracts: Sequence[str]) -> list[int | None]:
    """For each gold snippet, the 1-based rank of the first abstract containing it, or None."""
    texts = [normalise(a) for a in abstracts]
    ranks: list[int | None] = []
    for snippet in map(normalise, gold):
        ranks.append(next((i + 1 for i, t in enumerate(texts) if snippet in t), None))
    return ranks


def relevance(gold: Sequence[str], abstracts: Sequence[str]) -> list[int]:
    """1 at each rank whose abstract contains a gold snippet not credited at a higher rank."""
    gains = [0] * len(abstracts)
    for rank in gold_ranks(gold, abstracts):
        if rank is not None:
            gains[rank - 1] = 1
    return gains


def recall_at(gold: Sequence[str], abstracts: Sequence[str], k: int) -> float:
    """Share of gold snippets found in the top `k`."""
    ranks = gold_ranks(gold, abstracts[:k])
    return sum(r is not None for r in ranks) / len(ranks) if ranks else 0.0


def reciprocal_rank(gold: Sequence[str], abstracts: Sequence[str], k: int = DEPTH) -> float:
    """1 / rank of the first relevant paper within the top `k`, else 0."""
    found = [r for r in gold_ranks(gold, abstracts[:k]) if r is not None]
    return 1.0 / min(found) if found else 0.0


def ndcg_at(gold: Sequence[str], abstracts: Sequence[str], k: int = DEPTH) -> float:
    """Binary nDCG@k, with as many ideal hits as gold snippets."""
    gains = relevance(gold, abstracts[:k])
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


@dataclass
class Scores:
    n: int = 0
    recall_1: float = 0.0
    recall_5: float = 0.0
    mrr_10: float = 0.0
    ndcg_10: float = 0.0

    def add(self, gold: Sequence[str], abstracts: Sequence[str]) -> None:
        """Fold one question into the running means."""
        values = (
            recall_at(gold, abstracts, 1),
            recall_at(gold, abstracts, 5),
            reciprocal_rank(gold, abstracts, DEPTH),
            ndcg_at(gold, abstracts, DEPTH),
        )
        self.n += 1
        for name, value in zip(("recall_1", "recall_5", "mrr_10", "ndcg_10"), values, strict=True):
            setattr(self, name, getattr(self, name) + (value - getattr(self, name)) / self.n)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Abstention:
    """Counts of abstaining (or not) on unanswerable and answerable questions."""

    refused_unanswerable: int = 0
    answered_unanswerable: int = 0
    refused_answerable: int = 0
    answered_answerable: int = 0

    def add(self, answerable: bool, abstained: bool) -> None:
        if answerable:
            self.refused_answerable += abstained
            self.answered_answerable += not abstained
        else:
            self.refused_unanswerable += abstained
            self.answered_unanswerable += not abstained

    @property
    def precision(self) -> float:
        refused = self.refused_unanswerable + self.refused_answerable
        return self.refused_unanswerable / refused if refused else 0.0

    @property
    def recall(self) -> float:
        unanswerable = self.refused_unanswerable + self.answered_unanswerable
        return self.refused_unanswerable / unanswerable if unanswerable else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def false_refusal_rate(self) -> float:
        answerable = self.refused_answerable + self.answered_answerable
        return self.refused_answerable / answerable if answerable else 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__) | {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "false_refusal_rate": self.false_refusal_rate,
        }
