"""Precision and recall of offline list answers ("Which papers ...") against gold sets.

    python -m bench.list_precision --index DIR [--questions data/eval/list_questions.jsonl]

For each question, at 5 and 10 sources: precision = cited gold papers / cited papers, recall =
cited gold papers / min(|gold|, k); averaged over the questions. Printed for the configured
list margin (rag.retrieval.calibration.Calibration.list_margin), for no cut (every paper above
the relevance threshold, as before), and for a sweep of margins with a held-out split (chosen
on the odd-numbered questions, scored on the even ones).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.settings import get_settings

DEFAULT = Path("data/eval/list_questions.jsonl")
MARGINS = (0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.2, float("inf"))


def scores(assistant: Assistant, rows: list[dict[str, Any]], k: int) -> list[tuple[float, float]]:
    """(precision, recall) per question at `k` sources, with the assistant's calibration."""
    found = []
    for row in rows:
        gold = set(row["gold_ids"])
        result = answer(row["question"], assistant=assistant, k=k)
        cited = {c.paper_id for c in result.citations}
        hit = len(cited & gold)
        precision = hit / len(cited) if cited else 0.0
        found.append((precision, hit / min(len(gold), k)))
    return found


def mean(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    n = max(1, len(pairs))
    return sum(p for p, _ in pairs) / n, sum(r for _, r in pairs) / n


def with_margin(assistant: Assistant, margin: float) -> Assistant:
    assistant.retriever.calibration = replace(assistant.retriever.calibration, list_margin=margin)
    return assistant


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, action="append")
    args = parser.parse_args(argv)
    rows = [
        json.loads(line)
        for path in args.questions or [DEFAULT]
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    settings = get_settings(
        "offline", {"store": {"index_dir": str(args.index)}, "llm": {"model": "offline"}}
    )
    assistant = open_assistant(settings)
    configured = assistant.retriever.calibration.list_margin
    print(f"{len(rows)} list questions; configured list_margin = {configured}")
    by_margin: dict[float, dict[int, list[tuple[float, float]]]] = {}
    for margin in sorted({*MARGINS, configured}):
        with_margin(assistant, margin)
        by_margin[margin] = {k: scores(assistant, rows, k) for k in (5, 10)}
    with_margin(assistant, configured)
    print("margin     P@5    R@5    P@10   R@10   (odd: P@10 R@10 | even: P@10 R@10)")
    for margin, per_k in by_margin.items():
        p5, r5 = mean(per_k[5])
        p10, r10 = mean(per_k[10])
        odd, even = mean(per_k[10][0::2]), mean(per_k[10][1::2])
        label = "no cut" if margin == float("inf") else f"{margin:.2f}"
        mark = " <- configured" if margin == configured else ""
        print(
            f"{label:<9} {p5:6.3f} {r5:6.3f} {p10:6.3f} {r10:6.3f}   "
            f"({odd[0]:.3f} {odd[1]:.3f} | {even[0]:.3f} {even[1]:.3f}){mark}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
