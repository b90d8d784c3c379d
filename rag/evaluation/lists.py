"""Precision and recall of list answers ("Which papers ...?") against gold paper sets.

Our system is the offline answer (its citations: the list stops where the relevant papers
stop); each baseline's list is its top k papers, which is what it would show. Precision =
gold papers listed / papers listed; recall = gold papers listed / min(|gold|, k). A title
record a list names is not scored: the gold sets were made over abstracts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.corpus.loaders import json_lines, read_text
from rag.errors import LoadError

LIST_DEPTHS = (5, 10)


@dataclass(frozen=True)
class ListQuestion:
    id: str
    question: str
    gold: frozenset[str]


def load_list_questions(path: Path) -> list[ListQuestion]:
    """Questions from JSONL: {"id", "question", "gold_ids": [paper id, ...], ...}."""
    rows = []
    for number, record in json_lines(path, read_text(path).splitlines()):
        gold = record.get("gold_ids") if isinstance(record, dict) else None
        if not isinstance(gold, list) or not gold or not isinstance(record.get("question"), str):
            raise LoadError(path, "each line needs 'question' and a non-empty 'gold_ids'", number)
        qid = str(record.get("id", number))
        rows.append(ListQuestion(qid, record["question"], frozenset(gold)))
    return rows


@dataclass
class ListScores:
    """Mean precision and recall per depth k."""

    sums: dict[int, list[float]] = field(default_factory=dict)
    n: int = 0

    def add(self, listed: dict[int, Sequence[str]], gold: frozenset[str]) -> None:
        self.n += 1
        for k, ids in listed.items():
            shown = set(ids[:k])
            hit = len(shown & gold)
            p, r = (hit / len(shown) if shown else 0.0), hit / min(len(gold), k)
            total = self.sums.setdefault(k, [0.0, 0.0])
            total[0] += p
            total[1] += r

    def precision(self, k: int) -> float:
        return self.sums.get(k, [0.0, 0.0])[0] / max(self.n, 1)

    def recall(self, k: int) -> float:
        return self.sums.get(k, [0.0, 0.0])[1] / max(self.n, 1)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n}
        for k in sorted(self.sums):
            out[f"precision_{k}"], out[f"recall_{k}"] = self.precision(k), self.recall(k)
        return out


# A system's list for one question at depth k: paper ids, best first.
Lister = Callable[[str, int], Sequence[str]]


def score_lists(lister: Lister, questions: Sequence[ListQuestion]) -> ListScores:
    scores = ListScores()
    for q in questions:
        scores.add({k: lister(q.question, k) for k in LIST_DEPTHS}, q.gold)
    return scores


def answer_lister(settings: Any, embeddings: Any, retriever: Any) -> Lister:
    """The offline answer's citations (the app's list, cut where relevance stops), less the
    title records it names: the gold sets were made over abstracts, which records lack
    (`bench.list_precision --gold read` scores them against a reader's judgement)."""
    from rag.answer.pipeline import Assistant, answer

    assistant = Assistant(settings, retriever, None, embeddings)

    def run(question: str, k: int) -> list[str]:
        cited = answer(question, assistant=assistant, k=k).citations
        return [c.paper_id for c in cited if c.has_abstract]

    return run


def format_lists(results: Sequence[tuple[str, ListScores]], source: str) -> list[str]:
    n = results[0][1].n if results else 0
    lines = [
        "",
        f"list questions ({n} from {source}): precision and recall of the papers listed",
        f"{'system':<10}" + "".join(f"{f'P@{k}':>7}{f'R@{k}':>7}" for k in LIST_DEPTHS),
    ]
    for name, s in results:
        lines.append(
            f"{name:<10}"
            + "".join(f"{100 * s.precision(k):>7.1f}{100 * s.recall(k):>7.1f}" for k in LIST_DEPTHS)
        )
    return lines
