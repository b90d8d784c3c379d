"""What the multilingual vectors add to ingest, measured in one run on the same corpus.

Builds a fresh index of the 2,105 papers plus the seeds with the English vectors only
(embedding.multilingual = false), then adds the multilingual vector set to the same index
(what `rag ingest` does after the English part), then times the first Chinese question
(the encoder, jieba and CC-CEDICT load on first use) against a warm one.

    .venv/bin/python bench/multilingual_cost.py [--workdir /tmp/rag-bench/multilingual-cost]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.settings import BUNDLED_CORPUS, get_settings, with_overrides  # noqa: E402

QUESTION = "有没有论文用离线强化学习来降低数据中心制冷系统的能耗？"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/rag-bench/multilingual-cost"))
    args = parser.parse_args(argv)

    from rag.index.ingest import build_index
    from rag.index.multilingual import build_multilingual
    from rag.index.papers import PaperIndex
    from rag.models.factory import make_embeddings
    from rag.retrieval.retriever import open_retriever

    shutil.rmtree(args.workdir, ignore_errors=True)
    settings = with_overrides(
        get_settings(),
        {"store": {"index_dir": str(args.workdir)}, "embedding": {"multilingual": False}},
    )
    embeddings = make_embeddings(settings.embedding)
    paths = [BUNDLED_CORPUS]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    report = build_index(settings, paths, embeddings=embeddings)
    english = time.perf_counter() - started
    started = time.perf_counter()
    index = PaperIndex.open(settings, embeddings)
    added = build_multilingual(index)
    multilingual = time.perf_counter() - started

    with_vectors = with_overrides(settings, {"embedding": {"multilingual": True}})
    retriever = open_retriever(with_vectors, embeddings)
    started = time.perf_counter()
    retriever.search(QUESTION)
    first = time.perf_counter() - started
    started = time.perf_counter()
    retriever.search(QUESTION)
    warm = time.perf_counter() - started
    print(f"load average at start {load:.1f}, {os.cpu_count()} cores")
    print(
        f"English ingest: {report.added} papers, {report.embedded_chunks} chunks in {english:.1f} s"
    )
    print(
        f"multilingual vectors: {added} papers in {multilingual:.1f} s "
        f"(+{100 * multilingual / english:.0f}% of the English ingest)"
    )
    print(f"first Chinese search (loads the encoder, jieba, CC-CEDICT): {first:.2f} s")
    print(f"warm Chinese search: {1000 * warm:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
