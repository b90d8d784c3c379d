"""The index: chunk vectors and paper records in two Chroma collections, plus BM25 beside them.

This module opens the collections, checks what they were built with, and reads them; writing
papers into them is `rag.index.ingest`. Connecting lives in `rag.index.store`, the ingest lock in
`rag.index.lock`, the BM25 cache in `rag.index.bm25`.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.errors import IndexMismatchError, IndexMissingError, StaleVectorsError, StoreError
from rag.index.bm25 import KeywordCache, KeywordIndex, keyword_dir
from rag.index.lock import ingest_lock, lock_path
from rag.index.store import (
    HNSW,
    describe_store,
    forget_system,
    is_not_found,
    make_client,
    reopen_client,
    searched_exactly,
    store_error,
)
from rag.models.factory import embeddings_name, vectors_of
from rag.settings import Settings
from rag.types import Paper

__all__ = ["IndexMismatchError", "IndexMissingError", "PaperIndex", "StoreError"]

SCHEMA = 1
T = TypeVar("T")


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
    vectors: str = "float32"  # int8 vectors depend on the CPU: never mixed with float32 ones

    def as_metadata(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "embedding_model": self.embedding_model,
            "vectors": self.vectors,
            "chunk_max_tokens": self.chunk_max_tokens,
            "chunk_overlap": self.chunk_overlap,
            "generation": self.generation,
        }

    def describe(self) -> str:
        return (
            f"embedding model {self.embedding_model} ({self.vectors} vectors), chunks of "
            f"{self.chunk_max_tokens} tokens with {self.chunk_overlap} sentence(s) overlap"
        )

    def differs_only_in_vectors(self, other: Manifest) -> bool:
        """Same model and chunking, other precision: rebuilt from scratch, not refused."""
        same = (self.embedding_model, self.chunk_max_tokens, self.chunk_overlap) == (
            other.embedding_model,
            other.chunk_max_tokens,
            other.chunk_overlap,
        )
        return same and self.vectors != other.vectors


# Indexes built before the precision was recorded: the bundled MiniLM's were int8 (its default
# then); any other model's were what the provider returns.
_UNRECORDED = {"all-MiniLM-L6-v2": "int8"}


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
            vectors=vectors_of(embeddings),
        )
        prefix = settings.store.collection
        self.chunks_name, self.papers_name = f"{prefix}_chunks", f"{prefix}_papers"
        self.chunks: Any = None
        self.papers: Any = None
        self.seen_generation: str | None = None  # the last generation read or written here
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

    @classmethod
    def open_for_rebuild(cls, settings: Settings, embeddings: Embeddings) -> PaperIndex:
        """`open(create=True)` for `rag ingest --rebuild`: an embedded store that cannot be
        opened at all (a damaged database) is moved aside, kept, and a new one is made, so the
        command the error names is the way out."""
        try:
            return cls.open(settings, embeddings, create=True)
        except StoreError:
            if settings.store.mode != "embedded":
                raise
            folder = settings.store.index_dir / "chroma"
            if not (folder / "chroma.sqlite3").exists():
                raise
        from rag.common.side_files import warn

        with ingest_lock(settings):
            aside = folder.with_name(f"chroma.damaged-{uuid.uuid4().hex[:8]}")
            folder.rename(aside)
            forget_system(str(folder))  # the failed open is cached per folder
        warn(f"the index in {folder} could not be opened; it was moved to {aside}")
        return cls.open(settings, embeddings, create=True)

    def _collection(self, name: str) -> Any:
        """An existing collection; a missing one means there is no index."""
        try:
            return self.client.get_collection(name, embedding_function=None)
        except Exception as e:
            if is_not_found(e):
                raise IndexMissingError(
                    f"no index in {describe_store(self.settings)}", hint="build_index"
                ) from None
            raise store_error(self.settings, e) from None

    def _attach(self) -> None:
        self.chunks = self._collection(self.chunks_name)
        self.papers = self._collection(self.papers_name)
        self.check_manifest()

    def manifest(self) -> Manifest:
        meta = dict(self.chunks.metadata or {})
        model = str(meta.get("embedding_model", "?"))
        return Manifest(
            embedding_model=model,
            chunk_max_tokens=int(meta.get("chunk_max_tokens", 0)),
            chunk_overlap=int(meta.get("chunk_overlap", -1)),
            generation=str(meta.get("generation", "")),
            vectors=str(meta.get("vectors") or _UNRECORDED.get(model, "float32")),
        )

    def check_manifest(self) -> None:
        have = self.manifest()
        want = self.wanted
        if (have.embedding_model, have.vectors, have.chunk_max_tokens, have.chunk_overlap) != (
            want.embedding_model,
            want.vectors,
            want.chunk_max_tokens,
            want.chunk_overlap,
        ):
            where = describe_store(self.settings)
            if have.differs_only_in_vectors(want):
                raise StaleVectorsError(
                    f"the index in {where} holds {have.vectors} vectors, but the configuration "
                    f"asks for {want.vectors} vectors",
                    hint="refresh_vectors",
                )
            raise IndexMismatchError(
                f"the index in {where} was built with {have.describe()}, but the "
                f"configuration asks for {want.describe()}",
                hint="rebuild_or_reconfigure",
            )

    # Collections, for `rag.index.ingest` ----------------------------------------------------

    def drop(self) -> None:
        """Both collections and the BM25 cache gone (`rag ingest --rebuild`)."""
        for name in (self.chunks_name, self.papers_name):
            try:
                self.client.delete_collection(name)
            except Exception as e:
                if not is_not_found(e):
                    raise
        self.keyword_cache.drop()

    def create_collections(self) -> None:
        """Both collections, created if missing; the chunks carry the manifest."""
        config = {"hnsw": HNSW}
        self.chunks = searched_exactly(
            self.client.get_or_create_collection(
                self.chunks_name,
                configuration=config,
                metadata=self.wanted.as_metadata(),
                embedding_function=None,
            )
        )
        self.papers = self.client.get_or_create_collection(
            self.papers_name, configuration=config, embedding_function=None
        )

    def refresh_keyword_index(self, new_generation: bool) -> KeywordIndex:
        """BM25 rebuilt from the chunks and saved; after a change, under a new generation."""
        manifest = self.manifest()
        if new_generation or not manifest.generation:
            manifest.generation = uuid.uuid4().hex
            self.chunks.modify(
                metadata=self.wanted.as_metadata() | {"generation": manifest.generation}
            )
            self.seen_generation = manifest.generation  # our own write: nothing to reopen
        keyword = self._build_keyword_index(manifest.generation)
        self.keyword_cache.save(keyword)
        return keyword

    def _build_keyword_index(self, generation: str) -> KeywordIndex:
        # Title records (no abstract) are found by name, title and author (rag.retrieval), not
        # by BM25: their titles' words would count as words the abstracts hold.
        ids, paper_ids, texts = self._read(lambda: self.chunk_texts(title_records=False))
        return KeywordIndex.build(ids, paper_ids, texts, generation)

    def chunk_texts(self, title_records: bool = True) -> tuple[list[str], list[str], list[str]]:
        """Every chunk's id, paper and text. The text is the paper's title and its slice of the
        abstract (as `rag.index.passages` made it), or the Chroma document of an index written
        before chunks stopped storing one. `title_records=False` leaves out the chunks of papers
        without an abstract."""
        abstracts = {p.id: p for p in self.all_papers()}
        ids, paper_ids, texts = [], [], []
        total = self.chunks.count()
        for offset in range(0, total, 5000):
            got = self.chunks.get(include=["documents", "metadatas"], limit=5000, offset=offset)
            for cid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
                paper = abstracts.get(meta["paper_id"])
                if paper is None or not (title_records or paper.has_abstract):
                    continue  # its paper's record not written (a disk filled mid-ingest)
                ids.append(cid)
                paper_ids.append(paper.id)
                start, end = int(meta["start"]), int(meta["end"])
                texts.append(doc or f"{paper.title}\n{paper.abstract[start:end]}")
        return ids, paper_ids, texts

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
        """The index generation as stored now (one small request), so other writers show up.

        A generation written by another process reopens the embedded client first: the one
        this process had keeps stale vector segments, and reads of the new papers fail.
        """
        chunks = self._collection(self.chunks_name)
        if self.chunks is None or chunks.id != self.chunks.id:
            self._attach()  # dropped and rebuilt by another client: check it again
        else:
            self.chunks = chunks
        generation = self.manifest().generation
        if self.seen_generation is not None and generation != self.seen_generation:
            self.client = reopen_client(self.settings, self.client)
            self._attach()
            generation = self.manifest().generation
        self.seen_generation = generation
        return generation

    def keyword_index(self) -> KeywordIndex:
        """The BM25 index, rebuilt when the index changed since it was built.

        The generation is re-read from Chroma on every call, one small request (about 2 ms on
        loopback), so a long-running reader sees a re-ingest by another process or host at its
        next search instead of serving a stale keyword index.
        """
        generation = self.current_generation()
        return self.keyword_cache.current(
            generation,
            rebuild=lambda: self.refresh_keyword_index(new_generation=False),
            build=lambda: self._build_keyword_index(self.manifest().generation),
            fits=self._keyword_fits,
        )

    def _keyword_fits(self, keyword: KeywordIndex, sample: int = 24) -> bool:
        """Whether a saved BM25 index is this store's: as many chunks, and `sample` of them,
        drawn at random, have the ids and the terms the store's texts give."""
        ids = keyword.chunk_ids
        # BM25 leaves out title records' chunks (no abstract: the span is 0 to 0).
        titles = self._read(lambda: self.chunks.get(where={"end": 0}, include=[]))["ids"]
        if len(ids) != self._read(self.chunks.count) - len(titles):
            return False
        rows = random.sample(range(len(ids)), min(sample, len(ids)))
        got = self._read(
            lambda: self.chunks.get(ids=[ids[i] for i in rows], include=["documents", "metadatas"])
        )
        found = dict(
            zip(got["ids"], zip(got["documents"], got["metadatas"], strict=True), strict=True)
        )
        if len(found) != len(rows):
            return False
        papers = self.get_papers(sorted({str(meta["paper_id"]) for _, meta in found.values()}))
        texts = {}
        for i in rows:
            doc, meta = found[ids[i]]
            paper = papers.get(str(meta["paper_id"]))
            if paper is None or keyword.paper_ids[i] != paper.id:
                return False
            start, end = int(meta["start"]), int(meta["end"])
            texts[i] = doc or f"{paper.title}\n{paper.abstract[start:end]}"
        return keyword.documents_match(texts)

    def dense_search(
        self, vector: list[float], n: int, tiers: list[str] | None = None
    ) -> list[DenseHit]:
        where = {"tier": {"$in": list(tiers)}} if tiers else None

        def query() -> Any:
            wanted = min(n, self.chunks.count())
            if wanted <= 0:
                return {"ids": [[]], "metadatas": [[]], "distances": [[]]}
            return self.chunks.query(
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
        got = self._read(lambda: self.papers.get(ids=ids, include=["documents", "metadatas"]))
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
                lambda offset=offset: self.papers.get(
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
        got = self._read(lambda: self.papers.get(ids=ids, include=["embeddings"]))
        return {pid: np.asarray(v) for pid, v in zip(got["ids"], got["embeddings"], strict=True)}

    def paper_count(self) -> int:  # no record read, unlike `stats` (its untitled seeds)
        return self._read(lambda: self.papers.count())

    def stats(self) -> dict[str, Any]:
        try:
            got = self.papers.get(where={"decision": ""}, include=["metadatas"])  # the seeds'
            seeds = zip(got["ids"], got["metadatas"] or [], strict=True)
            return {
                "papers": self.papers.count(),
                "untitled": sum(paper_from_metadata(i, None, dict(m)).untitled for i, m in seeds),
                "chunks": self.chunks.count(),
                "embedding_model": self.manifest().embedding_model,
            }
        except Exception as e:
            raise store_error(self.settings, e) from None


def paper_metadata(paper: Paper) -> dict[str, Any]:
    """A paper's record as Chroma metadata, which is flat: lists joined, `extra` as JSON."""
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
        "abstract": paper.abstract,
    }


def paper_from_metadata(paper_id: str, document: str | None, meta: dict[str, Any]) -> Paper:
    """The paper of a stored record: the abstract is in the metadata, or, in an index written
    before that, the Chroma document."""

    def split(value: Any) -> tuple[str, ...]:
        return tuple(v for v in str(value or "").split("; ") if v)

    return Paper(
        id=paper_id,
        title=str(meta.get("title", "")),
        abstract=str(meta.get("abstract") or document or ""),
        authors=split(meta.get("authors")),
        keywords=split(meta.get("keywords")),
        decision=str(meta.get("decision", "")),
        url=str(meta.get("url", "")),
        source=str(meta.get("source", "")),
        position=int(meta.get("position", 0)),
        extra=json.loads(meta.get("extra") or "{}"),
    )
