"""`rag vectors build`: the shipped vectors and topic map of the bundled corpus, recomputed.

    rag vectors build [--recompute]   # writes data/iclr2025/vectors-*.npz, chunks.json.gz and
                                      # topicmap.json.gz
    rag vectors map                   # only the map, from the shipped vectors
    rag vectors chunks                # only the chunk boundaries (seconds: no model runs)
    rag vectors sums                  # only data/iclr2025/SHA256SUMS, for the files as they are

Each action ends by writing data/iclr2025/SHA256SUMS, the SHA-256 of every shipped file, which
an ingest checks before using one (rag/index/shipped_manifest.py).

Run it after changing the bundled corpus, the model, the default backend or the chunking (the
test tests/test_shipped_vectors.py says when): it ingests the bundled corpus on this machine
into a temporary folder, keeping the shipped vectors that still match (all are embedded
again with --recompute), and ships the vectors that index stored; then
it builds an index from the shipped vectors, exactly as `rag ingest` will, and ships its map.
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
        choices=["build", "map", "chunks", "sums"],
        help="build: compute what the shipped vectors lack and write them all; map: only the "
        "map, from the shipped vectors; chunks: only the chunk boundaries; sums: only "
        "SHA256SUMS, for the files as they are",
    )
    vectors.add_argument(
        "--recompute",
        action="store_true",
        help="build: embed every text again rather than keep the shipped vectors that match",
    )
    vectors.set_defaults(run=run_vectors)


def run_vectors(args: argparse.Namespace, settings: Settings) -> int:
    from rag.index.shipped_manifest import write_sums

    if args.action != "sums":
        _write_files(args, settings)
    print(f"  wrote {write_sums()}", file=sys.stderr)
    return 0


def _write_files(args: argparse.Namespace, settings: Settings) -> None:
    from rag.corpus.seeds import load_corpus
    from rag.index.ingest import build_index
    from rag.index.papers import PaperIndex
    from rag.index.passages import token_counter
    from rag.index.shipped import MULTILINGUAL_FILE, chunk_file, chunk_key, multilingual_key
    from rag.index.shipped_chunks import PLAN_FILE, make_plan
    from rag.index.shipped_manifest import write_sums
    from rag.models.minilm import LocalEmbeddings, load_tokenizer

    backend = settings.embedding.backend
    vectors = settings.embedding.precision
    if vectors != "float32" and args.action != "chunks":
        from rag.errors import ConfigError

        raise ConfigError(
            f"embedding.backend {backend}: the shipped vectors are float32, the same on every "
            "CPU; run `rag vectors build` with the onnx (or torch) backend"
        )
    if args.action == "map":
        build_map(settings, LocalEmbeddings(backend=backend))
        return
    papers = load_corpus([BUNDLED_CORPUS]).papers
    count = token_counter(load_tokenizer())
    plan = make_plan(settings, papers, count)
    plan.save()
    write_sums()  # the build below reads the new plan, checked against its sum
    print(f"  wrote {PLAN_FILE} ({len(plan.spans)} papers)", file=sys.stderr)
    if args.action == "chunks":
        return
    # Read back from an ingest rather than embedded here, so the shipped vectors are what an
    # ingest stores. It keeps the shipped vectors whose text matches (float32 vectors do not
    # depend on the batch they were embedded in, to 1e-7) and embeds the rest: after a corpus
    # edit, only the new texts. --recompute embeds everything, as `RAG_EMBEDDING__
    # BUNDLED_VECTORS=false rag ingest` does (tests/test_shipped_vectors.py checks a sample).
    started = time.perf_counter()
    reuse = not getattr(args, "recompute", False)
    print(
        f"ingesting the bundled corpus ({backend}, "
        f"{'keeping the shipped vectors that match' if reuse else 'embedding every text'})",
        file=sys.stderr,
    )
    encoder = LocalEmbeddings(batch_size=settings.embedding.batch_size, backend=backend)
    with tempfile.TemporaryDirectory(prefix="rag-vectors-") as tmp:
        local = with_overrides(
            settings,
            {
                "store": {"mode": "embedded", "index_dir": f"{tmp}/index"},
                "embedding": {"bundled_vectors": reuse, "multilingual": True},
            },
        )
        report = build_index(local, [BUNDLED_CORPUS], embeddings=encoder)
        print(
            f"  {report.embedded_chunks} chunks and {report.multilingual_embedded} papers' "
            "multilingual vectors embedded now",
            file=sys.stderr,
        )
        index = PaperIndex.open(local, encoder)
        texts, chunk_vectors = _chunk_vectors(index)
        titles, multilingual = _multilingual_vectors(index)
    _save(chunk_key(settings, vectors), texts, chunk_vectors, chunk_file(vectors))
    _save(multilingual_key(), titles, multilingual, MULTILINGUAL_FILE)
    _save_sentences(papers, encoder, vectors, reuse)
    write_sums()  # build_map ingests from the new vectors, checked against their sums
    print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr)

    started = time.perf_counter()
    print("building an index from them, and its topic map", file=sys.stderr)
    build_map(settings, encoder)
    print(f"  {time.perf_counter() - started:.1f} s", file=sys.stderr)


def _save_sentences(papers: list[Any], encoder: Any, vectors: str, reuse: bool) -> None:
    """Ship the vectors of what the answer stage embeds of each paper (`embedded_texts`),
    keeping the shipped ones that match unless every text is to be embedded again."""
    from rag.answer.support import embedded_texts
    from rag.index.shipped import embed_with, matching, sentence_file, sentence_key

    texts = sorted({t for p in papers if p.abstract for t in embedded_texts(p)})
    path, key = sentence_file(vectors), sentence_key(vectors)
    stored = matching(path, key) if reuse else None
    found, now = embed_with(encoder, texts, stored)
    print(f"  {sum(now)} of {len(texts)} sentences embedded now", file=sys.stderr)
    _save(key, texts, found, path)


def _chunk_vectors(index: Any) -> tuple[list[str], Any]:
    """The unique chunk texts of `index` (sorted) and the vector it stored for each; a text
    two papers share keeps the vector of its first chunk id."""
    ids, _, texts = index.chunk_texts()
    text_of = dict(zip(ids, texts, strict=True))
    stored: dict[str, Any] = {}
    total = index.chunks.count()
    for offset in range(0, total, 5000):
        got = index.chunks.get(include=["embeddings"], limit=5000, offset=offset)
        stored.update(zip(got["ids"], got["embeddings"], strict=True))
    return _first_by_text(text_of, stored)


def _multilingual_vectors(index: Any) -> tuple[list[str], Any]:
    """The multilingual vectors of `index`, keyed by the text embedded (`paper_text`)."""
    from rag.index.multilingual import MultilingualIndex, paper_text
    from rag.models.multilingual import LazyMultilingualEmbeddings

    text_of = {p.id: paper_text(p) for p in index.all_papers()}
    target = MultilingualIndex(
        index.client, index.settings.store.collection, LazyMultilingualEmbeddings()
    )
    collection = target.collection()
    if collection is None:
        raise RuntimeError("the ingest built no multilingual vectors")
    got = collection.get(include=["embeddings"], limit=len(text_of) + 1)
    return _first_by_text(text_of, dict(zip(got["ids"], got["embeddings"], strict=True)))


def _first_by_text(text_of: dict[str, str], stored: dict[str, Any]) -> tuple[list[str], Any]:
    """The unique texts (sorted) and, for each, the vector of its first record id."""
    import numpy as np

    by_text: dict[str, Any] = {}
    for rid in sorted(stored):
        by_text.setdefault(text_of[rid], stored[rid])
    unique = sorted(by_text)
    return unique, np.asarray([by_text[t] for t in unique], dtype=np.float32)


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
        calibration = calibration_for(local)
        topic_map = compute_topic_map(
            corpus.ids,
            corpus.vectors,
            [f"{p.title}\n{p.abstract}" for p in corpus.papers],
            calibration=calibration,
        )
        key = map_key(corpus, "tsne", SEED, calibration.layout_weight)
        write_shipped_map(topic_map, key)
        print(f"  wrote {MAP_FILE} ({MAP_FILE.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
