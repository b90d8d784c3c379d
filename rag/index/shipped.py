"""Vectors shipped with the bundled corpus, so a fresh clone's first ingest embeds nothing.

The float32 chunk vectors of the bundled MiniLM (ONNX, the default, or torch) and the
multilingual vectors are the same for everyone who clones the repository: the corpus, the
model (checked by SHA-256) and the chunking are fixed, and float32 does not depend on the CPU.
`rag vectors build` writes them to data/iclr2025/ as float16 in compressed .npz files; each
file records what its vectors depend on (the weights' SHA-256, the precision, the chunking)
and each vector the SHA-256 of the exact text it embeds. An ingest uses a stored vector only
when all of that matches and embeds the rest as before, so another corpus, model, precision
or chunking, or an edited abstract, is computed as always.
`embedding.bundled_vectors = false` turns them off.

    stored = chunk_vectors(settings, embeddings)   # None when nothing can match
    vectors = embed_with(embeddings, texts, stored)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.settings import BUNDLED_CORPUS, Settings

FORMAT = 1
REBUILD = "`rag vectors build`"


def chunk_file(vectors: str) -> Path:
    """The shipped chunk vectors of one precision: float32 (ONNX or torch: the same vectors on
    every CPU) or int8 (none shipped: they depend on the CPU)."""
    return BUNDLED_CORPUS / f"vectors-minilm-{vectors}.npz"


MULTILINGUAL_FILE = BUNDLED_CORPUS / "vectors-multilingual.npz"


def text_hash(text: str) -> str:
    """What a stored vector is looked up by: the SHA-256 of the exact text embedded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def chunk_key(settings: Settings, vectors: str) -> dict[str, Any]:
    """Everything a chunk vector depends on besides its text."""
    from rag.models.minilm import BUNDLED_SHA256

    return {
        "format": FORMAT,
        "model": "all-MiniLM-L6-v2",
        "weights_sha256": BUNDLED_SHA256,
        "vectors": vectors,
        "chunk_max_tokens": settings.chunking.max_tokens,
        "chunk_overlap": settings.chunking.overlap_sentences,
    }


def multilingual_key() -> dict[str, Any]:
    from rag.models.multilingual import MODEL_NAME, WEIGHTS_SHA256

    return {"format": FORMAT, "model": MODEL_NAME, "weights_sha256": WEIGHTS_SHA256}


@dataclass
class StoredVectors:
    """Vectors by text hash, read from one shipped file."""

    key: dict[str, Any]
    hashes: np.ndarray  # (n,) of 32 hex characters
    vectors: np.ndarray  # (n, d) float16
    _row: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.hashes)

    def lookup(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """Each text's stored vector (float32, unit length again), or None."""
        from rag.common.similarity import unit_rows

        if self._row is None:
            self._row = {
                h.decode() if isinstance(h, bytes) else str(h): i
                for i, h in enumerate(self.hashes.tolist())
            }
        rows = [self._row.get(text_hash(t)) for t in texts]
        return [
            None if r is None else unit_rows(self.vectors[r : r + 1].astype(np.float32))[0]
            for r in rows
        ]

    def save(self, path: Path) -> None:
        import io

        from rag.common.atomic import atomic_write

        buffer = io.BytesIO()
        np.savez_compressed(
            buffer,
            key=np.array(json.dumps(self.key, sort_keys=True)),
            hashes=self.hashes.astype("S32"),
            vectors=self.vectors.astype(np.float16),
        )
        atomic_write(path, buffer.getvalue())


def read_stored(path: Path) -> StoredVectors | None:
    """The file's vectors, or None when it is missing or unreadable."""
    try:
        with np.load(path, allow_pickle=False) as data:
            key = json.loads(str(data["key"]))
            return StoredVectors(key, data["hashes"], data["vectors"])
    except (OSError, ValueError, KeyError):
        return None


def matching(path: Path, key: dict[str, Any]) -> StoredVectors | None:
    stored = read_stored(path)
    return stored if stored is not None and stored.key == key else None


def local_backend(embeddings: Embeddings) -> str | None:
    """The backend of the bundled MiniLM behind `embeddings`, None for any other model."""
    from rag.models.minilm import LocalEmbeddings

    return embeddings.backend if isinstance(embeddings, LocalEmbeddings) else None


def chunk_vectors(settings: Settings, embeddings: Embeddings) -> StoredVectors | None:
    """The shipped chunk vectors usable with `embeddings` and these settings, else None."""
    if not settings.embedding.bundled_vectors or local_backend(embeddings) is None:
        return None
    vectors = str(getattr(embeddings, "precision", "float32"))
    return matching(chunk_file(vectors), chunk_key(settings, vectors))


def multilingual_vectors(settings: Settings) -> StoredVectors | None:
    if not settings.embedding.bundled_vectors:
        return None
    return matching(MULTILINGUAL_FILE, multilingual_key())


def embed_with(
    embeddings: Embeddings, texts: list[str], stored: StoredVectors | None
) -> tuple[np.ndarray, list[bool]]:
    """Vectors of `texts` (float32 rows), stored ones where they match; and which were
    computed now."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32), []
    found: list[np.ndarray | None] = (
        stored.lookup(texts) if stored is not None else [None] * len(texts)
    )
    missing = [i for i, v in enumerate(found) if v is None]
    computed = embeddings.embed_documents([texts[i] for i in missing]) if missing else []
    for i, vector in zip(missing, computed, strict=True):
        found[i] = np.asarray(vector, dtype=np.float32)
    now = [False] * len(texts)
    for i in missing:
        now[i] = True
    return np.stack([v for v in found if v is not None]).astype(np.float32), now
