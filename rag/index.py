"""The index: chunk vectors and paper records in two Chroma collections, plus BM25 beside them.

Ingest is idempotent and safe to interrupt: a paper's record is written after its chunks, so
a paper only counts as stored once all of it is; a re-run redoes anything unfinished.
Connecting lives in `rag.store`, the ingest lock in `rag.ingest_lock`, the BM25 cache in
`rag.keyword_cache`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.chunking import Chunk, TokenCounter, chunk_paper
from rag.disk_space import SpaceReserve, is_disk_full
from rag.ingest_lock import ingest_lock, lock_path
from rag.keyword import KeywordIndex
from rag.keyword_cache import KeywordCache, keyword_dir
from rag.loaders import Paper
from rag.models import embeddings_name
from rag.settings import Settings
from rag.store import (
    IndexMismatchError,
    IndexMissingError,
    StoreError,
    describe_store,
    is_connection_error,
    is_not_found,
    make_client,
    store_error,
)

__all__ = [
    "PAPERS_PER_BATCH",
    "IndexMismatchError",
    "IndexMissingError",
    "IngestReport",
    "PaperIndex",
    "StoreError",
    "build_index",
]

SCHEMA = 1
PAPERS_PER_BATCH = 128
T = TypeVar("T")


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0  # records of seeds now merged into a paper (rag/corpus.py)
    chunks: int = 0
    embedded_chunks: int = 0
    embedded_tokens: int = 0
    seconds: float = 0.0
    multilingual_embedded: int = 0  # papers given a multilingual vector (rag.multilingual)
    multilingual_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class DenseHit:
    chunk_id: str
    paper_id: str
    similarity: float


@dataclass
class Manifest:
    embedding_model: str
    chunk_max_tokens: int
    chunk_overlap: int
    generation: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_metadata(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "embedding_model": self.embedding_model,
            "chunk_max_tokens": self.chunk_max_tokens,
            "chunk_overlap": self.chunk_overlap,
            "generation": self.generation,
        }

    def describe(self) -> str:
        return (
            f"embedding model {self.embedding_model}, chunks of {self.chunk_max_tokens} tokens "
            f"with {self.chunk_overlap} sentence(s) overlap"
        )


class PaperIndex:
    """Chunks and papers in Chroma plus BM25, for one embedding model and chunking setup."""

    def __init__(self, client: Any, settings: Settings, embeddings: Embeddings) -> None:
        self.client = client
        self.settings = settings
        self.embeddings = embeddings
        self.wanted = Manifest(
            embedding_model=embeddings_name(embeddings),
            chunk_max_tokens=settings.chunking.max_tokens,
            chunk_overlap=settings.chunking.overlap_sentences,
        )
        prefix = settings.store.collection
        self.chunks_name, self.papers_name = f"{prefix}_chunks", f"{prefix}_papers"
        self._chunks: Any = None
        self._papers: Any = None
        self.keyword_cache = KeywordCache(keyword_dir(settings), lock_path(settings))

    @classmethod
    def open(cls, settings: Settings, embeddings: Embeddings, create: bool = False) -> PaperIndex:
        """Open the index; unless `create`, it must exist and match the configured models."""
        if not create:
            index = cls(make_client(settings), settings, embeddings)
            index._attach()
            return index
        # Creating an embedded store sets up its database: two processes doing that at once
        # collide, so it happens under the ingest lock.
        with ingest_lock(settings):
            return cls(make_client(settings, create=True), settings, embeddings)

    def _collection(self, name: str) -> Any:
        """An existing collection; a missing one means there is no index."""
        try:
            return self.client.get_collection(name, embedding_function=None)
        except Exception as e:
            if is_not_found(e):
                raise IndexMissingError(
                    f"no index in {describe_store(self.settings)}: build it with `rag ingest`"
                ) from None
            raise store_error(self.settings, e) from None

    def _attach(self) -> None:
        self._chunks = self._collection(self.chunks_name)
        self._papers = self._collection(self.papers_name)
        self.check_manifest()

    def manifest(self) -> Manifest:
        meta = dict(self._chunks.metadata or {})
        return Manifest(
            embedding_model=str(meta.get("embedding_model", "?")),
            chunk_max_tokens=int(meta.get("chunk_max_tokens", 0)),
            chunk_overlap=int(meta.get("chunk_overlap", -1)),
            generation=str(meta.get("generation", "")),
        )

    def check_manifest(self) -> None:
        have = self.manifest()
        want = self.wanted
        if (have.embedding_model, have.chunk_max_tokens, have.chunk_overlap) != (
            want.embedding_model,
            want.chunk_max_tokens,
            want.chunk_overlap,
        ):
            where = describe_store(self.settings)
            raise IndexMismatchError(
                f"the index in {where} was built with {have.describe()}, but the "
                f"configuration asks for {want.describe()}: rebuild it with "
                "`rag ingest --rebuild`, or change the configuration back"
            )

    # Ingest -------------------------------------------------------------------------

    def ingest(
        self,
        papers: list[Paper],
        count_tokens: TokenCounter,
        rebuild: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestReport:
        """Store `papers`: new ones added, changed ones replaced, unchanged ones left alone."""
        started = time.perf_counter()
        report = IngestReport()
        embedded = self.settings.store.mode == "embedded"
        folder = self.settings.store.index_dir
        with ingest_lock(self.settings), SpaceReserve(folder) if embedded else nullcontext():
            try:
                if rebuild:
                    self._drop()
                self._create()
                self.check_manifest()
                stored = self._stored_hashes([p.id for p in papers])
                todo = [p for p in papers if stored.get(p.id) != p.content_hash]
                report.updated = sum(1 for p in todo if p.id in stored)
                report.added = len(todo) - report.updated
                report.unchanged = len(papers) - len(todo)
                if progress:
                    progress(report.unchanged, len(papers))
                # A seed indexed on its own before it was known to be a paper goes, so the
                # paper that absorbed it is not found twice.
                kept = {p.id for p in papers}
                absorbed = {s for p in papers for s in p.extra.get("seeds", [])} - kept
                merged_away = sorted(self._stored_hashes(sorted(absorbed)))
                if todo or merged_away:
                    # A crash after the chunks are written but before BM25 is rebuilt must not
                    # leave BM25 looking current to the next run; the refresh clears this flag.
                    self._chunks.modify(
                        metadata=self.manifest().as_metadata() | {"keyword_stale": True}
                    )
                if merged_away:
                    self._chunks.delete(where={"paper_id": {"$in": merged_away}})
                    self._papers.delete(ids=merged_away)
                    report.removed = len(merged_away)
                for i in range(0, len(todo), PAPERS_PER_BATCH):
                    batch = todo[i : i + PAPERS_PER_BATCH]
                    chunks, tokens = self._store_batch(batch, count_tokens)
                    report.embedded_chunks += chunks
                    report.embedded_tokens += tokens
                    if progress:
                        progress(len(batch), len(papers))
                keyword = self.keyword_cache.saved()
                stale = bool((self._chunks.metadata or {}).get("keyword_stale"))
                if (
                    todo
                    or merged_away
                    or stale
                    or keyword is None
                    or keyword.generation != self.manifest().generation
                ):
                    self._refresh_keyword_index(new_generation=bool(todo or merged_away) or stale)
                report.chunks = self._chunks.count()
            except StoreError:
                raise
            except Exception as e:
                if embedded and is_disk_full(e, folder):
                    raise self._after_disk_full(e) from None
                if is_connection_error(e):
                    raise store_error(self.settings, e) from None
                raise
        report.seconds = time.perf_counter() - started
        return report

    def _after_disk_full(self, error: Exception) -> StoreError:
        """Give the reserve back so Chroma can finish what it logged; say what happened.

        No count here: this process's client saw the write fail, and the next process reads
        more papers back than it does (Chroma folds its log in when it opens).
        """
        folder = self.settings.store.index_dir
        SpaceReserve(folder).release()
        with suppress(Exception):  # reading folds Chroma's log into its segments
            self._papers.count()
            self._chunks.count()
        return StoreError(
            f"no space left on the disk of {folder} while writing the index: the papers stored "
            "are kept and the index opens; free some space and run the same command again "
            "to finish"
        )

    def _drop(self) -> None:
        for name in (self.chunks_name, self.papers_name):
            try:
                self.client.delete_collection(name)
            except Exception as e:
                if not is_not_found(e):
                    raise
        self.keyword_cache.drop()

    def _create(self) -> None:
        config = {"hnsw": {"space": "cosine"}}
        self._chunks = self.client.get_or_create_collection(
            self.chunks_name,
            configuration=config,
            metadata=self.wanted.as_metadata(),
            embedding_function=None,
        )
        self._papers = self.client.get_or_create_collection(
            self.papers_name, configuration=config, embedding_function=None
        )

    def _stored_hashes(self, ids: list[str]) -> dict[str, str]:
        stored: dict[str, str] = {}
        for i in range(0, len(ids), 1000):
            got = self._papers.get(ids=ids[i : i + 1000], include=["metadatas"])
            for pid, meta in zip(got["ids"], got["metadatas"], strict=True):
                stored[pid] = str(meta.get("content_hash", ""))
        return stored

    def _store_batch(self, papers: list[Paper], count_tokens: TokenCounter) -> tuple[int, int]:
        per_paper = [
            chunk_paper(
                p,
                count_tokens,
                self.settings.chunking.max_tokens,
                self.settings.chunking.overlap_sentences,
            )
            for p in papers
        ]
        chunks = [c for cs in per_paper for c in cs]
        texts = [c.text for c in chunks]
        vectors = np.asarray(self.embeddings.embed_documents(texts), dtype=np.float32)
        ids = [p.id for p in papers]
        # Old chunks of changed papers, and any left by an interrupted run, go first.
        self._chunks.delete(where={"paper_id": {"$in": ids}})
        by_id = {p.id: p for p in papers}
        self._add_chunks(chunks, vectors, by_id)
        paper_vectors = []
        row = 0
        for cs in per_paper:
            mean = vectors[row : row + len(cs)].mean(axis=0)
            paper_vectors.append(mean / (np.linalg.norm(mean) or 1.0))
            row += len(cs)
        self._papers.upsert(
            ids=ids,
            embeddings=np.asarray(paper_vectors),
            documents=[p.abstract for p in papers],
            metadatas=[
                paper_metadata(p) | {"n_chunks": len(cs)}
                for p, cs in zip(papers, per_paper, strict=True)
            ],
        )
        return len(chunks), sum(c.tokens for c in chunks)

    def _add_chunks(
        self, chunks: list[Chunk], vectors: np.ndarray, by_id: dict[str, Paper]
    ) -> None:
        step = 1000
        for i in range(0, len(chunks), step):
            part = chunks[i : i + step]
            self._chunks.add(
                ids=[c.id for c in part],
                embeddings=vectors[i : i + step],
                documents=[c.text for c in part],
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

    def _refresh_keyword_index(self, new_generation: bool) -> KeywordIndex:
        manifest = self.manifest()
        if new_generation or not manifest.generation:
            manifest.generation = uuid.uuid4().hex
            self._chunks.modify(
                metadata=self.wanted.as_metadata() | {"generation": manifest.generation}
            )
        keyword = self._build_keyword_index(manifest.generation)
        self.keyword_cache.save(keyword)
        return keyword

    def _build_keyword_index(self, generation: str) -> KeywordIndex:
        def fetch() -> tuple[list[str], list[str], list[str]]:
            ids, paper_ids, texts = [], [], []
            total = self._chunks.count()
            for offset in range(0, total, 5000):
                got = self._chunks.get(
                    include=["documents", "metadatas"], limit=5000, offset=offset
                )
                ids += got["ids"]
                paper_ids += [m["paper_id"] for m in got["metadatas"]]
                texts += got["documents"]
            return ids, paper_ids, texts

        ids, paper_ids, texts = self._read(fetch)
        return KeywordIndex.build(ids, paper_ids, texts, generation)

    # Reading --------------------------------------------------------------------------

    def _read(self, call: Callable[..., T]) -> T:
        """Run a read; if another client rebuilt the index meanwhile, re-attach and retry once."""
        try:
            return call()
        except StoreError:
            raise
        except Exception as e:
            if not is_not_found(e):
                raise store_error(self.settings, e) from None
        self._attach()
        try:
            return call()
        except Exception as e:
            raise store_error(self.settings, e) from None

    def current_generation(self) -> str:
        """The index generation as stored now (one small request), so other writers show up."""
        chunks = self._collection(self.chunks_name)
        if self._chunks is None or chunks.id != self._chunks.id:
            self._attach()  # dropped and rebuilt by another client: check it again
        else:
            self._chunks = chunks
        return self.manifest().generation

    def keyword_index(self) -> KeywordIndex:
        """The BM25 index, rebuilt when the index changed since it was built.

        The generation is re-read from Chroma on every call, one small request (about 2 ms on
        loopback), so a long-running reader sees a re-ingest by another process or host at its
        next search instead of serving a stale keyword index.
        """
        generation = self.current_generation()
        return self.keyword_cache.current(
            generation,
            rebuild=lambda: self._refresh_keyword_index(new_generation=False),
            build=lambda: self._build_keyword_index(self.manifest().generation),
        )

    def dense_search(
        self, vector: list[float], n: int, tiers: list[str] | None = None
    ) -> list[DenseHit]:
        where = {"tier": {"$in": list(tiers)}} if tiers else None

        def query() -> Any:
            wanted = min(n, self._chunks.count())
            if wanted <= 0:
                return {"ids": [[]], "metadatas": [[]], "distances": [[]]}
            return self._chunks.query(
                query_embeddings=[vector],
                n_results=wanted,
                where=where,
                include=["metadatas", "distances"],
            )

        got = self._read(query)
        return [
            DenseHit(cid, meta["paper_id"], 1.0 - float(dist))
            for cid, meta, dist in zip(
                got["ids"][0], got["metadatas"][0], got["distances"][0], strict=True
            )
        ]

    def get_papers(self, ids: list[str]) -> dict[str, Paper]:
        if not ids:
            return {}
        got = self._read(lambda: self._papers.get(ids=ids, include=["documents", "metadatas"]))
        return {
            pid: paper_from_metadata(pid, doc, meta)
            for pid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }

    def all_papers(self) -> list[Paper]:
        """Every stored paper (for evaluation and baselines), in store order."""
        papers: list[Paper] = []
        while True:
            offset = len(papers)
            got = self._read(
                lambda offset=offset: self._papers.get(
                    include=["documents", "metadatas"], limit=1000, offset=offset
                )
            )
            papers += [
                paper_from_metadata(pid, doc, meta)
                for pid, doc, meta in zip(
                    got["ids"], got["documents"], got["metadatas"], strict=True
                )
            ]
            if len(got["ids"]) < 1000:
                return papers

    def paper_vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        got = self._read(lambda: self._papers.get(ids=ids, include=["embeddings"]))
        return {pid: np.asarray(v) for pid, v in zip(got["ids"], got["embeddings"], strict=True)}

    def stats(self) -> dict[str, Any]:
        try:
            return {
                "papers": self._papers.count(),
                "chunks": self._chunks.count(),
                "embedding_model": self.manifest().embedding_model,
            }
        except Exception as e:
            raise store_error(self.settings, e) from None


def paper_metadata(paper: Paper) -> dict[str, Any]:
    return {
        "title": paper.title,
        "decision": paper.decision,
        "tier": paper.tier,
        "url": paper.url,
        "authors": "; ".join(paper.authors),
        "keywords": "; ".join(paper.keywords),
        "source": paper.source,
        "position": paper.position,
        "content_hash": paper.content_hash,
        "extra": json.dumps(paper.extra, ensure_ascii=False, default=str),
    }


def paper_from_metadata(paper_id: str, abstract: str, meta: dict[str, Any]) -> Paper:
    def split(value: Any) -> tuple[str, ...]:
        return tuple(v for v in str(value or "").split("; ") if v)

    return Paper(
        id=paper_id,
        title=str(meta.get("title", "")),
        abstract=abstract,
        authors=split(meta.get("authors")),
        keywords=split(meta.get("keywords")),
        decision=str(meta.get("decision", "")),
        url=str(meta.get("url", "")),
        source=str(meta.get("source", "")),
        position=int(meta.get("position", 0)),
        extra=json.loads(meta.get("extra") or "{}"),
    )


def build_index(
    settings: Settings,
    paths: list[Path] | None = None,
    rebuild: bool = False,
    embeddings: Embeddings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> IngestReport:
    """Load `paths` (default: the configured corpus) and ingest them into the index."""
    from rag.chunking import token_counter
    from rag.corpus import load_corpus
    from rag.models import load_tokenizer, make_embeddings

    papers = load_corpus(list(paths or settings.corpus_paths())).papers
    embeddings = embeddings or make_embeddings(settings.embedding)
    counter: list[TokenCounter] = []
    counted: dict[str, int] = {}  # chunking measures each sentence more than once

    def count_tokens(texts: Sequence[str]) -> list[int]:
        # The tokenizer is loaded only when something needs embedding.
        if not counter:
            tokenizer = getattr(embeddings, "tokenizer", None) or load_tokenizer()
            counter.append(token_counter(tokenizer))
        missing = [t for t in dict.fromkeys(texts) if t not in counted]
        if missing:
            counted.update(zip(missing, counter[0](missing), strict=True))
        return [counted[t] for t in texts]

    index = PaperIndex.open(settings, embeddings, create=True)
    report = index.ingest(papers, count_tokens, rebuild=rebuild, progress=progress)
    if settings.embedding.multilingual:
        from rag.multilingual import build_multilingual

        started = time.perf_counter()
        report.multilingual_embedded = build_multilingual(index, rebuild=rebuild)
        report.multilingual_seconds = time.perf_counter() - started
    return report
