"""Questions as a hurried user types them, against the same questions spelled right.

    python -m bench.typo_eval --index .rag/index [--questions data/eval/typo_questions.jsonl]
    python -m bench.typo_eval --index DIR --misses      # the dev half's misses only

data/eval/typo_questions.jsonl: 60 questions about one paper each, written by a helper who saw
no result, from papers drawn with a fixed seed (2026-12-05): typing slips, British spellings,
lower case without apostrophes, Chinese questions with mistyped English terms; each with its
`clean` twin, half held out. Per half and language: R@1 of `rag search` and how often the
offline answer cites the paper first, typed and clean, and the typed questions refused. What
typos cost is the gap between the two columns.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rag.answer.pipeline import answer, open_assistant
from rag.settings import get_settings

DEFAULT = Path("data/eval/typo_questions.jsonl")


def measure(assistant: Any, question: str, gold: set[str]) -> tuple[bool, bool, bool]:
    """(searched first, cited first, refused) for one question."""
    found = assistant.retriever.search(question, 5)
    reply = answer(question, assistant=assistant)
    first = reply.citations[0].paper_id if reply.citations else None
    return bool(found) and found[0].paper.id in gold, first in gold, not reply.citations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--questions", type=Path, default=DEFAULT)
    parser.add_argument("--misses", action="store_true", help="print the dev half's misses")
    args = parser.parse_args()
    settings = get_settings(
        "offline", {"store": {"index_dir": args.index}, "llm": {"model": "offline"}}
    )
    assistant = open_assistant(settings)
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line]
    table: dict[tuple[str, str], list[list[bool]]] = {}
    for row in rows:
        gold = set(row["gold_ids"])
        typed = measure(assistant, row["question"], gold)
        clean = measure(assistant, row["clean"], gold)
        table.setdefault((row["split"], row["lang"]), []).append([*typed, *clean])
        if args.misses and row["split"] == "dev" and not typed[1]:
            print(f"miss {row['id']}: {row['question']}  (clean cited first: {clean[1]})")
    print(f"{len(rows)} questions from {args.questions}; index {args.index}")
    print(
        f"{'half':<9}{'lang':<6}{'n':>4}  R@1 typed / clean   cited first typed / clean   refused"
    )
    for split in ("dev", "heldout"):
        for lang in ("en", "zh", "all"):
            got = [
                r for (s, g), rs in table.items() if s == split and lang in (g, "all") for r in rs
            ]
            if not got:
                continue
            n = len(got)

            def share(i: int, got: list[list[bool]] = got, n: int = n) -> float:
                return sum(r[i] for r in got) / n

            print(
                f"{split:<9}{lang:<6}{n:>4}  {share(0):>9.3f} / {share(3):.3f}"
                f"   {share(1):>15.3f} / {share(4):.3f}   {sum(r[2] for r in got):>7}"
            )


if __name__ == "__main__":
    main()
