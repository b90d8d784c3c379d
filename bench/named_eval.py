"""Named-method questions: R@1 of retrieval and the share of offline answers citing the paper.

    RAG_STORE__INDEX_DIR=/path/to/index python -m bench.named_eval [--questions FILE] [--json]

For each question of data/eval/named_questions.jsonl (bench/make_named_questions.py) it runs the
hybrid retriever (top 10) and the offline answer (`rag.answer.pipeline.answer`, no model), and
counts a hit when the first paper, or the first citation, is the named paper (its abstract
holds the gold snippet). English and Chinese are reported apart. Only APIs that predate the
name index are used, so the same script measures the code before and after it.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from rag.answer.pipeline import answer, open_assistant
from rag.settings import get_settings


def normalise(text: str) -> str:
    folded = text.translate(str.maketrans({"\u201c": '"', "\u201d": '"', "\u2019": "'"}))
    return " ".join(folded.split()).lower()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=Path("data/eval/named_questions.jsonl"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--misses", action="store_true", help="print the questions missed")
    args = parser.parse_args()
    os.environ.setdefault("RAG_LLM__MODEL", "offline")
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    assistant = open_assistant(get_settings())
    stats: dict[str, dict[str, int]] = {}
    started = time.perf_counter()
    for row in rows:
        lang = "zh" if row["kind"].endswith("zh") else "en"
        s = stats.setdefault(lang, {"n": 0, "r1": 0, "r5": 0, "cited_first": 0, "abstained": 0})
        gold = [normalise(g) for g in row["gold"]]

        def named(abstract: str, gold: list[str] = gold) -> bool:
            return any(g in normalise(abstract) for g in gold)

        found = assistant.retriever.search(row["question"], k=10)
        s["n"] += 1
        r1 = bool(found) and named(found[0].paper.abstract)
        s["r1"] += r1
        s["r5"] += any(named(r.paper.abstract) for r in found[:5])
        result = answer(row["question"], assistant=assistant)
        s["abstained"] += result.abstained
        first = result.citations[0] if result.citations else None
        papers = {r.paper.id: r.paper for r in result.sources}
        cited = first is not None and named(papers[first.paper_id].abstract)
        s["cited_first"] += cited
        if args.misses and not (r1 and cited):
            top = found[0].paper.title[:60] if found else "-"
            what = "abstained" if result.abstained else (first.title[:60] if first else "-")
            print(f"MISS {row['id']} {row['question']!r}: top {top!r}; cited {what!r}")
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps({"stats": stats, "seconds": seconds}, indent=2))
        return
    print(f"{'lang':<6}{'n':>5}{'R@1':>8}{'R@5':>8}{'cited 1st':>11}{'abstained':>11}")
    for lang, s in stats.items():
        n = s["n"]
        print(
            f"{lang:<6}{n:>5}{100 * s['r1'] / n:>8.1f}{100 * s['r5'] / n:>8.1f}"
            f"{100 * s['cited_first'] / n:>11.1f}{100 * s['abstained'] / n:>11.1f}"
        )
    total = sum(s["n"] for s in stats.values())
    cited = sum(s["cited_first"] for s in stats.values())
    print(f"all   {total:>5}  cited first {100 * cited / total:.1f}%  ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
