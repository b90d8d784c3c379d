"""Questions wrapped in who asks and where they met the topic, answered or refused offline.

    python -m bench.framed_eval --index DIR [--baseline REV] [--misses]

data/eval/framed_questions.jsonl holds questions as a researcher types them around a topic
("my advisor wants me to look at graph transformers, anything good?", "i saw a talk on model
collapse, which paper was it"): 20 whose topic the corpus covers, 6 whose topic it lacks,
each split into a dev half and a held-out half (written before any was answered). For each
half: the share of the answerable ones answered, and of the others refused.
`--questions data/eval/framed_questions_late.jsonl` (64 more, 2026-12-06, by a helper who saw
no code nor result: 48 covered, 16 that no title or abstract covers, a third Chinese; splits
"dev" and "heldout"). `--baseline REV`
measures REV in the same run (bench.baseline). `--misses` prints the dev half's misses only.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

QUESTIONS = Path("data/eval/framed_questions.jsonl")


def measure(index: str | None, questions: Path = QUESTIONS) -> dict[str, Any]:
    """Per question id, whether the offline answer refused, and what it cited first."""
    os.environ["RAG_LLM__MODEL"] = "offline"
    if index:
        os.environ["RAG_STORE__INDEX_DIR"] = index
    from rag.answer.pipeline import answer, open_assistant
    from rag.settings import get_settings

    assistant = open_assistant(get_settings())
    result: dict[str, Any] = {}
    for text in questions.read_text(encoding="utf-8").splitlines():
        row = json.loads(text)
        got = answer(row["question"], assistant=assistant)
        first = got.sources[got.citations[0].n - 1].paper.title if got.citations else ""
        result[row["id"]] = {"refused": got.abstained, "first": first}
    return result


def shares(rows: list[dict[str, Any]], measured: dict[str, Any]) -> dict[str, str]:
    out = {}
    for split in ("dev", "heldout"):
        for answerable, label in ((True, "answered"), (False, "refused")):
            picked = [r for r in rows if r["split"] == split and r["answerable"] is answerable]
            right = sum(measured[r["id"]]["refused"] is not answerable for r in picked)
            out[f"{split} {label}"] = f"{right}/{len(picked)}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--index")
    parser.add_argument("--baseline", help="a git revision measured in the same run")
    parser.add_argument("--misses", action="store_true")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.out:  # a baseline's run (bench.baseline)
        args.out.write_text(json.dumps(measure(None, args.questions)), encoding="utf-8")
        return
    rows = [json.loads(t) for t in args.questions.read_text(encoding="utf-8").splitlines()]
    columns = {"this tree": measure(args.index, args.questions)}
    if args.baseline:
        from bench.baseline import measure_at

        here = str(args.questions.resolve())  # the baseline's tree may not hold the set
        columns[args.baseline] = measure_at(args.baseline, "framed_eval.py", ["--questions", here])
    figures = {name: shares(rows, measured) for name, measured in columns.items()}
    print(f"{'':24}" + "".join(f"{name:>14}" for name in figures))
    for key in figures["this tree"]:
        print(f"{key:24}" + "".join(f"{f[key]:>14}" for f in figures.values()))
    if args.misses:
        for row in rows:
            got = columns["this tree"][row["id"]]
            if row["split"] == "dev" and got["refused"] is row["answerable"]:
                print(f"MISS {row['question']!r}: refused {got['refused']}, first {got['first']!r}")


if __name__ == "__main__":
    main()
