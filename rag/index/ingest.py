"""Ingest: papers into the index's two collections, safe to interrupt and to run again.

Idempotent: a paper's content hash decides whether it is re-embedded, and its record is
written after its chunks, so a paper only counts as stored once all of it is; a re-run redoes
anything unfinished. Opening and reading the collections is `rag.index.papers`.

    report = build_index(settings)   # what `rag ingest` and the app's first run do
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.errors import StoreError
from rag.index.build_status import mark_built
from rag.index.disk_space import SpaceReserve, is_disk_full
from rag.index.lock import ingest_lock
from rag.index.papers import PaperIndex, paper_metadata
from rag.index.passages import TokenCounter, chunk_paper, sentences
from rag.index.shipped import (
    StoredVectors,
    chunk_vectors,
    embed_with,
    local_backend,
    multilingual_vectors,
)
from rag.index.shipped_chunks import ChunkPlan, chunk_plan
from rag.index.store import is_connection_error, store_error, write_new_or_changed
from rag.settings import Settings
from rag.types import Chunk, Paper

PAPERS_PER_BATCH = 128
# With shipped vectors a batch is mostly Chroma writes, whose cost per call dominates: 512
# papers a call wrote 2,123 papers in 2.4 s against 3.5 s at 128 (the progress bar moves
# less often, but there is little to wait for).
SHIPPED_PAPERS_PER_BATCH = 512


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0  # records of seeds now merged into a paper (rag/corpus/seeds.py)
    chunks: int = 0
    embedded_chunks: int = 0
    embedded_tokens: int = 0
    stored_chunks: int = 0  # chunks given a shipped vector (rag.index.shipped), not embedded
    seconds: float = 0.0
    multilingual_embedded: int = 0  # papers given a multilingual vector (rag.index.multilingual)
    multilingual_seconds: float = 0.0
    truncated: int = 0  # papers whose abstract was cut to MAX_ABSTRACT_CHARS when loaded
    # An index of other vectors (int8 before float32 was the default) rebuilt: what it held.
    replaced_vectors: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def build_index(
    settings: Settings,
    paths: list[Path] | None = None,
    rebuild: bool = False,
    embeddings: Embeddings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> IngestReport:
    """Load `paths` (default: the configured corpus) and ingest them into the index."""
    from rag.corpus.seeds import load_corpus
    from rag.index.passages import token_counter
    from rag.models.factory import make_embeddings
    from rag.models.minilm import load_tokenizer

    papers = load_corpus(list(paths or settings.corpus_paths())).papers
    embeddings = embeddings or make_embeddings(settings.embedding)
    counter: list[TokenCounter] = []
    counted: dict[str, int] = {}  # chunking measures each sentence more than once

    def count_tokens(texts: Sequence[str]) -> list[int]:
        # The tokenizer is loaded only when something needs chunking. The bundled MiniLM's is
        # read on its own: asking the model for it would load (or first export) the encoder
        # even when every vector is a shipped one.
        if not counter:
            if local_backend(embeddings) is not None:
                tokenizer = load_tokenizer()
            else:
                tokenizer = getattr(embeddings, "tokenizer", None) or load_tokenizer()
            counter.append(token_counter(tokenizer))
        missing = [t for t in dict.fromkeys(texts) if t not in counted]
        if missing:
            counted.update(zip(missing, counter[0](missing), strict=True))
        return [counted[t] for t in texts]

    opened = PaperIndex.open_for_rebuild if rebuild else PaperIndex.open
    index = opened(settings, embeddings, **({} if rebuild else {"create": True}))
    report = ingest_papers(
        index,
        papers,
        count_tokens,
        rebuild=rebuild,
        progress=progress,
        shipped=chunk_vectors(settings, embeddings),
        plan=chunk_plan(settings, embeddings),
    )
    if settings.embedding.multilingual:
        from rag.index.multilingual import build_multilingual

        started = time.perf_counter()
        report.multilingual_embedded = build_multilingual(
            index, rebuild=rebuild, shipped=multilingual_vectors(settings)
        )
        report.multilingual_seconds = time.perf_counter() - started
    return report


def ingest_papers(
    index: PaperIndex,
    papers: list[Paper],
    count_tokens: TokenCounter,
    rebuild: bool = False,
    progress: Callable[[int, int], None] | None = None,
    shipped: StoredVectors | None = None,
    plan: ChunkPlan | None = None,
) -> IngestReport:
    """Store `papers`: new ones added, changed ones replaced, unchanged ones left alone.

    `shipped`: the vectors of `rag.index.shipped`, used for the chunks whose text they match;
    `plan`: the chunk boundaries of `rag.index.shipped_chunks`, for the papers it holds.
    """
    started = time.perf_counter()
    report = IngestReport()
    embedded = index.settings.store.mode == "embedded"
    folder = index.settings.store.index_dir
    with ingest_lock(index.settings), SpaceReserve(folder) if embedded else nullcontext():
        try:
            if rebuild:
                index.drop()
            index.create_collections()
            if not rebuild and index.manifest().differs_only_in_vectors(index.wanted):
                # Vectors of another precision cannot be mixed in: the index is rebuilt, which
                # for the bundled corpus reads the shipped vectors (seconds).
                report.replaced_vectors = index.manifest().vectors
                index.drop()
                index.create_collections()
            index.check_manifest()
            stored = _stored_hashes(index, [p.id for p in papers])
            todo = [p for p in papers if stored.get(p.id) != p.content_hash]
            report.updated = sum(1 for p in todo if p.id in stored)
            report.added = len(todo) - report.updated
            report.unchanged = len(papers) - len(todo)
            report.truncated = sum(1 for p in papers if p.extra.get("abstract_truncated"))
            if progress:
                progress(report.unchanged, len(papers))
            # A seed indexed on its own before it was known to be a paper goes, so the
            # paper that absorbed it is not found twice.
            kept = {p.id for p in papers}
            absorbed = {s for p in papers for s in p.extra.get("seeds", [])} - kept
            merged_away = sorted(_stored_hashes(index, sorted(absorbed)))
            if todo or merged_away:
                # A crash after the chunks are written but before BM25 is rebuilt must not
                # leave BM25 looking current to the next run; the refresh clears this flag.
                index.chunks.modify(
                    metadata=index.manifest().as_metadata() | {"keyword_stale": True}
                )
            if merged_away:
                index.chunks.delete(where={"paper_id": {"$in": merged_away}})
                index.papers.delete(ids=merged_away)
                report.removed = len(merged_away)
            step = PAPERS_PER_BATCH if shipped is None else SHIPPED_PAPERS_PER_BATCH
            for i in range(0, len(todo), step):
                batch = todo[i : i + step]
                chunks, tokens, reused = _store_batch(
                    index, batch, count_tokens, stored, shipped, plan
                )
                report.embedded_chunks += chunks
                report.embedded_tokens += tokens
                report.stored_chunks += reused
                if progress:
                    progress(len(batch), len(papers))
            keyword = index.keyword_cache.saved()
            stale = bool((index.chunks.metadata or {}).get("keyword_stale"))
            if (
                todo
                or merged_away
                or stale
                or keyword is None
                or keyword.generation != index.manifest().generation
            ):
                index.refresh_keyword_index(new_generation=bool(todo or merged_away) or stale)
            report.chunks = index.chunks.count()
            if embedded:
                mark_built(index.settings, index.wanted.vectors)
        except StoreError:
            raise
        except Exception as e:
            if embedded and is_disk_full(e, folder):
                raise _after_disk_full(index, e) from None
            if is_connection_error(e):
                raise store_error(index.settings, e) from None
            raise
    report.seconds = time.perf_counter() - started
    return report


def _after_disk_full(index: PaperIndex, error: Exception) -> StoreError:
    """Give the reserve back so Chroma can finish what it logged; say what happened.

    No count here: this process's client saw the write fail, and the next process reads
    more papers back than it does (Chroma folds its log in when it opens).
    """
    folder = index.settings.store.index_dir
    SpaceReserve(folder).release()
    with suppress(Exception):  # reading folds Chroma's log into its segments
        index.papers.count()
        index.chunks.count()
    return StoreError(
        f"no space left on the disk of {folder} while writing the index: the papers stored "
        "are kept and the index opens",
        code="disk_full",
        hint="finish_after_disk_full",
    )


def _stored_hashes(index: PaperIndex, ids: list[str]) -> dict[str, str]:
    stored: dict[str, str] = {}
    for i in range(0, len(ids), 1000):
        got = index.papers.get(ids=ids[i : i + 1000], include=["metadatas"])
        for pid, meta in zip(got["ids"], got["metadatas"], strict=True):
            stored[pid] = str(meta.get("content_hash", ""))
    return stored


def _store_batch(
    index: PaperIndex,
    papers: list[Paper],
    count_tokens: TokenCounter,
    stored: Mapping[str, str],
    shipped: StoredVectors | None = None,
    plan: ChunkPlan | None = None,
) -> tuple[int, int, int]:
    """Chunks embedded now, their word pieces, and chunks given a shipped vector instead.

    `stored`: the papers already in the index (read under the same lock)."""
    planned = {p.id: plan.chunks(p) for p in papers} if plan is not None else {}
    todo = [p for p in papers if planned.get(p.id) is None]
    # One tokenizer call for the batch's sentences and titles (the counter keeps them).
    count_tokens([t for p in todo for t in (p.title + "\n", *sentences(p.abstract))])
    chunking = index.settings.chunking
    per_paper = [
        planned.get(p.id)
        or chunk_paper(p, count_tokens, chunking.max_tokens, chunking.overlap_sentences)
        for p in papers
    ]
    chunks = [c for cs in per_paper for c in cs]
    texts = [c.text for c in chunks]
    vectors, computed = embed_with(index.embeddings, texts, shipped)
    ids = [p.id for p in papers]
    # Old chunks of changed papers, and any left by an interrupted run, go first.
    index.chunks.delete(where={"paper_id": {"$in": ids}})
    by_id = {p.id: p for p in papers}
    _add_chunks(index, chunks, vectors, by_id)
    paper_vectors = []
    row = 0
    for cs in per_paper:
        mean = vectors[row : row + len(cs)].mean(axis=0)
        paper_vectors.append(mean / (np.linalg.norm(mean) or 1.0))
        row += len(cs)
    # No Chroma documents: Chroma indexes them for full-text search, which nothing here uses,
    # and that made its writes 3x slower (2,123 abstracts: 4.0 s against 1.1 s). The abstract
    # is the paper's metadata; a chunk's text is rebuilt from it (`PaperIndex.chunk_texts`).
    write_new_or_changed(
        index.papers,
        ids,
        np.asarray(paper_vectors),
        [
            paper_metadata(p) | {"n_chunks": len(cs)}
            for p, cs in zip(papers, per_paper, strict=True)
        ],
        stored,
    )
    tokens = sum(c.tokens for c, now in zip(chunks, computed, strict=True) if now)
    return sum(computed), tokens, len(chunks) - sum(computed)


def _add_chunks(
    index: PaperIndex, chunks: list[Chunk], vectors: np.ndarray, by_id: dict[str, Paper]
) -> None:
    step = 1000
    for i in range(0, len(chunks), step):
        part = chunks[i : i + step]
        index.chunks.add(
            ids=[c.id for c in part],
            embeddings=vectors[i : i + step],
            metadatas=[
                {
                    "paper_id": c.paper_id,
                    "index": c.index,
                    "start": c.start,
                    "end": c.end,
                    "tier": by_id[c.paper_id].tier,
                    "content_hash": by_id[c.paper_id].content_hash,
                }
                for c in part
            ],
        )
