"""Topic map: layout method by measurement, map time at 2,143 and 11,600 papers.

    .venv/bin/python bench/topic_map.py --index DIR            # DIR: the 2,143-paper index
    .venv/bin/python bench/topic_map.py --index DIR --methods tsne   # without UMAP

For each layout method (openTSNE, UMAP; both with the same fixed seed, both cosine), on the
paper vectors of the index: the time of the whole map (topics, layout, c-TF-IDF labels; the
first call in this process, so imports and JIT compilation count as they would for a user)
and the trustworthiness of the layout at k = 10 (scikit-learn). Then the chosen method on
11,600 synthetic papers (the size of all ICLR 2025 submissions): real vectors with noise and
their texts, so the topics are as hard to find. Progress goes to stderr.
UMAP needs `pip install umap-learn==0.5.12` (not a dependency of the app).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag.explore.topicmap import compute_topic_map, trustworthiness  # noqa: E402
from rag.index.papers import PaperIndex  # noqa: E402
from rag.index.vectors import read_paper_vectors  # noqa: E402
from rag.models.factory import make_embeddings  # noqa: E402
from rag.settings import get_settings, with_overrides  # noqa: E402


def progress(stage: str, share: float) -> None:
    print(f"\r  {share:4.0%} {stage:<30}", end="", file=sys.stderr, flush=True)


def measure(method: str, ids: list[str], vectors: np.ndarray, texts: list[str]) -> dict:
    started, cpu = time.perf_counter(), time.process_time()
    topic_map = compute_topic_map(ids, vectors, texts, method=method, progress=progress)  # type: ignore[arg-type]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(file=sys.stderr)
    return {
        "method": method,
        "papers": len(ids),
        "seconds": seconds,
        "cpu": cpu,
        "topics": len(topic_map.topic_list),
        "map": topic_map,
    }


def synthetic(vectors: np.ndarray, texts: list[str], n: int, seed: int = 0):
    """`n` papers near the real ones: a real vector plus noise of about its own spread."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(vectors), n)
    noise = rng.normal(0, 0.02, (n, vectors.shape[1])).astype(np.float32)
    fake = vectors[picks] + noise
    fake /= np.linalg.norm(fake, axis=1, keepdims=True)
    return [f"synthetic-{i}" for i in range(n)], fake, [texts[j] for j in picks]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--methods", default="tsne,umap")
    parser.add_argument("--large", type=int, default=11_600, help="synthetic papers (0: skip)")
    args = parser.parse_args()
    settings = with_overrides(get_settings(), {"store": {"index_dir": str(args.index)}})
    index = PaperIndex.open(settings, make_embeddings(settings.embedding))
    corpus = read_paper_vectors(index)
    texts = [f"{p.title}\n{p.abstract}" for p in corpus.papers]
    print(f"{len(corpus.papers):,} papers, vectors {corpus.vectors.shape[1]}-d", file=sys.stderr)
    load_before = f"{os.getloadavg()[0]:.1f}"
    rows = []
    for method in args.methods.split(","):
        print(f"{method}:", file=sys.stderr)
        row = measure(method, corpus.ids, corpus.vectors, texts)
        row["trust"] = trustworthiness(corpus.vectors, row["map"].xy, k=10)
        rows.append(row)
    print(f"\nload average before: {load_before}, after: {os.getloadavg()[0]:.1f}")
    print("| method | papers | topics | map time | CPU time | trustworthiness@10 |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['method']} | {row['papers']:,} | {row['topics']} | {row['seconds']:.1f} s "
            f"| {row['cpu']:.1f} s | {row['trust']:.3f} |"
        )
    if len(rows) == 2:
        a, b = rows
        print(
            f"\n{a['method']} / {b['method']}: time {a['seconds'] / b['seconds']:.2f}x, "
            f"trustworthiness {a['trust'] - b['trust']:+.3f}"
        )
    if args.large:
        ids, fake, fake_texts = synthetic(corpus.vectors, texts, args.large)
        print(f"tsne at {args.large:,} synthetic papers:", file=sys.stderr)
        big = measure("tsne", ids, fake, fake_texts)
        ratio = big["seconds"] / rows[0]["seconds"]
        print(
            f"\ntsne at {args.large:,} synthetic papers: {big['seconds']:.1f} s "
            f"(CPU {big['cpu']:.1f} s) "
            f"({big['topics']} topics; {ratio:.1f}x the time at {len(corpus.papers):,})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
