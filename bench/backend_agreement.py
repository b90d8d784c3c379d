"""Do two implementations of the float32 MiniLM give the same decisions? torch against ONNX.

    .venv/bin/python -m bench.backend_agreement --index DIR [--other torch] [--json]

The default encoder must not depend on the CPU (issue 28): this machine cannot run another
instruction set, so two implementations stand in for two machines. Every question of
data/eval/ (the `rag eval` sets, the named, list and ask sets) is searched on the same float32
index with the query embedded by ONNX float32 and by the other backend. Printed: the largest
difference in relevance score and in query-vector cosine, and how many decisions flip:
answered or refused, the first paper, the top-10 papers in order, and which papers a list
answer keeps (the subject test of rag.answer.judge.listed). Target: 0 flips.

For the spread between machines that int8 causes, run it with `--other onnx-int8`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rag.models.minilm import LocalEmbeddings
from rag.retrieval.retriever import open_retriever
from rag.settings import EVAL_DATA, get_settings, with_overrides

SETS = [
    "questions.jsonl",
    "named_questions.jsonl",
    "list_questions.jsonl",
    "ask_questions.jsonl",
]


def questions() -> list[str]:
    seen: dict[str, None] = {}
    for name in SETS:
        for line in (EVAL_DATA / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                seen.setdefault(str(json.loads(line)["question"]), None)
    return list(seen)


def decisions(retriever: Any, question: str) -> dict[str, Any]:
    found = retriever.search(question)
    return {
        "relevance": float(retriever.relevance(question, found)),
        "answered": bool(retriever.is_relevant(question, found)),
        "top10": [p.paper.id for p in found[:10]],
        "listed": [
            p.paper.id
            for p, score in zip(found, retriever.paper_relevance(question, found), strict=False)
            if score >= retriever.threshold
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="a float32 index")
    parser.add_argument("--other", default="torch", choices=["torch", "onnx-int8"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    settings = with_overrides(get_settings(), {"store": {"index_dir": str(args.index)}})
    onnx = LocalEmbeddings(backend="onnx")
    other = LocalEmbeddings(backend=args.other)
    # The index holds float32 vectors: an int8 query encoder reads it as the same space.
    other_view = other if args.other != "onnx-int8" else _AsFloat32(other)
    first = open_retriever(settings, onnx)
    second = open_retriever(settings, other_view)
    asked = questions()
    flips: dict[str, list[str]] = {"answered": [], "first": [], "top10": [], "listed": []}
    worst_relevance = worst_cosine = 0.0
    for question in asked:
        a, b = decisions(first, question), decisions(second, question)
        worst_relevance = max(worst_relevance, abs(a["relevance"] - b["relevance"]))
        qa, qb = np.asarray(onnx.embed_query(question)), np.asarray(other.embed_query(question))
        worst_cosine = max(worst_cosine, 1.0 - float(qa @ qb))
        if a["answered"] != b["answered"]:
            flips["answered"].append(question)
        if a["top10"][:1] != b["top10"][:1]:
            flips["first"].append(question)
        if a["top10"] != b["top10"]:
            flips["top10"].append(question)
        if a["listed"] != b["listed"]:
            flips["listed"].append(question)
    report = {
        "other": args.other,
        "questions": len(asked),
        "max_relevance_difference": worst_relevance,
        "max_query_cosine_distance": worst_cosine,
        "flips": {k: len(v) for k, v in flips.items()},
        "flipped": {k: v[:5] for k, v in flips.items() if v},
    }
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(f"onnx (float32) against {args.other}, {len(asked)} questions of data/eval/")
        print(f"  largest relevance difference: {worst_relevance:.2e}")
        print(f"  largest query-vector cosine distance: {worst_cosine:.2e}")
        for kind, questions_flipped in flips.items():
            print(f"  {kind} flips: {len(questions_flipped)}")
            for q in questions_flipped[:5]:
                print(f"    {q}")
    return 0 if not any(flips.values()) else 1


class _AsFloat32:
    """The int8 encoder presented as float32, so it can query a float32 index."""

    def __init__(self, inner: LocalEmbeddings) -> None:
        self.inner, self.name, self.precision = inner, inner.name, "float32"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


if __name__ == "__main__":
    sys.exit(main())
