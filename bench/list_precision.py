"""Precision and recall of offline list answers ("Which papers ...") against gold sets.

    python -m bench.list_precision --index DIR [--questions data/eval/list_questions.jsonl]

For each question, at 5 and 10 sources: precision = cited gold papers / cited papers, recall =
cited gold papers / min(|gold|, k); averaged over the questions. The answers are written twice
in the same run, with no cut (every paper above the relevance threshold, as before) and with
the configured cut (`Calibration.list_min_coverage` and `list_subject_margin`,
rag.answer.list_cut). The sweep below them computes which papers a list names from the same
parts without writing the answers (it agrees with the written answers), with a held-out
split: odd-numbered questions (the fit: the most precise pair with R@10 >= 0.80 there) |
even ones.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from rag.answer.list_cut import subject_closeness
from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.lang.gloss import english_query
from rag.lang.question_kind import list_subject
from rag.settings import get_settings

DEFAULT = Path("data/eval/list_questions.jsonl")
# (list_min_coverage, list_subject_margin); coverage 0 is no cut, margin -1 is coverage alone.
SWEEP = [(0.0, -1.0)] + [
    (cut, margin)
    for cut in (0.45, 0.6, 0.7, 0.8, 1.01)
    for margin in (-1.0, 0.05, 0.1, 0.15, 0.2, 0.3)
]
Cut = tuple[float, float]
Pair = tuple[float, float]


def score(cited: set[str], gold: set[str], k: int) -> Pair:
    hit = len(cited & gold)
    return (hit / len(cited) if cited else 0.0, hit / min(len(gold), k))


def mean(pairs: list[Pair]) -> Pair:
    n = max(1, len(pairs))
    return sum(p for p, _ in pairs) / n, sum(r for _, r in pairs) / n


def written(assistant: Assistant, rows: list[dict[str, Any]], k: int, cut: Cut) -> list[Pair]:
    """(precision, recall) per question of the offline answers, with the cut `cut`."""
    retriever = assistant.retriever
    retriever.calibration = replace(
        retriever.calibration, list_min_coverage=cut[0], list_subject_margin=cut[1]
    )
    return [
        score(
            {c.paper_id for c in answer(row["question"], assistant=assistant, k=k).citations},
            set(row["gold_ids"]),
            k,
        )
        for row in rows
    ]


def swept(assistant: Assistant, rows: list[dict[str, Any]], k: int) -> dict[Cut, list[Pair]]:
    """The papers a list names under each cut of `SWEEP`, from the parts of the cut."""
    retriever = assistant.retriever
    found: dict[Cut, list[Pair]] = {cut: [] for cut in SWEEP}
    for row in rows:
        sources = retriever.search(row["question"], k=k)
        scores = retriever.paper_relevance(row["question"], sources)
        subject = list_subject(english_query(row["question"]))
        shares = retriever.coverage(subject, sources)
        close = subject_closeness(subject, sources, assistant.sentence_embeddings)
        top = max(close, default=0.0)
        for cut, margin in SWEEP:
            cited = {
                s.paper.id
                for n, (s, rel, share, near) in enumerate(
                    zip(sources, scores, shares, close, strict=True)
                )
                if n == 0 or (rel >= retriever.threshold and (share >= cut or near >= top - margin))
            }
            found[(cut, margin)].append(score(cited, set(row["gold_ids"]), k))
    return found


def line(label: str, five: list[Pair], ten: list[Pair]) -> str:
    (p5, r5), (p10, r10) = mean(five), mean(ten)
    odd, even = mean(ten[0::2]), mean(ten[1::2])
    return (
        f"{label:<26} {p5:6.3f} {r5:6.3f} {p10:6.3f} {r10:6.3f}   "
        f"({odd[0]:.3f} {odd[1]:.3f} | {even[0]:.3f} {even[1]:.3f})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, action="append")
    args = parser.parse_args(argv)
    rows = [
        json.loads(text)
        for path in args.questions or [DEFAULT]
        for text in path.read_text(encoding="utf-8").splitlines()
        if text.strip()
    ]
    settings = get_settings(
        "offline", {"store": {"index_dir": str(args.index)}, "llm": {"model": "offline"}}
    )
    assistant = open_assistant(settings)
    c = assistant.retriever.calibration
    configured = (c.list_min_coverage, c.list_subject_margin)
    print(f"{len(rows)} list questions; (list_min_coverage, list_subject_margin) = {configured}")
    print(f"{'':<26} {'P@5':>6} {'R@5':>6} {'P@10':>6} {'R@10':>6}   (odd | even, at 10)")
    written_cuts = (("answers, no cut", (0.0, -1.0)), (f"answers, cut {configured}", configured))
    for label, cut in written_cuts:
        print(line(label, *(written(assistant, rows, k, cut) for k in (5, 10))))
    five, ten = swept(assistant, rows, 5), swept(assistant, rows, 10)
    for cut in SWEEP:
        print(line(f"sweep, cut {cut}", five[cut], ten[cut]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
