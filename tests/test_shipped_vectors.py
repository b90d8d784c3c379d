"""The vectors and topic map shipped with the bundled corpus (rag.index.shipped,
rag.explore.shipped_map): true on this machine, used only where every key matches.

The truth test recomputes a sample with the real models and needs cosine within 1e-5 of the
stored vectors (float32 vectors are the same on every CPU); when a model or chunking change
makes them stale it fails naming the command that rebuilds them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag.answer.support import CachedEmbeddings, embedded_texts
from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.corpus.seeds import load_corpus
from rag.explore.shipped_map import MAP_FILE, map_key, read_shipped_map
from rag.explore.topicmap import SEED, load_topic_map, map_path, read_cached_map
from rag.index.ingest import build_index
from rag.index.multilingual import paper_text
from rag.index.papers import PaperIndex
from rag.index.passages import chunk_paper, token_counter
from rag.index.shipped import (
    MULTILINGUAL_FILE,
    REBUILD,
    chunk_file,
    chunk_key,
    chunk_vectors,
    multilingual_key,
    multilingual_vectors,
    read_stored,
    sentence_file,
    sentence_key,
    sentence_vectors,
)
from rag.index.shipped_chunks import PLAN_FILE, chunk_plan
from rag.index.vectors import read_paper_vectors
from rag.models.minilm import LocalEmbeddings, load_tokenizer
from rag.retrieval.calibration import calibration_for
from rag.settings import BUNDLED_CORPUS, SEED_FILES, Settings, get_settings, with_overrides
from tests.helpers import CORPUS_JSONL, ROOT, make_settings, read_jsonl

DEFAULTS = get_settings()
VECTORS = DEFAULTS.embedding.precision  # float32: ONNX and torch share the shipped file


def stale(what: str) -> str:
    return f"the shipped {what} are stale: rebuild them with {REBUILD} and commit data/iclr2025/"


@pytest.fixture(scope="module")
def bundled_chunks() -> list[list[str]]:
    """The chunk texts of the bundled corpus, paper by paper, in the order an ingest reads them."""
    count = token_counter(load_tokenizer())
    chunking = DEFAULTS.chunking
    return [
        [c.text for c in chunk_paper(p, count, chunking.max_tokens, chunking.overlap_sentences)]
        for p in load_corpus([BUNDLED_CORPUS]).papers
    ]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.asarray((a * b).sum(axis=1))


@pytest.mark.slow  # 64 chunks and 20 papers embedded with the real models
def test_the_shipped_vectors_are_what_the_models_compute_here(
    bundled_chunks: list[list[str]], embeddings: LocalEmbeddings
) -> None:
    """float32 vectors do not depend on the CPU or on the batch a text is embedded in, so a
    sample recomputed here, in batches of its own, is the shipped one to within 1e-5 in cosine
    (float16 storage costs about 1e-7): a lower cosine means they are stale."""
    stored = read_stored(chunk_file(VECTORS))
    assert stored is not None, f"{chunk_file(VECTORS)} missing: {stale('vectors')}"
    assert stored.key == chunk_key(DEFAULTS, VECTORS), stale("chunk vectors")
    every = [t for texts in bundled_chunks for t in texts]
    found = stored.lookup(every)
    missing = sum(v is None for v in found)
    assert missing == 0, f"{missing} bundled chunks have no vector: {stale('vectors')}"
    rows = random.Random(28).sample(sorted(set(every)), 64)
    here = np.asarray(embeddings.embed_documents(rows))
    similarity = cosines(here, np.stack(stored.lookup(rows)))  # type: ignore[arg-type]
    assert 1.0 - similarity.min() < 1e-5, f"cosine {similarity.min():.6f}: {stale('vectors')}"

    sentences = read_stored(sentence_file(VECTORS))
    assert sentences is not None and sentences.key == sentence_key(VECTORS), stale("sentences")
    papers = load_corpus([BUNDLED_CORPUS]).papers
    every = [t for p in papers if p.abstract for t in embedded_texts(p)]
    missing = sum(v is None for v in sentences.lookup(every))
    assert missing == 0, f"{missing} sentences have no vector: {stale('sentence vectors')}"
    rows = random.Random(29).sample(sorted(set(every)), 64)
    here = np.asarray(embeddings.embed_documents(rows))
    similarity = cosines(here, np.stack(sentences.lookup(rows)))  # type: ignore[arg-type]
    assert 1.0 - similarity.min() < 1e-5, f"cosine {similarity.min():.6f}: {stale('vectors')}"

    from rag.models.multilingual import MultilingualEmbeddings

    multilingual = read_stored(MULTILINGUAL_FILE)
    assert multilingual is not None and multilingual.key == multilingual_key(), stale(
        "multilingual vectors"
    )
    texts = [paper_text(p) for p in load_corpus([BUNDLED_CORPUS]).papers]
    picked = random.Random(24).sample(texts, 20)
    stored_rows = multilingual.lookup(picked)
    assert all(v is not None for v in stored_rows), stale("multilingual vectors")
    here = np.asarray(MultilingualEmbeddings().embed_documents(picked))
    similarity = cosines(here, np.stack(stored_rows))  # type: ignore[arg-type]
    assert 1.0 - similarity.min() < 1e-5, f"cosine {similarity.min():.6f}: {stale('vectors')}"


def test_the_shipped_files_are_small_and_in_the_wheel_s_data() -> None:
    for path in (chunk_file(VECTORS), MULTILINGUAL_FILE, MAP_FILE, PLAN_FILE):
        assert path.parent == BUNDLED_CORPUS and path.stat().st_size < 4e6, path
    # ~19,400 sentences, titles and passages of 2,123 abstracts, 384 float16 numbers each
    assert sentence_file(VECTORS).stat().st_size < 16e6
    tracked = subprocess.run(
        ["git", "ls-files", "data/iclr2025"], cwd=ROOT, capture_output=True, text=True
    )
    if tracked.returncode == 0:  # a checkout: a fresh clone must have them
        shipped = (chunk_file(VECTORS), sentence_file(VECTORS), MULTILINGUAL_FILE, MAP_FILE)
        for path in (*shipped, PLAN_FILE):
            assert str(path.relative_to(ROOT)) in tracked.stdout.split(), f"{path} not committed"


def test_shipped_vectors_are_used_only_when_every_key_matches(embeddings: Any) -> None:
    assert chunk_vectors(DEFAULTS, embeddings) is not None
    assert multilingual_vectors(DEFAULTS) is not None
    assert sentence_vectors(DEFAULTS, embeddings) is not None
    off = with_overrides(DEFAULTS, {"embedding": {"bundled_vectors": False}})
    assert chunk_vectors(off, embeddings) is None and multilingual_vectors(off) is None
    assert sentence_vectors(off, embeddings) is None
    other_chunks = with_overrides(DEFAULTS, {"chunking": {"max_tokens": 128}})
    assert chunk_vectors(other_chunks, embeddings) is None
    # torch computes ONNX's float32 vectors: it reads the same file; int8 ones differ by CPU,
    # so none are shipped for it (the model is loaded only when used).
    assert chunk_vectors(DEFAULTS, LocalEmbeddings(backend="torch")) is not None
    assert chunk_vectors(DEFAULTS, LocalEmbeddings(backend="onnx-int8")) is None
    assert sentence_vectors(DEFAULTS, LocalEmbeddings(backend="onnx-int8")) is None
    assert not chunk_file("int8").exists() and not sentence_file("int8").exists()

    class OtherModel:  # any embeddings but the bundled MiniLM
        name = "all-MiniLM-L6-v2"
        backend = "onnx"

    assert chunk_vectors(DEFAULTS, OtherModel()) is None  # type: ignore[arg-type]
    assert sentence_vectors(DEFAULTS, OtherModel()) is None  # type: ignore[arg-type]


def test_an_answer_embeds_only_the_sentences_nothing_shipped_holds(embeddings: Any) -> None:
    """The answer stage's cache reads the shipped sentence vectors on first use: the bundled
    papers' titles, sentences and passages reach the model not at all, a new text does, once."""

    class Recorder(LocalEmbeddings):
        def __init__(self) -> None:
            super().__init__()
            self.asked: list[str] = []

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            self.asked += texts
            return embeddings.embed_documents(texts)

    papers = [p for p in load_corpus([BUNDLED_CORPUS]).papers if p.abstract][:5]
    shipped = [t for p in papers for t in embedded_texts(p)]
    recorder = Recorder()
    loads: list[int] = []

    def shipped_vectors() -> Any:
        loads.append(1)
        return sentence_vectors(DEFAULTS, recorder)

    cache = CachedEmbeddings(recorder, shipped=shipped_vectors)
    new = "A sentence no bundled abstract holds, about sourdough."
    got = np.asarray(cache.embed_documents([*shipped, new]))
    assert recorder.asked == [new]
    assert cache.embed_documents([new]) == [got[-1].tolist()] and recorder.asked == [new]
    assert loads == [1]  # read once
    here = np.asarray(embeddings.embed_documents(shipped[:8]))
    assert 1.0 - cosines(here, got[:8]).min() < 1e-5
    off = CachedEmbeddings(recorder)  # nothing shipped: everything is computed
    off.embed_documents(shipped[:3])
    assert recorder.asked == [new, *shipped[:3]]


@pytest.mark.slow  # over a second on 2 cores
def test_the_shipped_chunk_boundaries_are_what_chunking_computes_here(embeddings: Any) -> None:
    plan = chunk_plan(DEFAULTS, embeddings)
    rebuild = "rebuild them with `rag vectors chunks` and commit data/iclr2025/chunks.json.gz"
    assert plan is not None, f"the shipped chunk boundaries were made otherwise: {rebuild}"
    count = token_counter(load_tokenizer())
    chunking = DEFAULTS.chunking
    papers = load_corpus([BUNDLED_CORPUS]).papers
    for paper in papers:
        here = chunk_paper(paper, count, chunking.max_tokens, chunking.overlap_sentences)
        assert plan.chunks(paper) == here, f"{paper.id}: the shipped chunks are stale: {rebuild}"
    edited = dataclasses.replace(papers[0], abstract=papers[0].abstract + " Edited.")
    assert plan.chunks(edited) is None  # chunked as always
    off = with_overrides(DEFAULTS, {"embedding": {"bundled_vectors": False}})
    other_chunks = with_overrides(DEFAULTS, {"chunking": {"max_tokens": 128}})
    assert chunk_plan(off, embeddings) is None and chunk_plan(other_chunks, embeddings) is None


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


class Recording(LocalEmbeddings):
    """The bundled MiniLM, recording what it is asked to embed."""

    texts: list[str]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts = [*getattr(self, "texts", []), *texts]
        return super().embed_documents(texts)


@pytest.mark.slow  # the papers embedded once with the shipped vectors off
def test_an_ingest_takes_shipped_vectors_and_computes_an_edited_abstract(
    tmp_path: Path, bundled_chunks: list[list[str]]
) -> None:
    records = read_jsonl(CORPUS_JSONL)[:12]
    records[3] = records[3] | {"abstract": records[3]["abstract"] + " We also edited this."}
    path = write_jsonl(tmp_path / "papers.jsonl", records)
    edited = {
        c.text
        for p in load_papers([path])
        if p.id == records[3]["id"]
        for c in chunk_paper(p, token_counter(load_tokenizer()), 256, 1)
    } - {t for texts in bundled_chunks for t in texts}
    assert edited  # the chunks with the added sentence: no shipped vector
    single = {"multilingual": False}
    shipped = make_settings(tmp_path / "shipped", embedding=single)
    recorder = Recording()
    report = build_index(shipped, [path], embeddings=recorder)
    assert sorted(recorder.texts) == sorted(edited)  # only the edited paper's chunks embedded
    assert report.embedded_chunks == len(edited)
    assert report.stored_chunks == report.chunks - len(edited) > 0
    off = make_settings(tmp_path / "computed", embedding=single | {"bundled_vectors": False})
    recorder = Recording()
    computed = build_index(off, [path], embeddings=recorder)
    assert (computed.stored_chunks, computed.embedded_chunks) == (0, computed.chunks)
    assert len(recorder.texts) == computed.chunks == report.chunks

    def chunks(settings: Settings) -> dict[str, np.ndarray]:
        got = PaperIndex.open(settings, recorder).chunks.get(include=["embeddings"])
        return dict(zip(got["ids"], np.asarray(got["embeddings"]), strict=True))

    a, b = chunks(shipped), chunks(off)
    assert a.keys() == b.keys()
    ids = sorted(a)
    # The same vectors (float16 storage aside): an index computed here, in other batches.
    similarity = cosines(np.stack([a[i] for i in ids]), np.stack([b[i] for i in ids]))
    assert 1.0 - similarity.min() < 1e-5


@pytest.mark.slow  # the 2,123-paper index (built from the shipped vectors)
def test_the_first_map_of_the_bundled_corpus_is_the_shipped_one(
    corpus_settings: Settings, embeddings: LocalEmbeddings, tmp_path: Path, monkeypatch: Any
) -> None:
    import rag.explore.topicmap as topicmap

    index = PaperIndex.open(corpus_settings, embeddings)
    corpus = read_paper_vectors(index)
    weight = calibration_for(corpus_settings).layout_weight
    shipped = read_shipped_map(map_key(corpus, "tsne", SEED, weight))
    assert shipped is not None, stale("topic map")
    assert shipped.paper_ids == corpus.ids

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the map was computed")

    monkeypatch.setattr(topicmap, "compute_topic_map", refuse)
    map_path(corpus_settings).unlink(missing_ok=True)
    first = load_topic_map(index)
    assert first.as_json() == shipped.as_json()
    assert first.generation == index.current_generation()
    assert read_cached_map(map_path(corpus_settings), first.generation) is not None
    off = with_overrides(corpus_settings, {"embedding": {"bundled_vectors": False}})
    map_path(off).unlink()
    with pytest.raises(AssertionError, match="computed"):
        load_topic_map(PaperIndex.open(off, embeddings))


@pytest.mark.slow  # two `rag ingest` processes
def test_a_kill_9_before_the_map_is_repaired_by_the_next_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22, item 15: killed between the English ingest and the map, the next ingest
    (plain, or `--if-needed` as `make run` runs it) still writes the map."""
    index_dir = tmp_path / "index"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"RAG_EMBEDDING__MULTILINGUAL": "false", "PYTHONPATH": str(ROOT)}
    die_before_the_map = (
        "import os, signal, sys\n"
        "import rag.cli.explore as e\n"
        "e.refresh_map = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
        "from rag.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    seeds = [str(p) for p in SEED_FILES]
    command = [sys.executable, "-c", die_before_the_map, "ingest", *seeds]
    command += ["--index", str(index_dir)]
    killed = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    settings = make_settings(index_dir, embedding={"multilingual": False})
    path = map_path(settings)
    assert not path.exists()
    for name, value in env.items():
        if name.startswith("RAG_"):
            monkeypatch.setenv(name, value)
    for flags in (["--if-needed"], []):  # as `make run` runs it (the build record is left)
        path.unlink(missing_ok=True)
        assert main(["ingest", *seeds, "--index", str(index_dir), *flags]) == 0
        generation = PaperIndex.open(settings, LocalEmbeddings()).current_generation()
        topic_map = read_cached_map(path, generation)
        assert topic_map is not None and len(topic_map) == 38
