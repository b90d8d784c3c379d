"""Shared fixtures: the real bundled model, and real Chroma indexes built once per session."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from rag.index import build_index
from rag.models import LocalEmbeddings
from rag.settings import BUNDLED_CORPUS, Settings, get_settings, with_overrides

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS_JSONL = SHARED / "data" / "iclr2025.jsonl"
DATA = Path(__file__).resolve().parent / "data"

# The suite fuzzes the same examples on every run, so CI cannot fail on a draw it never saw
# before; HYPOTHESIS_PROFILE=deep searches far wider, with fresh random draws.
hypothesis_settings.register_profile("default", max_examples=60, derandomize=True)
hypothesis_settings.register_profile("deep", max_examples=3000)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def make_settings(index_dir: Path, **sections: dict[str, Any]) -> Settings:
    """Default settings (offline model) with the index in `index_dir` and extra overrides."""
    overrides: dict[str, Any] = {
        "store": {"index_dir": str(index_dir)},
        "llm": {"model": "offline"},
    }
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return with_overrides(get_settings(), overrides)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def index_snapshot(settings: Settings) -> dict[str, Any]:
    """What an index holds, read straight from Chroma: stats, chunk ids and texts, paper hashes."""
    from rag.index import make_client

    client = make_client(settings)
    prefix = settings.store.collection
    chunks = client.get_collection(f"{prefix}_chunks").get(include=["documents", "metadatas"])
    papers = client.get_collection(f"{prefix}_papers").get(include=["metadatas"])
    return {
        "papers": len(papers["ids"]),
        "chunks": len(chunks["ids"]),
        "embedding_model": client.get_collection(f"{prefix}_chunks").metadata["embedding_model"],
        "chunk_ids": sorted(chunks["ids"]),
        "chunk_texts": dict(zip(chunks["ids"], chunks["documents"], strict=True)),
        "paper_hashes": {
            pid: meta["content_hash"]
            for pid, meta in zip(papers["ids"], papers["metadatas"], strict=True)
        },
    }


def copy_index(settings: Settings, target: Path) -> Settings:
    """A writable copy of a session index (the shared ones must not change)."""
    import shutil

    shutil.copytree(settings.store.index_dir, target)
    return with_overrides(settings, {"store": {"index_dir": str(target)}})


@pytest.fixture(scope="session")
def embeddings() -> LocalEmbeddings:
    return LocalEmbeddings()


@pytest.fixture(scope="session")
def seed_settings(
    tmp_path_factory: pytest.TempPathFactory, embeddings: LocalEmbeddings
) -> Settings:
    """An index of the 38 bundled seed abstracts (do not write to it; copy it instead)."""
    settings = make_settings(tmp_path_factory.mktemp("seed-index"))
    build_index(settings, [BUNDLED_CORPUS], embeddings=embeddings)
    return settings


@pytest.fixture(scope="session")
def corpus_settings(
    tmp_path_factory: pytest.TempPathFactory, embeddings: LocalEmbeddings
) -> Settings:
    """An index of the 2,105 real papers plus the seeds, built once (a few minutes)."""
    if not CORPUS_JSONL.exists():
        pytest.fail(f"{CORPUS_JSONL} is missing: CI needs ../shared beside the repo")
    settings = make_settings(tmp_path_factory.mktemp("corpus-index"))
    build_index(settings, [CORPUS_JSONL, BUNDLED_CORPUS], embeddings=embeddings)
    return settings
