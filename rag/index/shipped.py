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
import re
from collections.abc import Callable, Sequence
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


def sentence_file(vectors: str) -> Path:
    """The shipped vectors of what the answer stage embeds per paper (its title, sentences and
    passages, `rag.answer.support.embedded_texts`): a list question embeds ~150 of them."""
    return BUNDLED_CORPUS / f"vectors-minilm-sentences-{vectors}.npz"


def text_hash(text: str) -> str:
    """What a stored vector is looked up by: the SHA-256 of the exact text embedded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _minilm_key(vectors: str) -> dict[str, Any]:
    """What every shipped vector of the bundled MiniLM depends on: the model and precision."""
    from rag.models.minilm import BUNDLED_SHA256

    return {
        "format": FORMAT,
        "model": "all-MiniLM-L6-v2",
        "weights_sha256": BUNDLED_SHA256,
        "vectors": vectors,
    }


def chunk_key(settings: Settings, vectors: str) -> dict[str, Any]:
    """Everything a chunk vector depends on besides its text."""
    return {
        **_minilm_key(vectors),
        "chunk_max_tokens": settings.chunking.max_tokens,
        "chunk_overlap": settings.chunking.overlap_sentences,
    }


def sentence_key(vectors: str) -> dict[str, Any]:
    """Everything a sentence vector depends on besides its text."""
    return {**_minilm_key(vectors), "texts": "sentences"}


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


# Bounds of a shipped file (the bundled corpus's are 2-3 MB) and its vectors' widths by model.
MAX_FILE_BYTES = 256 << 20
WIDTHS = {"all-MiniLM-L6-v2": 384, "use-multilingual-v3": 512}
_HEX = re.compile(rb"[0-9a-f]{32}")


def read_stored(path: Path) -> StoredVectors | None:
    """The file's vectors, or None when it is missing, or (with a one-line warning) when it
    does not match its SHA-256 in SHA256SUMS or is not a valid set of vectors: then every
    vector is computed as if nothing were shipped."""
    from rag.common.side_files import SideFileError, read_npz, warn
    from rag.index.shipped_manifest import read_shipped

    if not path.exists():
        return None
    try:
        data = read_shipped(path, MAX_FILE_BYTES)
        arrays = read_npz(
            path, {"key": 1 << 16, "hashes": MAX_FILE_BYTES, "vectors": MAX_FILE_BYTES}, data
        )
        return checked_vectors(path, arrays)
    except SideFileError as e:
        warn(f"{e}; its vectors are computed instead (`rag vectors build` rewrites it)")
        return None


def checked_vectors(path: Path, arrays: dict[str, np.ndarray]) -> StoredVectors:
    """The arrays as vectors, when they are what `StoredVectors.save` writes: a key, unique
    text hashes, and as many finite unit-length float16 rows of the model's width."""
    from rag.common.side_files import SideFileError, parse_json

    key, hashes, vectors = arrays["key"], arrays["hashes"], arrays["vectors"]
    if key.shape != () or key.dtype.kind != "U":
        raise SideFileError(f"{path}: its key is not a string")
    parsed = parse_json(str(key), path)
    if not isinstance(parsed, dict):
        raise SideFileError(f"{path}: its key is not a JSON object")
    n = len(hashes) if hashes.ndim == 1 else -1
    if hashes.dtype != np.dtype("S32") or n < 1:
        raise SideFileError(f"{path}: no text hashes (32 hex digits each)")
    if not all(_HEX.fullmatch(h) for h in hashes.tolist()) or len(set(hashes.tolist())) != n:
        raise SideFileError(f"{path}: text hashes that are not unique hex digests")
    width = WIDTHS.get(str(parsed.get("model")))
    if vectors.dtype != np.float16 or vectors.ndim != 2 or vectors.shape[0] != n:
        raise SideFileError(f"{path}: not {n} rows of float16 vectors")
    if vectors.shape[1] != (width or vectors.shape[1]) or vectors.shape[1] == 0:
        raise SideFileError(f"{path}: vectors of width {vectors.shape[1]}, the model's are {width}")
    as32 = vectors.astype(np.float32)
    if not np.isfinite(as32).all():
        raise SideFileError(f"{path}: vectors with NaN or infinite values")
    norms = np.linalg.norm(as32, axis=1)
    if not ((norms > 0.95) & (norms < 1.05)).all():
        raise SideFileError(f"{path}: vectors that are not of unit length")
    return StoredVectors(parsed, hashes, vectors)


def matching(path: Path, key: dict[str, Any]) -> StoredVectors | None:
    stored = read_stored(path)
    return stored if stored is not None and stored.key == key else None


def local_backend(embeddings: Embeddings) -> str | None:
    """The backend of the bundled MiniLM behind `embeddings`, None for any other model."""
    from rag.models.minilm import LocalEmbeddings

    return embeddings.backend if isinstance(embeddings, LocalEmbeddings) else None


def chunk_vectors(settings: Settings, embeddings: Embeddings) -> StoredVectors | None:
    """The shipped chunk vectors usable with `embeddings` and these settings, else None."""
    return _minilm_vectors(
        settings, embeddings, chunk_file, lambda vectors: chunk_key(settings, vectors)
    )


def sentence_vectors(settings: Settings, embeddings: Embeddings) -> StoredVectors | None:
    """The shipped sentence vectors usable with `embeddings`, else None."""
    return _minilm_vectors(settings, embeddings, sentence_file, sentence_key)


def _minilm_vectors(
    settings: Settings,
    embeddings: Embeddings,
    file: Callable[[str], Path],
    key: Callable[[str], dict[str, Any]],
) -> StoredVectors | None:
    """A shipped file of the bundled MiniLM's vectors at the precision of `embeddings`, when
    they are that model, shipped vectors are on and the file's key matches, else None."""
    if not settings.embedding.bundled_vectors or local_backend(embeddings) is None:
        return None
    from rag.models.factory import vectors_of

    vectors = vectors_of(embeddings)
    return matching(file(vectors), key(vectors))


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
