"""Chunk boundaries shipped with the bundled corpus, so a first ingest runs no tokenizer.

`rag.index.chunking` measures every sentence with MiniLM's tokenizer: 2.6 s of an 11 s shipped
ingest, for boundaries that depend only on a paper's title and abstract, the tokenizer (it
comes with the weights, checked by SHA-256) and the chunking settings. `rag vectors build` (or
`rag vectors chunks`) writes them to data/iclr2025/chunks.json.gz under those keys; a paper
whose title and abstract hash to a stored entry takes its chunks from there, any other is
chunked as always. tests/test_shipped_vectors.py re-chunks every bundled paper and compares.

    plan = chunk_plan(settings, embeddings)      # None when nothing can match
    chunks = plan.chunks(paper) if plan else None
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from rag.index.chunking import TokenCounter, chunk_paper
from rag.index.shipped import FORMAT, local_backend
from rag.settings import BUNDLED_CORPUS, Settings
from rag.types import Chunk, Paper

PLAN_FILE = BUNDLED_CORPUS / "chunks.json.gz"


def plan_key(settings: Settings) -> dict[str, Any]:
    """Everything a paper's chunk boundaries depend on besides its title and abstract."""
    from rag.models.minilm import BUNDLED_SHA256

    return {
        "format": FORMAT,
        "tokenizer": f"all-MiniLM-L6-v2 {BUNDLED_SHA256}",
        "chunk_max_tokens": settings.chunking.max_tokens,
        "chunk_overlap": settings.chunking.overlap_sentences,
    }


def paper_key(paper: Paper) -> str:
    text = f"{paper.title}\0{paper.abstract}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass
class ChunkPlan:
    """(start, end, word pieces) of each chunk, by paper key."""

    key: dict[str, Any]
    spans: dict[str, list[list[int]]]

    def chunks(self, paper: Paper) -> list[Chunk] | None:
        """The paper's chunks, as `chunk_paper` makes them, or None when it is not stored."""
        spans = self.spans.get(paper_key(paper))
        if spans is None:
            return None
        header = paper.title + "\n"
        return [
            Chunk(f"{paper.id}::{i}", paper.id, i, header + paper.abstract[s:e], s, e, tokens)
            for i, (s, e, tokens) in enumerate(spans)
        ]

    def save(self, path: Path = PLAN_FILE) -> None:
        data = json.dumps({"key": self.key, "spans": self.spans}, sort_keys=True)
        path.write_bytes(gzip.compress(data.encode("utf-8"), mtime=0))


def make_plan(settings: Settings, papers: list[Paper], count: TokenCounter) -> ChunkPlan:
    """The plan of `papers`, chunked here (`rag vectors build`)."""
    chunking = settings.chunking
    spans = {
        paper_key(p): [
            [c.start, c.end, c.tokens]
            for c in chunk_paper(p, count, chunking.max_tokens, chunking.overlap_sentences)
        ]
        for p in papers
    }
    return ChunkPlan(plan_key(settings), spans)


def chunk_plan(settings: Settings, embeddings: Embeddings) -> ChunkPlan | None:
    """The shipped plan, when it was made for these settings and the bundled tokenizer is the
    one an ingest with `embeddings` counts with; else None."""
    if not settings.embedding.bundled_vectors or local_backend(embeddings) is None:
        return None
    try:
        data = json.loads(gzip.decompress(PLAN_FILE.read_bytes()))
    except (OSError, ValueError, EOFError):
        return None
    if not isinstance(data, dict) or data.get("key") != plan_key(settings):
        return None
    return ChunkPlan(data["key"], data["spans"])
