"""Shared fixtures: the real bundled model, and real Chroma indexes built once per session."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from rag.corpus.loaders import load_papers
from rag.index.ingest import build_index
from rag.models.minilm import LocalEmbeddings
from rag.settings import BUNDLED_CORPUS, SEED_FILES, Settings
from rag.types import Paper
from testkit.openai_server import OpenAIServer
from testkit.streamlit_app import streamlit
from tests.helpers import QUOKKA_PAPER, make_settings

# The suite fuzzes the same examples on every run, so CI cannot fail on a draw it never saw
# before; HYPOTHESIS_PROFILE=deep searches far wider, with fresh random draws.
hypothesis_settings.register_profile("default", max_examples=60, derandomize=True)
hypothesis_settings.register_profile("deep", max_examples=3000)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def embeddings() -> LocalEmbeddings:
    return LocalEmbeddings()


@pytest.fixture(scope="session")
def seed_settings(
    tmp_path_factory: pytest.TempPathFactory, embeddings: LocalEmbeddings
) -> Settings:
    """An index of the 38 bundled seed abstracts (do not write to it; copy it instead).

    Its vectors are computed here, not taken from the shipped ones, so the real encoder runs
    in the suite (it takes seconds); float32 gives the shipped vectors to within 1e-5 anyway.
    """
    settings = make_settings(
        tmp_path_factory.mktemp("seed-index"), embedding={"bundled_vectors": False}
    )
    build_index(settings, list(SEED_FILES), embeddings=embeddings)
    return settings


@pytest.fixture(scope="session")
def corpus_settings(
    tmp_path_factory: pytest.TempPathFactory, embeddings: LocalEmbeddings
) -> Settings:
    """The whole bundle (2,105 papers, the seeds merged into them), built once.

    With the vectors shipped in data/iclr2025 (rag.index.shipped), as `rag ingest` uses them:
    seconds, not the minutes of embedding 3,667 chunks and 2,123 papers here.
    """
    settings = make_settings(tmp_path_factory.mktemp("corpus-index"))
    build_index(settings, [BUNDLED_CORPUS], embeddings=embeddings)
    return settings


@pytest.fixture(scope="module")
def corpus(corpus_settings: Settings, embeddings: LocalEmbeddings) -> Any:
    """The offline assistant over the whole bundle, one per test module (its caches fresh)."""
    from rag.answer.pipeline import open_assistant

    return open_assistant(corpus_settings, embeddings=embeddings)


@pytest.fixture(scope="session")
def seed_papers() -> list[Paper]:
    """The 38 seed abstracts, as loaded from data/iclr2025 (do not change them)."""
    return load_papers(list(SEED_FILES))


@pytest.fixture
def srv() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-protocol server on loopback (testkit.openai_server), one per test."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def quokka_index(
    tmp_path_factory: pytest.TempPathFactory, seed_settings: Settings, embeddings: LocalEmbeddings
) -> Path:
    """A copy of the seed index with the hostile QuokkaNet paper added (the browser tests')."""
    root = tmp_path_factory.mktemp("browser")
    index_dir = root / "index"
    shutil.copytree(seed_settings.store.index_dir, index_dir)
    extra = root / "hostile.jsonl"
    extra.write_text(json.dumps(QUOKKA_PAPER) + "\n", encoding="utf-8")
    report = build_index(make_settings(index_dir), [*SEED_FILES, extra], embeddings=embeddings)
    assert report.added == 1
    return index_dir


@pytest.fixture(scope="module")
def quokka_app(quokka_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of `streamlit run ui/app.py` on a free loopback port, offline, over quokka_index."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.pop("OPENAI_API_KEY", None)
    env.update(
        RAG_STORE__INDEX_DIR=str(quokka_index),
        RAG_LLM__MODEL="offline",
        RAG_UI__FEEDBACK_PATH=str(tmp_path_factory.mktemp("feedback") / "feedback.jsonl"),
    )
    with (
        (tmp_path_factory.mktemp("streamlit") / "streamlit.log").open("wb") as log,
        streamlit(env, log=log) as served,
    ):
        yield served.url


@pytest.fixture
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OpenAI key, model, server or timeout from the environment, no learned window."""
    from rag.models import context

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name in ("RAG_LLM__MODEL", "RAG_LLM__BASE_URL", "RAG_LLM__TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    context.forget()


@pytest.fixture
def assistant(seed_settings: Settings, srv: OpenAIServer, embeddings: LocalEmbeddings) -> Any:
    """An assistant over the seed index whose model is the scripted server `srv`."""
    from rag.answer.pipeline import open_assistant
    from tests.scripted_model import llm_settings

    return open_assistant(llm_settings(seed_settings, srv), embeddings=embeddings)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per browser-test module (Playwright's sync API runs one at a
    time)."""
    from testkit.streamlit_app import chromium

    with chromium() as started:
        yield started
