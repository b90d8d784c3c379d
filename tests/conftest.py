"""Shared fixtures: the real bundled model, and real Chroma indexes built once per session."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings as hypothesis_settings

from rag.index import build_index
from rag.models import LocalEmbeddings
from rag.settings import BUNDLED_CORPUS, SEED_FILES, Settings
from tests.helpers import make_settings

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
    """An index of the 38 bundled seed abstracts (do not write to it; copy it instead)."""
    settings = make_settings(tmp_path_factory.mktemp("seed-index"))
    build_index(settings, list(SEED_FILES), embeddings=embeddings)
    return settings


@pytest.fixture(scope="session")
def corpus_settings(
    tmp_path_factory: pytest.TempPathFactory, embeddings: LocalEmbeddings
) -> Settings:
    """The whole bundle (2,105 papers, the seeds merged into them), built once (a few minutes)."""
    settings = make_settings(tmp_path_factory.mktemp("corpus-index"))
    build_index(settings, [BUNDLED_CORPUS], embeddings=embeddings)
    return settings
