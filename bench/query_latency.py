"""Warm search latency (query embedding + dense + BM25 + fusion): p50 and p95.

    .venv/bin/python -m bench.query_latency [--index DIR] [--chunks 100000] [--repeat 3]

Two indexes: the real one (the 2,105 papers plus the seeds; default .rag/eval-index, built by
`rag eval`) and a synthetic one of --chunks chunks, written through the real ingest path
(`rag.index.ingest.ingest_papers`) with random unit vectors in place of the model, so it
costs seconds per 10,000 chunks, not hours. Chunk texts are random draws from the real
corpus's words, so BM25 has realistic postings. Queries are the labelled questions, embedded
by the real model at search time. Each search runs once to warm up, then --repeat times
timed. Also printed: the share of each step, and the time of a bare 384x384 float32 matrix
product for scale.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

import rag.index.ingest
from rag.cli.main import EVAL_CORPUS
from rag.cli.main import EVAL_QUESTIONS as QUESTIONS
from rag.corpus.loaders import load_papers
from rag.errors import IndexMissingError
from rag.evaluation.metrics import load_questions
from rag.index.ingest import build_index, ingest_papers
from rag.index.papers import PaperIndex
from rag.models.factory import make_embeddings
from rag.retrieval.retriever import Retriever
from rag.settings import BUNDLED_PAPERS, Settings, get_settings, with_overrides
from rag.types import Paper

ROOT = Path(__file__).resolve().parents[1]


class RandomEmbeddings(Embeddings):
    """Random unit vectors under the real model's name (so the index opens with the real one)."""

    def __init__(self, name: str, dim: int = 384, seed: int = 0) -> None:
        self.name = name
        self.dim = dim
        self.rng = np.random.default_rng(seed)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        v = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return (v / np.linalg.norm(v, axis=1, keepdims=True)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def synthetic_papers(n_chunks: int, vocabulary: list[str], seed: int = 0) -> list[Paper]:
    """Papers of three 100-word sentences: two chunks each at 256 tokens with 1 overlap."""
    rng = random.Random(seed)
    papers = []
    for i in range((n_chunks + 1) // 2):
        sentences = [" ".join(rng.choices(vocabulary, k=100)) + "." for _ in range(3)]
        abstract = " ".join(s[0].upper() + s[1:] for s in sentences)
        title = " ".join(rng.choices(vocabulary, k=8))
        papers.append(Paper(id=f"syn{i:06d}", title=title, abstract=abstract, decision="Poster"))
    return papers


def word_count(texts: Any) -> list[int]:
    return [len(t.split()) for t in texts]


def timed_searches(
    retriever: Retriever, queries: list[str], repeat: int
) -> tuple[list[float], dict[str, float]]:
    """Milliseconds per warm search, and the mean milliseconds of each step."""
    for q in queries:
        retriever.search(q)
    times: list[float] = []
    steps = {"embed": 0.0, "dense": 0.0, "bm25": 0.0}
    embeddings, index = retriever.embeddings, retriever.index
    for _ in range(repeat):
        for q in queries:
            t0 = time.perf_counter()
            retriever.search(q)
            times.append(1000 * (time.perf_counter() - t0))
    # The steps alone, for where the time goes.
    for q in queries:
        t0 = time.perf_counter()
        vector = embeddings.embed_query(q)
        t1 = time.perf_counter()
        index.dense_search(vector, retriever.settings.fetch_k)
        t2 = time.perf_counter()
        index.keyword_index().search(q, retriever.settings.fetch_k)
        t3 = time.perf_counter()
        steps["embed"] += 1000 * (t1 - t0) / len(queries)
        steps["dense"] += 1000 * (t2 - t1) / len(queries)
        steps["bm25"] += 1000 * (t3 - t2) / len(queries)
    return times, steps


def percentile(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values), p))


def report(
    name: str, chunks: int, times: list[float], steps: dict[str, float], target: float
) -> str:
    p50, p95 = percentile(times, 50), percentile(times, 95)
    parts = ", ".join(f"{k} {v:.1f}" for k, v in steps.items())
    rest = statistics.mean(times) - sum(steps.values())
    verdict = "meets" if p50 <= target else "MISSES"
    return (
        f"{name:<28}{chunks:>8} chunks  p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  "
        f"(target p50 <= {target:.0f} ms: {verdict}; mean ms: {parts}, fusion+papers {rest:.1f})"
    )


def matmul_ms() -> float:
    a = np.random.default_rng(0).standard_normal((384, 384), dtype=np.float32)
    for _ in range(10):
        a @ a
    t0 = time.perf_counter()
    for _ in range(200):
        a @ a
    return 1000 * (time.perf_counter() - t0) / 200


def open_real_index(settings: Settings, embeddings: Embeddings) -> PaperIndex:
    try:
        return PaperIndex.open(settings, embeddings)
    except IndexMissingError:
        print(f"building {settings.store.index_dir} (once)", file=sys.stderr)
        build_index(settings, list(EVAL_CORPUS), embeddings=embeddings)
        return PaperIndex.open(settings, embeddings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=ROOT / ".rag" / "eval-index")
    parser.add_argument("--config", help="a config file or preset")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--synthetic-dir", type=Path, help="keep the synthetic index here")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    settings = with_overrides(get_settings(args.config), {"store": {"index_dir": str(args.index)}})
    embeddings = make_embeddings(settings.embedding)
    queries = [q.question for q in load_questions(QUESTIONS)]
    print(
        f"{len(queries)} queries x {args.repeat}, warm; {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}; 384x384 matmul {matmul_ms():.3f} ms; "
        f"embedding {settings.embedding.backend}, fetch_k {settings.retrieval.fetch_k}"
    )
    real = open_real_index(settings, embeddings)
    retriever = Retriever(real, embeddings, settings.retrieval)
    times, steps = timed_searches(retriever, queries, args.repeat)
    results = {"real": (real.stats()["chunks"], times, steps)}
    print(report(f"{real.stats()['papers']} papers", results["real"][0], times, steps, 30))

    with tempfile.TemporaryDirectory(prefix="rag-synthetic-") as tmp:
        folder = args.synthetic_dir or Path(tmp)
        syn_settings = with_overrides(settings, {"store": {"index_dir": str(folder)}})
        fake = RandomEmbeddings(getattr(embeddings, "name", "all-MiniLM-L6-v2"))
        index = PaperIndex.open(syn_settings, fake, create=True)
        words = {
            w.strip(".,;:()").lower()
            for p in load_papers([BUNDLED_PAPERS])
            for w in p.abstract.split()
        }
        vocabulary = sorted(words - {""})
        papers = synthetic_papers(args.chunks, vocabulary)
        rag.index.ingest.PAPERS_PER_BATCH = 2500  # fewer, larger writes: this index is throwaway
        started = time.perf_counter()
        ingest = ingest_papers(index, papers, word_count)
        built = time.perf_counter() - started
        synthetic = PaperIndex.open(syn_settings, embeddings)
        retriever = Retriever(synthetic, embeddings, settings.retrieval)
        syn_times, syn_steps = timed_searches(retriever, queries, args.repeat)
        results["synthetic"] = (ingest.chunks, syn_times, syn_steps)
        print(
            report(f"synthetic ({built:.0f} s to write)", ingest.chunks, syn_times, syn_steps, 60)
        )
    if args.json:
        print(
            json.dumps(
                {
                    name: {
                        "chunks": chunks,
                        "p50_ms": percentile(t, 50),
                        "p95_ms": percentile(t, 95),
                        "steps_ms": s,
                    }
                    for name, (chunks, t, s) in results.items()
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
