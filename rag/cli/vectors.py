"""`rag vectors build`: the shipped vectors and topic map of the bundled corpus, recomputed.

    rag vectors build                 # writes data/iclr2025/vectors-*.npz, chunks.json.gz and
                                      # topicmap.json.gz
    rag vectors map                   # only the map, from the shipped vectors
    rag vectors chunks                # only the chunk boundaries (seconds: no model runs)

Run it after changing the bundled corpus, the model, the default backend or the chunking (the
test tests/test_shipped_vectors.py says when): it embeds every chunk and paper of the bundled
corpus on this machine, then builds an index from those vectors in a temporary folder, exactly
as `rag ingest` will, and computes the map of that index.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from typing import Any

from rag.settings import BUNDLED_CORPUS, Settings, with_overrides


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    vectors = sub.add_parser(
        "vectors", parents=[common], help="the vectors shipped with the bundled corpus"
    )
    vectors.add_argument(
        "action",
        choices=["build", "map", "chunks"],
        help="build: recompute and write them all; map: only the map, from the shipped vectors; "
        "chunks: only the chunk boundaries",
    )
    vectors.set_defaults(run=run_vectors)


def run_vectors(args: argparse.Namespace, settings: Settings) -> int:
    import numpy as np

    from rag.corpus.seeds import load_corpus
    from rag.index.chunking import chunk_paper, token_counter
    from rag.index.multilingual import paper_text
    from rag.index.shipped import MULTILINGUAL_FILE, chunk_file, chunk_key, multilingual_key
    from rag.index.shipped_chunks import PLAN_FILE, make_plan
    from rag.models.minilm import LocalEmbeddings, load_tokenizer
    from rag.models.multilingual import MultilingualEmbeddings

    backend = settings.embedding.backend
    if args.action == "map":
        build_map(settings, LocalEmbeddings(backend=backend))
        return 0
    papers = load_corpus([BUNDLED_CORPUS]).papers
    count = token_counter(load_tokenizer())
    plan = make_plan(settings, papers, count)
    plan.save()
    print(f"  wrote {PLAN_FILE} ({len(plan.spans)} papers)", file=sys.stderr)
    if args.action == "chunks":
        return 0
    texts = sorted(
        {
            c.text
            for p in papers
            for c in chunk_paper(
                p, count, settings.chunking.max_tokens, settings.chunking.overlap_sentences
            )
        }
    )
    started = time.perf_counter()
    print(f"embedding {len(texts)} chunks with MiniLM ({backend})", file=sys.stderr)
    encoder = LocalEmbeddings(batch_size=settings.embedding.batch_size, backend=backend)
    vectors = np.asarray(encoder.embed_documents(texts), dtype=np.float32)
    _save(chunk_key(settings, backend), texts, vectors, chunk_file(backend))
    print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr)

    started = time.perf_counter()
    titles = sorted({paper_text(p) for p in papers})
    print(f"embedding {len(titles)} papers with the multilingual encoder", file=sys.stderr)
    multilingual = np.asarray(MultilingualEmbeddings().embed_documents(titles), np.float32)
    _save(multilingual_key(), titles, multilingual, MULTILINGUAL_FILE)
    print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr)

    started = time.perf_counter()
    print("building an index from them, and its topic map", file=sys.stderr)
    build_map(settings, encoder)
    print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


def _save(key: dict[str, Any], texts: list[str], vectors: Any, path: Any) -> None:
    import numpy as np

    from rag.index.shipped import StoredVectors, text_hash

    hashes = np.array([text_hash(t) for t in texts], dtype="S32")
    StoredVectors(key, hashes, vectors.astype(np.float16)).save(path)
    print(f"  wrote {path} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)


def build_map(settings: Settings, embeddings: Any) -> None:
    """Index the bundled corpus from the shipped vectors in a temporary folder; ship its map."""
    from rag.explore.shipped_map import MAP_FILE, map_key, write_shipped_map
    from rag.explore.topicmap import SEED, compute_topic_map
    from rag.index.ingest import build_index
    from rag.index.papers import PaperIndex
    from rag.index.vectors import read_paper_vectors
    from rag.retrieval.calibration import calibration_for

    with tempfile.TemporaryDirectory(prefix="rag-vectors-") as tmp:
        local = with_overrides(
            settings,
            {
                "store": {"mode": "embedded", "index_dir": f"{tmp}/index"},
                "embedding": {"bundled_vectors": True, "multilingual": False},
            },
        )
        report = build_index(local, [BUNDLED_CORPUS], embeddings=embeddings)
        if report.embedded_chunks:
            raise RuntimeError(f"{report.embedded_chunks} chunks had no shipped vector")
        index = PaperIndex.open(local, embeddings)
        corpus = read_paper_vectors(index)
        calibration = calibration_for(local.embedding)
        topic_map = compute_topic_map(
            corpus.ids,
            corpus.vectors,
            [f"{p.title}\n{p.abstract}" for p in corpus.papers],
            calibration=calibration,
        )
        key = map_key(corpus, "tsne", SEED, calibration.layout_weight)
        write_shipped_map(topic_map, key)
        print(f"  wrote {MAP_FILE} ({MAP_FILE.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
