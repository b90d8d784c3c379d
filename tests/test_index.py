"""The store: real Chroma on tmp_path with the real bundled model.

Idempotent re-ingest (nothing re-embedded), changed papers replaced, the rebuild guard, the
weights' SHA-256 check, and a kill -9 half-way through an ingest that the same command completes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.errors import IndexMismatchError, ModelError
from rag.index.bm25 import KeywordIndex
from rag.index.ingest import SHIPPED_PAPERS_PER_BATCH, build_index
from rag.index.papers import PaperIndex
from rag.index.passages import chunk_paper, token_counter
from rag.models.minilm import bundled_model_dir, load_tokenizer, verify_weights
from rag.retrieval.retriever import Retriever
from rag.settings import Settings
from tests.helpers import (
    CORPUS_JSONL,
    ROOT,
    copy_index,
    index_snapshot,
    make_settings,
    read_jsonl,
)

RAG = Path(sys.executable).with_name("rag")


class RecordingEmbeddings(Embeddings):
    """The real model, recording every text it is asked to embed."""

    def __init__(self, inner: Any, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.calls: list[list[str]] = []

    @property
    def tokenizer(self) -> Any:
        return self.inner.tokenizer

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}


@pytest.fixture(scope="module")
def count() -> Any:
    return token_counter(load_tokenizer())


@pytest.fixture(scope="module")
def small_records(count: Any) -> list[dict[str, Any]]:
    """20 real papers plus one whose abstract needs three or more chunks."""
    records = read_jsonl(CORPUS_JSONL)
    papers = load_papers([CORPUS_JSONL])
    long_one = next(
        r
        for r, p in list(zip(records, papers, strict=True))[20:]
        if len(chunk_paper(p, count, 256)) >= 3
    )
    return records[:20] + [long_one]


@pytest.fixture(scope="module")
def small_index(
    tmp_path_factory: pytest.TempPathFactory, small_records: list[dict[str, Any]], embeddings: Any
) -> Settings:
    """An index of `small_records` (do not write to it; copy it)."""
    folder = tmp_path_factory.mktemp("small")
    settings = make_settings(folder / "index")
    build_index(
        settings, [write_jsonl(folder / "small.jsonl", small_records)], embeddings=embeddings
    )
    return settings


def expected_chunks(path: Path, count: Any) -> dict[str, str]:
    return {c.id: c.text for p in load_papers([path]) for c in chunk_paper(p, count, 256, 1)}


# Ingest and idempotence ------------------------------------------------------------------------


@pytest.mark.slow
def test_fresh_ingest_embeds_each_chunk_once_with_stable_ids(
    tmp_path: Path, small_records: list[dict[str, Any]], embeddings: Any, count: Any
) -> None:
    path = write_jsonl(tmp_path / "six.jsonl", small_records[:5] + small_records[-1:])
    settings = make_settings(tmp_path / "index")
    recorder = RecordingEmbeddings(embeddings)
    report = build_index(settings, [path], embeddings=recorder)
    wanted = expected_chunks(path, count)
    assert (report.added, report.updated, report.unchanged) == (6, 0, 0)
    assert report.chunks == report.embedded_chunks == len(wanted) >= 8
    assert sorted(recorder.texts) == sorted(wanted.values())  # each chunk embedded once
    snapshot = index_snapshot(settings)
    assert snapshot["chunk_texts"] == wanted  # ids are paper_id::n, texts title + sentences
    assert snapshot["papers"] == 6
    assert snapshot["embedding_model"] == "all-MiniLM-L6-v2"


def test_chroma_holds_no_documents_and_an_index_that_has_them_still_reads(
    tmp_path: Path, small_index: Settings, small_records: list[dict[str, Any]], embeddings: Any
) -> None:
    # Chroma indexes documents for a full-text search nothing uses, which tripled its writes:
    # the abstract is paper metadata and a chunk's text is rebuilt from it.
    index = PaperIndex.open(small_index, embeddings)
    assert set(index.chunks.get(include=["documents"])["documents"]) == {None}
    assert set(index.papers.get(include=["documents"])["documents"]) == {None}
    papers = {p.id: p for p in load_papers([write_jsonl(tmp_path / "s.jsonl", small_records)])}
    assert {p.id: p.abstract for p in index.all_papers()} == {
        i: p.abstract for i, p in papers.items()
    }
    ids, _, texts = index.chunk_texts()
    assert dict(zip(ids, texts, strict=True)) == index_snapshot(small_index)["chunk_texts"]

    # The layout before: the abstract and the chunk text as Chroma documents.
    old = copy_index(small_index, tmp_path / "old")
    index = PaperIndex.open(old, embeddings)
    got = index.papers.get(include=["metadatas", "embeddings"])
    metas = [{k: v for k, v in m.items() if k != "abstract"} for m in got["metadatas"]]
    index.papers.upsert(
        ids=got["ids"],
        embeddings=got["embeddings"],
        metadatas=metas,
        documents=[papers[i].abstract for i in got["ids"]],
    )
    chunks = index.chunks.get(include=["metadatas", "embeddings"])
    old_texts = {c: f"stored {c}" for c in chunks["ids"]}
    index.chunks.upsert(
        ids=chunks["ids"],
        embeddings=chunks["embeddings"],
        metadatas=chunks["metadatas"],
        documents=[old_texts[c] for c in chunks["ids"]],
    )
    assert {p.id: p.abstract for p in index.all_papers()} == {
        i: p.abstract for i, p in papers.items()
    }
    ids, _, texts = index.chunk_texts()
    assert dict(zip(ids, texts, strict=True)) == old_texts


def test_reingest_of_unchanged_papers_embeds_nothing(
    tmp_path: Path, small_index: Settings, small_records: list[dict[str, Any]], embeddings: Any
) -> None:
    settings = copy_index(small_index, tmp_path / "index")
    before = index_snapshot(settings)
    path = write_jsonl(tmp_path / "same.jsonl", small_records)
    for _ in range(2):
        recorder = RecordingEmbeddings(embeddings)
        report = build_index(settings, [path], embeddings=recorder)
        assert recorder.calls == []
        assert (report.added, report.updated, report.unchanged) == (0, 0, 21)
        assert report.embedded_chunks == 0 and report.chunks == before["chunks"]
        assert index_snapshot(settings) == before


def test_rag_ingest_again_reports_everything_unchanged(
    tmp_path: Path, seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = copy_index(seed_settings, tmp_path / "index")
    before = index_snapshot(settings)
    # The seeds preset: the seed files alone (with no path, ingest reads the whole bundle).
    assert main(["ingest", "--config", "seeds", "--index", str(settings.store.index_dir)]) == 0
    out = capsys.readouterr().out
    assert "papers: 0 added, 0 updated, 38 unchanged" in out
    assert f"chunks: {before['chunks']} in the index, 0 embedded now" in out
    assert index_snapshot(settings) == before


def test_stats_json_has_exactly_the_documented_keys(
    seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--json", "--index", str(seed_settings.store.index_dir)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert set(stats) == {"papers", "untitled", "chunks", "embedding_model"}
    snapshot = index_snapshot(seed_settings)
    assert stats == {
        "papers": 38,
        "untitled": 38,  # the seed files alone: no title list names any of them
        "chunks": snapshot["chunks"],
        "embedding_model": "all-MiniLM-L6-v2",
    }
    assert snapshot["chunks"] > 38  # long abstracts have several chunks


# Changed papers ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_changed_paper_is_replaced_and_only_it_is_embedded(
    tmp_path: Path,
    small_index: Settings,
    small_records: list[dict[str, Any]],
    embeddings: Any,
    count: Any,
) -> None:
    settings = copy_index(small_index, tmp_path / "index")
    before = index_snapshot(settings)
    records = [dict(r) for r in small_records]
    changed = records[3]
    changed["abstract"] += " We also release a zanzibarite benchmark of quokka tasks."
    path = write_jsonl(tmp_path / "edited.jsonl", records)
    recorder = RecordingEmbeddings(embeddings)
    report = build_index(settings, [path], embeddings=recorder)

    assert (report.added, report.updated, report.unchanged) == (0, 1, 20)
    wanted = expected_chunks(path, count)
    new_ids = sorted(i for i in wanted if i.startswith(changed["id"] + "::"))
    assert sorted(recorder.texts) == sorted(wanted[i] for i in new_ids)
    after = index_snapshot(settings)
    assert after["chunk_texts"] == wanted  # no duplicates, no stale chunks
    assert after["papers"] == 21
    assert "zanzibarite" in after["chunk_texts"][new_ids[-1]]
    assert after["paper_hashes"][changed["id"]] != before["paper_hashes"][changed["id"]]
    others = {k: v for k, v in before["paper_hashes"].items() if k != changed["id"]}
    assert {k: after["paper_hashes"][k] for k in others} == others

    # The keyword index follows: the new sentence is searchable.
    index = PaperIndex.open(settings, embeddings)
    hits = Retriever(index, embeddings, settings.retrieval).search(
        "zanzibarite quokka", mode="keyword"
    )
    assert hits[0].paper.id == changed["id"]
    assert hits[0].paper.abstract.endswith("quokka tasks.")


def test_a_paper_with_fewer_chunks_leaves_no_stale_chunks(
    tmp_path: Path,
    small_index: Settings,
    small_records: list[dict[str, Any]],
    embeddings: Any,
    count: Any,
) -> None:
    settings = copy_index(small_index, tmp_path / "index")
    long_id = small_records[-1]["id"]
    before = index_snapshot(settings)
    old_ids = [i for i in before["chunk_ids"] if i.startswith(long_id + "::")]
    assert len(old_ids) >= 3
    records = [dict(r) for r in small_records]
    records[-1]["abstract"] = "A single short sentence replaces the long abstract."
    path = write_jsonl(tmp_path / "shorter.jsonl", records)
    recorder = RecordingEmbeddings(embeddings)
    report = build_index(settings, [path], embeddings=recorder)

    assert (report.updated, report.unchanged, report.embedded_chunks) == (1, 20, 1)
    after = index_snapshot(settings)
    assert [i for i in after["chunk_ids"] if i.startswith(long_id + "::")] == [f"{long_id}::0"]
    assert after["chunks"] == before["chunks"] - len(old_ids) + 1
    assert after["chunk_texts"] == expected_chunks(path, count)
    assert len(recorder.texts) == 1


@pytest.mark.slow
def test_a_crash_before_the_keyword_index_is_saved_is_repaired_by_the_next_run(
    tmp_path: Path,
    small_index: Settings,
    small_records: list[dict[str, Any]],
    embeddings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """All chunks stored, then the process dies before BM25 is refreshed: the re-run fixes it.

    A kill -9 cannot be timed to land in that window, so reading the old BM25 index raises.
    """
    settings = copy_index(small_index, tmp_path / "index")
    more = read_jsonl(CORPUS_JSONL)[500:505]
    path = write_jsonl(tmp_path / "more.jsonl", small_records + more)

    def crash(*args: Any, **kwargs: Any) -> KeywordIndex:
        raise RuntimeError("simulated crash")

    with monkeypatch.context() as patched:
        patched.setattr(KeywordIndex, "load", crash)
        with pytest.raises(RuntimeError, match="simulated crash"):
            build_index(settings, [path], embeddings=embeddings)
    recorder = RecordingEmbeddings(embeddings)
    report = build_index(settings, [path], embeddings=recorder)
    assert (report.added, report.unchanged) == (0, 26) and recorder.calls == []
    keyword = PaperIndex.open(settings, embeddings).keyword_index()
    assert sorted(keyword.chunk_ids) == index_snapshot(settings)["chunk_ids"]
    hits = Retriever(PaperIndex.open(settings, embeddings), embeddings, settings.retrieval).search(
        more[2]["title"], mode="keyword"
    )
    assert hits[0].paper.id == more[2]["id"]


def refuse_to_build(*args: Any, **kwargs: Any) -> KeywordIndex:
    raise AssertionError("KeywordIndex.build was called: the BM25 cache was not read back")


def test_a_second_process_and_an_unchanged_reingest_read_the_bm25_cache(
    tmp_path: Path, small_index: Settings, embeddings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new PaperIndex (as in a new `rag search`) loads BM25 from disk, whole and searchable;
    so does a re-ingest of the same papers."""
    settings = copy_index(small_index, tmp_path / "index")
    small_records = read_jsonl(small_index.store.index_dir.parent / "small.jsonl")
    built = PaperIndex.open(settings, embeddings).keyword_index()
    question = small_records[3]["title"]
    monkeypatch.setattr(KeywordIndex, "build", refuse_to_build)
    loaded = PaperIndex.open(settings, embeddings).keyword_index()
    assert loaded is not built
    assert (loaded.generation, loaded.chunk_ids, loaded.paper_ids) == (
        built.generation,
        built.chunk_ids,
        built.paper_ids,
    )
    assert loaded.term_counts == built.term_counts and loaded.term_counts
    hits = loaded.search(question, 5)
    assert hits == built.search(question, 5)
    assert loaded.paper_ids[loaded.chunk_ids.index(hits[0][0])] == small_records[3]["id"]
    assert loaded.unknown_terms(f"sourdough tokamak {question}") == ["sourdough", "tokamak"]

    path = write_jsonl(tmp_path / "same.jsonl", small_records)
    report = build_index(settings, [path], embeddings=embeddings)
    assert (report.added, report.updated, report.unchanged) == (0, 0, len(small_records))


# The rebuild guard ---------------------------------------------------------------------------


def test_different_chunking_or_embeddings_need_a_rebuild(
    tmp_path: Path, small_index: Settings, small_records: list[dict[str, Any]], embeddings: Any
) -> None:
    settings = copy_index(small_index, tmp_path / "index")
    before = index_snapshot(settings)
    smaller = make_settings(settings.store.index_dir, chunking={"max_tokens": 128})
    other_model = RecordingEmbeddings(embeddings, name="some-other-model")
    path = write_jsonl(tmp_path / "same.jsonl", small_records)
    for config, model, wrong in [
        (smaller, embeddings, "chunks of 256 tokens"),
        (settings, other_model, "all-MiniLM-L6-v2"),
    ]:
        with pytest.raises(IndexMismatchError) as e:
            PaperIndex.open(config, model)
        assert "--rebuild" in str(e.value) and wrong in str(e.value)
        with pytest.raises(IndexMismatchError, match="--rebuild"):
            build_index(config, [path], embeddings=model)
    assert "some-other-model" in str(e.value)
    assert other_model.calls == []
    assert index_snapshot(settings) == before


@pytest.mark.slow
def test_rag_ingest_rebuild_switches_the_chunking(
    tmp_path: Path,
    small_index: Settings,
    small_records: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = copy_index(small_index, tmp_path / "index")
    before = index_snapshot(settings)
    config = tmp_path / "small-chunks.toml"
    config.write_text("[chunking]\nmax_tokens = 128\n")
    path = write_jsonl(tmp_path / "same.jsonl", small_records)
    args = [str(path), "--index", str(settings.store.index_dir), "--config", str(config)]

    assert main(["ingest", *args]) != 0
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "rag ingest --rebuild" in err
    assert index_snapshot(settings) == before
    assert (
        main(
            [
                "search",
                "attention",
                "--index",
                str(settings.store.index_dir),
                "--config",
                str(config),
            ]
        )
        != 0
    )
    assert "--rebuild" in capsys.readouterr().err

    assert main(["ingest", *args, "--rebuild"]) == 0
    assert "papers: 21 added, 0 updated, 0 unchanged" in capsys.readouterr().out
    after = index_snapshot(settings)
    assert after["papers"] == 21 and after["chunks"] > before["chunks"]
    assert {i.split("::")[0] for i in after["chunk_ids"]} == set(after["paper_hashes"])
    # Now the small chunks are the index's own, and the default ones are refused.
    assert (
        main(["stats", "--json", "--index", str(settings.store.index_dir), "--config", str(config)])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["chunks"] == after["chunks"]
    assert main(["stats", "--index", str(settings.store.index_dir)]) != 0
    assert "chunks of 128 tokens" in capsys.readouterr().err


# The weights' SHA-256 -------------------------------------------------------------------------


@pytest.mark.slow
def test_bundled_weights_pass_and_a_flipped_byte_fails(tmp_path: Path) -> None:
    verify_weights(bundled_model_dir())  # the real weights pass
    copy = tmp_path / "model"
    copy.mkdir()
    weights = copy / "model.safetensors"
    shutil.copyfile(bundled_model_dir() / "model.safetensors", weights)
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    with pytest.raises(ModelError) as e:
        verify_weights(copy)
    message = str(e.value)
    assert str(weights) in message and "SHA-256" in message and "reinstall" in message
    with pytest.raises(ModelError, match="does not match"):
        verify_weights(bundled_model_dir(), expected="0" * 64)
    weights.unlink()
    with pytest.raises(ModelError, match="missing"):
        verify_weights(copy)


def test_tampered_weights_stop_the_cli_with_one_line(
    tmp_path: Path,
    seed_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    copy = tmp_path / "model"
    copy.mkdir()
    data = bytearray((bundled_model_dir() / "model.safetensors").read_bytes())
    data[1000] ^= 0xFF
    (copy / "model.safetensors").write_bytes(bytes(data))
    monkeypatch.setattr("rag.models.minilm.bundled_model_dir", lambda: copy)
    code = main(["search", "attention masks", "--index", str(seed_settings.store.index_dir)])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "SHA-256" in err and "Traceback" not in err


# kill -9 --------------------------------------------------------------------------------------


def rag_stats(index_dir: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(RAG), "stats", "--json", "--index", str(index_dir)],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.slow  # 400 papers embedded twice, three `rag` processes
def test_kill_9_mid_ingest_then_the_same_command_completes(tmp_path: Path, embeddings: Any) -> None:
    # Real papers: three whole batches and a partial one. They are bundled papers, so the
    # shipped vectors hold them and batches are rag.index.ingest.SHIPPED_PAPERS_PER_BATCH.
    batch = SHIPPED_PAPERS_PER_BATCH
    total = 3 * batch + 16
    path = write_jsonl(tmp_path / "papers.jsonl", read_jsonl(CORPUS_JSONL)[:total])
    reference = make_settings(tmp_path / "reference")
    build_index(reference, [path], embeddings=embeddings)

    index_dir = tmp_path / "interrupted"
    command = [str(RAG), "ingest", str(path), "--index", str(index_dir)]
    progress = tmp_path / "progress.txt"
    with progress.open("w") as err:
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=err, env=clean_env(), cwd=ROOT
        )
        try:
            # Wait for two batches, then kill half-way through the third (the progress bar
            # redraws late at times, so later than that may be past the end).
            marks: dict[str, float] = {}
            deadline = time.monotonic() + 600
            while len(marks) < 2:
                text = progress.read_text(errors="replace")
                for mark in (f"{batch}/{total}", f"{2 * batch}/{total}"):
                    if mark in text:
                        marks.setdefault(mark, time.monotonic())
                assert proc.poll() is None, f"ingest ended before it was killed: {text[-500:]}"
                assert time.monotonic() < deadline, "no progress from rag ingest"
                time.sleep(0.02)
            batch_seconds = marks[f"{2 * batch}/{total}"] - marks[f"{batch}/{total}"]
            time.sleep(batch_seconds * 0.5)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL

    partial = rag_stats(index_dir)
    assert 2 * batch <= partial["papers"] < total

    done = subprocess.run(
        command, capture_output=True, text=True, env=clean_env(), cwd=ROOT, timeout=600
    )
    assert done.returncode == 0, done.stderr
    stored = partial["papers"]
    assert f"papers: {total - stored} added, 0 updated, {stored} unchanged" in done.stdout

    final, wanted = index_snapshot(make_settings(index_dir)), index_snapshot(reference)
    assert final["paper_hashes"] == wanted["paper_hashes"]
    assert final["chunk_ids"] == wanted["chunk_ids"]
    assert final == wanted
    assert rag_stats(index_dir) == {
        "papers": total,
        "untitled": 0,  # papers of the JSONL, each with its title
        "chunks": wanted["chunks"],
        "embedding_model": "all-MiniLM-L6-v2",
    }

    # Search works on the completed index, dense and keyword alike.
    settings = make_settings(index_dir)
    index = PaperIndex.open(settings, embeddings)
    assert sorted(index.keyword_index().chunk_ids) == wanted["chunk_ids"]
    retriever = Retriever(index, embeddings, settings.retrieval)
    for record in read_jsonl(path)[::80]:
        # Among 1,552 papers a title's nearest vector is not always its own (DarkBench's finds
        # MMTEB's first): dense search finds it near the top, hybrid search first.
        dense = retriever.search(record["title"], mode="dense", k=5)
        assert record["id"] in [hit.paper.id for hit in dense]
        assert retriever.search(record["title"])[0].paper.id == record["id"]
