"""Chunk boundaries shipped with the bundled corpus, so a first ingest runs no tokenizer.

`rag.index.passages` measures every sentence with MiniLM's tokenizer: 2.6 s of an 11 s shipped
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

from rag.index.passages import TokenCounter, chunk_paper
from rag.index.shipped import FORMAT, local_backend
from rag.settings import BUNDLED_CORPUS, Settings
from rag.types import Chunk, Paper

PLAN_FILE = BUNDLED_CORPUS / "chunks.json.gz"
# Bounds of the shipped plan (the bundled corpus's: 63 kB, 0.4 MB inflated, at most 5 chunks a
# paper). An abstract is at most 20,000 characters (rag.corpus.loaders): far fewer chunks.
MAX_PLAN_BYTES = 64 << 20
MAX_CHUNKS = 64
MAX_SPAN = 1 << 20


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
        """The paper's chunks, as `chunk_paper` makes them, or None when it is not stored or its
        stored spans do not cover its abstract in order (then it is chunked as always)."""
        spans = self.spans.get(paper_key(paper))
        if spans is None:
            return None
        if not spans_fit(spans, paper.abstract):
            from rag.common.side_files import warn

            warn(
                f"{PLAN_FILE}: chunk spans that do not fit their abstracts (paper {paper.id}); "
                "those papers are chunked here instead (`rag vectors chunks` rewrites it)"
            )
            return None
        header = paper.title + "\n"
        return [
            Chunk(f"{paper.id}::{i}", paper.id, i, header + paper.abstract[s:e], s, e, tokens)
            for i, (s, e, tokens) in enumerate(spans)
        ]

    def save(self, path: Path = PLAN_FILE) -> None:
        from rag.common.atomic import atomic_write

        data = json.dumps({"key": self.key, "spans": self.spans}, sort_keys=True)
        atomic_write(path, gzip.compress(data.encode("utf-8"), mtime=0))


def spans_fit(spans: list[list[int]], abstract: str) -> bool:
    """Whether `spans` are what `chunk_paper` makes of `abstract`: at most MAX_CHUNKS windows
    of it, in order, each later one starting within or just after the one before (only
    whitespace between), the first at its start and the last at its end."""
    if not 0 < len(spans) <= MAX_CHUNKS:
        return False
    if not abstract.strip():  # a title record: its title is its one chunk, spanning nothing
        return len(spans) == 1 and spans[0][:2] == [0, 0]
    end = 0
    for i, (start, stop, _) in enumerate(spans):
        if not start < stop <= len(abstract) or stop <= end:
            return False
        if i == 0 and abstract[:start].strip():
            return False
        if i > 0 and (start <= spans[i - 1][0] or abstract[end:start].strip()):
            return False
        end = stop
    return not abstract[end:].strip()


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
    from rag.common.side_files import SideFileError, gunzip, parse_json, warn
    from rag.index.shipped_manifest import read_shipped

    if not PLAN_FILE.exists():
        return None
    try:
        packed = read_shipped(PLAN_FILE, MAX_PLAN_BYTES)
        data = parse_json(gunzip(packed, MAX_PLAN_BYTES, PLAN_FILE), PLAN_FILE)
        if not isinstance(data, dict) or data.get("key") != plan_key(settings):
            return None
        return ChunkPlan(data["key"], checked_spans(data.get("spans")))
    except SideFileError as e:
        warn(f"{e}; every paper is chunked here instead (`rag vectors chunks` rewrites it)")
        return None


def checked_spans(spans: Any) -> dict[str, list[list[int]]]:
    """The plan's spans when each paper's are a list of at most MAX_CHUNKS [start, end,
    word pieces] of non-negative integers (within the abstract: `spans_fit`, at use)."""
    from rag.common.side_files import SideFileError

    if not isinstance(spans, dict):
        raise SideFileError(f"{PLAN_FILE}: no spans")
    for key, rows in spans.items():
        if not (
            isinstance(rows, list)
            and 0 < len(rows) <= MAX_CHUNKS
            and all(
                isinstance(row, list)
                and len(row) == 3
                and all(type(v) is int and 0 <= v <= MAX_SPAN for v in row)
                for row in rows
            )
        ):
            raise SideFileError(
                f"{PLAN_FILE}: paper {str(key)[:40]!r} has no list of [start, end, pieces] "
                f"spans, or more than {MAX_CHUNKS}"
            )
    return spans
