"""The sentence-embedding cache shared by every session of the app, hammered from threads.

At its cap, one thread's eviction used to remove vectors another thread was about to read
(a KeyError). Thread switches are made very frequent so the race shows within a few calls.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from rag.answer.pipeline import answer, open_assistant
from rag.answer.support import CachedEmbeddings
from rag.settings import Settings

THREADS = 6


class HashEmbeddings(Embeddings):
    """A deterministic 8-dimensional vector per text (what the cache stores is checkable)."""

    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [b / 255 for b in digest[:8]]


@contextmanager
def frequent_switches() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_cache_at_its_cap_serves_the_right_vectors_to_many_threads() -> None:
    inner = HashEmbeddings()
    cache = CachedEmbeddings(inner, size=64)
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def work(worker: int) -> None:
        barrier.wait()
        for round_ in range(300):
            # Overlapping batches: shared texts are hits for some threads, evictions for others.
            texts = [f"sentence {(worker * 7 + round_ + i) % 150}" for i in range(40)]
            try:
                got = cache.embed_documents(texts)
            except BaseException as e:  # noqa: BLE001 - collected and reported below
                errors.append(e)
                return
            assert got == [inner.embed_query(t) for t in texts]

    with frequent_switches(), ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(work, range(THREADS)))
    assert not errors, f"{len(errors)} of {THREADS} threads failed: {errors[:3]!r}"
    assert len(cache._vectors) <= 64


@pytest.mark.slow
def test_six_concurrent_answers_with_the_cache_at_its_cap(
    seed_settings: Settings, embeddings: Any
) -> None:
    assistant = open_assistant(seed_settings, embeddings, chat_model=None)
    assistant.sentence_embeddings = CachedEmbeddings(embeddings, size=20)  # always at its cap
    questions = [
        "How does ReBIND predict molecular conformations?",
        "Which papers speed up attention with masks?",
        "How are large language models unlearned and evaluated?",
        "What benchmarks test spatial reasoning of models?",
        "How can diffusion models generate 3D meshes?",
        "What methods improve graph neural network expressivity?",
    ]
    single = {q: answer(q, assistant=assistant) for q in questions}

    def ask(i: int) -> Any:
        return answer(questions[i % len(questions)], assistant=assistant)

    with frequent_switches(), ThreadPoolExecutor(THREADS) as pool:
        replies = list(pool.map(ask, range(THREADS * 5)))
    for i, reply in enumerate(replies):
        alone = single[questions[i % len(questions)]]
        # Retrieval is deterministic, so each thread got its own question's papers...
        assert [s.paper.id for s in reply.sources] == [s.paper.id for s in alone.sources]
        # ...and quoted them exactly (a sentence's vector moves in its last bits with what
        # shares its batch, so a near-tie between sentences may go the other way).
        assert reply.citations
        for citation in reply.citations:
            assert citation.quote in reply.sources[citation.n - 1].paper.abstract
