"""Dense search is exact, so a question gets the same papers after every start.

Chroma's HNSW graph is approximate, and Chroma rebuilds the part of it not yet persisted from
its log at each start, with threads: at ef_search 200 a Chinese question's fifth source
changed from one start to the next. An ef_search larger than the collection visits every
vector. An index made before gets it from `rag ingest --if-needed`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag.cli.main import main
from rag.index.build_status import index_is_built, vectors_path
from rag.index.papers import PaperIndex
from rag.index.store import EXACT_EF, make_client
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings
from tests.helpers import make_settings, three_seed_papers


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    return three_seed_papers(tmp_path / "small.jsonl")


@pytest.mark.slow
def test_dense_search_returns_the_exact_nearest_chunks(
    corpus_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    index = PaperIndex.open(corpus_settings, embeddings)
    stored = index.chunks.get(include=["embeddings"])
    vectors = np.asarray(stored["embeddings"], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rng = np.random.default_rng(7)
    for row in rng.choice(len(vectors), 20, replace=False):
        query = vectors[row] + rng.normal(0, 0.05, vectors.shape[1]).astype(np.float32)
        query /= np.linalg.norm(query)
        exact = {stored["ids"][i] for i in np.argsort(-(vectors @ query))[:100]}
        found = {hit.chunk_id for hit in index.dense_search(query.tolist(), 100)}
        assert found == exact


@pytest.mark.slow
def test_an_index_made_approximate_is_made_exact_by_ingest_if_needed(
    tmp_path: Path, small_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    settings = make_settings(index)
    monkeypatch.setenv("RAG_CORPUS", json.dumps([str(small_corpus)]))
    argv = ["ingest", "--if-needed", "--index", str(index)]
    assert main(argv) == 0
    assert index_is_built(settings)

    # As an index made before: ef_search 200, and no search recorded beside it.
    client = make_client(settings)
    for collection in client.list_collections():
        collection.modify(configuration={"hnsw": {"ef_search": 200}})
    vectors_path(settings).write_text(json.dumps({"vectors": settings.embedding.precision}))
    assert not index_is_built(settings)

    assert main(argv) == 0
    assert index_is_built(settings)
    chunks = make_client(settings).get_collection(settings.store.collection + "_chunks")
    assert chunks.configuration["hnsw"]["ef_search"] == EXACT_EF
