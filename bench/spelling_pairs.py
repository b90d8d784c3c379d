"""Does a question's answer depend on how it spells a word? Pairs of questions that differ
only by a hyphen ("pre-training" / "pretraining") or an acronym's plural ("LLM" / "LLMs"):
how many of the first 10 papers retrieval finds the two share, and whether a count of papers
on the topic is the same.

    python -m bench.spelling_pairs --index DIR

Abstracts write both ways: "pre-training" 198 times and "pretraining" 121, "fine-tuning" 245
and "finetuning" 47, "multi-modal" 50 and "multimodal" 95 (of the 2,105 abstracts).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rag.answer.pipeline import answer, open_assistant
from rag.settings import get_settings

PAIRS = [
    ("papers on pre-training data selection", "papers on pretraining data selection"),
    ("any work on multi-modal hallucination?", "any work on multimodal hallucination?"),
    ("fine-tuning LLMs with few examples", "finetuning LLMs with few examples"),
    ("over-smoothing in graph neural nets", "oversmoothing in graph neural nets"),
    ("over-squashing and graph rewiring", "oversquashing and graph rewiring"),
    (
        "re-ranking for retrieval augmented generation",
        "reranking for retrieval augmented generation",
    ),
    ("non-convex optimization with SGD", "nonconvex optimization with SGD"),
    ("benchmarks for LLM agents", "benchmarks for LLMs agents"),
    ("GNN expressivity", "GNNs expressivity"),
    ("VLM safety", "VLMs safety"),
    ("hyper-parameter tuning", "hyperparameter tuning"),
    ("sub-graph matching", "subgraph matching"),
]
COUNTS = [
    ("how many papers on pre-training?", "how many papers on pretraining?"),
    ("how many papers on multi-modal models?", "how many papers on multimodal models?"),
    ("how many papers on over-smoothing?", "how many papers on oversmoothing?"),
    ("how many papers on fine-tuning?", "how many papers on finetuning?"),
    ("how many papers about LLM agents?", "how many papers about LLMs agents?"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    args = parser.parse_args(argv)
    settings = get_settings(
        "offline", {"store": {"index_dir": str(args.index)}, "llm": {"model": "offline"}}
    )
    assistant = open_assistant(settings)
    shared = 0
    for one, other in PAIRS:
        a, b = ({r.paper.id for r in assistant.retriever.search(q, k=10)} for q in (one, other))
        shared += len(a & b)
        print(f"{len(a & b):2d}/10  {one!r} / {other!r}")
    print(f"first 10 papers shared: {shared}/{10 * len(PAIRS)}")
    same = 0
    for one, other in COUNTS:
        a, b = (answer(q, assistant=assistant).answer.split()[0] for q in (one, other))
        same += a == b
        print(f"{a:>6} {b:>6}  {one!r} / {other!r}")
    print(f"counts the same: {same}/{len(COUNTS)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
