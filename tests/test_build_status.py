"""The build record beside the index: what `make run`'s page reads while the first build runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.cli.main import main
from rag.errors import StaleVectorsError
from rag.index.build_status import (
    BuildStatus,
    index_is_built,
    read_build_status,
    recording_build,
    status_path,
)
from rag.index.ingest import build_index
from tests.helpers import CORPUS_JSONL, ROOT, make_settings, three_seed_papers

APP = str(ROOT / "ui" / "app.py")
QUESTION = "How do language models handle long contexts?"


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    return three_seed_papers(tmp_path / "small.jsonl")


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_build_is_recorded_while_it_runs_and_cleared_when_done(
    tmp_path: Path, small_corpus: Path, embeddings: Any
) -> None:
    settings = make_settings(tmp_path / "index")
    seen: list[BuildStatus | None] = []
    with recording_build(settings) as progress:
        # Before the ingest reports anything, the index is already marked unfinished.
        seen.append(read_build_status(settings))

        def watch(papers: int, total: int) -> None:
            progress(papers, total)
            seen.append(read_build_status(settings))

        build_index(settings, [small_corpus], embeddings=embeddings, progress=watch)
    first, *during = seen
    assert first is not None and (first.done, first.total) == (0, 0) and first.running
    assert during and all(s is not None and s.pid == os.getpid() and s.running for s in during)
    assert [(s.done, s.total) for s in during if s] == [(0, 3), (3, 3)]
    assert read_build_status(settings) is None and index_is_built(settings)


def test_a_failed_build_leaves_its_record_and_never_overwrites_anothers(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "index")
    # Failing before the ingest began (bad input, say): there is nothing to finish.
    with pytest.raises(RuntimeError), recording_build(settings):
        raise RuntimeError("bad input")
    assert read_build_status(settings) is None
    # Failing half-way: the index is unfinished, and the record says so.
    with pytest.raises(RuntimeError), recording_build(settings) as progress:
        progress(128, 2123)
        raise RuntimeError("the Chroma server went away")
    left = read_build_status(settings)
    assert left is not None and left.pid == os.getpid() and (left.done, left.total) == (128, 2123)
    status_path(settings).unlink()
    # Another build's record (say, the one `make run` started) is not replaced by a newcomer.
    other = {"pid": 1, "done": 50, "total": 2123, "started": 1.0, "updated": 2.0}
    status_path(settings).write_text(json.dumps(other))
    with pytest.raises(RuntimeError), recording_build(settings):
        raise RuntimeError("refused by the index lock")
    assert read_build_status(settings) == BuildStatus(**other)
    other["pid"] = dead_pid()
    status_path(settings).write_text(json.dumps(other))
    status = read_build_status(settings)
    assert status is not None and not status.running


@pytest.mark.slow
def test_ingest_if_needed_builds_once_and_finishes_an_interrupted_build(
    tmp_path: Path,
    small_corpus: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    index = tmp_path / "index"
    settings = make_settings(index)
    monkeypatch.setenv("RAG_CORPUS", json.dumps([str(small_corpus)]))
    argv = ["ingest", "--if-needed", "--index", str(index)]
    assert main(argv) == 0
    assert "papers: 3 added" in capsys.readouterr().out
    assert index_is_built(settings) and read_build_status(settings) is None

    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "is ready" in captured.err and "papers:" not in captured.out

    # A build that died (its record left behind) is finished by the next run.
    dead = {"pid": dead_pid(), "done": 1, "total": 3, "started": 1.0, "updated": 2.0}
    status_path(settings).write_text(json.dumps(dead))
    assert not index_is_built(settings)
    assert main(argv) == 0
    assert "papers: 0 added, 0 updated, 3 unchanged" in capsys.readouterr().out
    assert read_build_status(settings) is None


def start_app(monkeypatch: pytest.MonkeyPatch, index: Path, corpus: Path) -> AppTest:
    for name in ("RAG_CONFIG", "OPENAI_API_KEY", "RAG_LLM__BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", str(index))
    monkeypatch.setenv("RAG_LLM__MODEL", "offline")
    monkeypatch.setenv("RAG_CORPUS", json.dumps([str(corpus)]))
    monkeypatch.setenv("RAG_UI__FEEDBACK_PATH", str(index.parent / "feedback.jsonl"))
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def test_the_progress_wording_claims_no_embedding() -> None:
    """A build with the shipped vectors embeds nothing: the bar says papers stored."""
    from ui.index_view import build_message

    for done in (640, 2123):
        status = BuildStatus(pid=1, done=done, total=2123, started=0.0, updated=32.0)
        text = build_message(status)
        assert f"{done:,} " in text and "papers stored" in text and "embedded" not in text


@pytest.mark.slow
def test_the_page_opened_during_a_build_shows_its_progress_then_the_chat(
    tmp_path: Path, small_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    settings = make_settings(index)
    running = {"pid": os.getpid(), "done": 640, "total": 2123, "started": 0.0, "updated": 32.0}
    status_path(settings).write_text(json.dumps(running))
    at = start_app(monkeypatch, index, small_corpus)
    [bar] = at.get("progress")
    assert "640 of 2,123 papers stored, about 74 s left" in bar.proto.text
    assert not [b for b in at.button if "index" in b.label]  # nothing to click: it is coming
    assert "updates by itself" in " ".join(c.value for c in at.caption)

    # The build that died: the page says so and finishes it, then the chat opens.
    status_path(settings).write_text(json.dumps({**running, "pid": dead_pid()}))
    at = start_app(monkeypatch, index, small_corpus)
    assert "stopped at 640 of 2,123 papers" in " ".join(w.value for w in at.warning)
    assert not at.get("progress")
    next(b for b in at.button if b.label == "Finish building the index").click().run()
    assert not at.exception, at.exception
    assert read_build_status(settings) is None and index_is_built(settings)
    assert "Indexed 3 papers" in " ".join(s.value for s in at.success)
    assert "No index open." not in " ".join(c.value for c in at.sidebar.caption)


# An ingest into the index the page serves (issue 22, item 7) --------------------------------


def test_only_an_ingest_into_a_complete_index_records_that_it_keeps_serving(
    tmp_path: Path, small_corpus: Path, embeddings: Any
) -> None:
    settings = make_settings(tmp_path / "index")
    with recording_build(settings) as progress:  # the first build: nothing to serve yet
        progress(0, 3)
        status = read_build_status(settings)
        assert status is not None and not status.serving
        build_index(settings, [small_corpus], embeddings=embeddings)
    with recording_build(settings) as progress:
        progress(0, 3)
        status = read_build_status(settings)
        assert status is not None and status.serving
    with recording_build(settings, keeps_index=False) as progress:  # --rebuild drops it
        progress(0, 3)
        status = read_build_status(settings)
        assert status is not None and not status.serving


def test_a_first_build_is_served_once_the_index_is_whole_while_its_map_is_written(
    tmp_path: Path, small_corpus: Path, embeddings: Any
) -> None:
    # `rag ingest` marks the record searchable before the topic map: the page's chat opens
    # then (a first start waited 1.4 s more for a map it does not need).
    settings = make_settings(tmp_path / "index")
    with recording_build(settings, keeps_index=False) as record:
        build_index(settings, [small_corpus], embeddings=embeddings, progress=record)
        status = read_build_status(settings)
        assert status is not None and not status.serving and status.done == 3
        record.searchable()
        status = read_build_status(settings)
        assert status is not None and status.serving and status.running
        assert (status.done, status.total) == (3, 3)
    assert read_build_status(settings) is None


@pytest.mark.slow  # over a second on 2 cores
def test_rag_ingest_marks_the_index_searchable_before_it_writes_the_map(
    tmp_path: Path, small_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rag.cli.explore

    settings = make_settings(tmp_path / "index")
    seen: list[BuildStatus | None] = []
    real = rag.cli.explore.refresh_map
    monkeypatch.setattr(
        rag.cli.explore,
        "refresh_map",
        lambda s: (seen.append(read_build_status(settings)), real(s))[1],
    )
    index = str(settings.store.index_dir)
    assert main(["ingest", str(small_corpus), "--index", index, "--config", "offline"]) == 0
    assert len(seen) == 1 and seen[0] is not None and seen[0].serving
    assert read_build_status(settings) is None


def chat_text(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown) + " ".join(e.value for e in at.error)


@pytest.mark.slow
def test_the_chat_keeps_answering_during_an_ingest_into_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embeddings: Any
) -> None:
    """`rag ingest` in another process adds papers to the index the page has open: questions
    asked meanwhile are answered from it (they were "Not sent: the index is not open"), and
    the next question after the ingest sees the new papers."""
    papers = [json.loads(line) for line in CORPUS_JSONL.read_text().splitlines()[:200]]
    first, everything = tmp_path / "first.jsonl", tmp_path / "all.jsonl"
    first.write_text("".join(json.dumps(p) + "\n" for p in papers[:20]))
    everything.write_text("".join(json.dumps(p) + "\n" for p in papers))
    index = tmp_path / "index"
    settings = make_settings(index)
    build_index(settings, [first], embeddings=embeddings)
    at = start_app(monkeypatch, index, first)
    at.chat_input[0].set_value(QUESTION).run()
    assert "Not sent" not in chat_text(at)

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    command = [sys.executable, "-m", "rag.cli.main", "ingest", "--index", str(index)]
    child = subprocess.Popen(
        [*command, str(everything)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        asked = 0
        while child.poll() is None:
            status = read_build_status(settings)
            if status is None or not status.done:
                subprocess.run(["sleep", "0.2"], check=True)
                continue
            at.chat_input[0].set_value(QUESTION).run()
            asked += 1
            assert not at.exception, at.exception
            shown = chat_text(at)
            assert "Not sent" not in shown and "not open" not in shown, shown[-300:]
            if child.poll() is None:
                assert "An ingest into this index is running" in " ".join(
                    c.value for c in at.caption
                )
            if asked >= 3:
                break
        assert child.wait(timeout=600) == 0, child.stderr.read() if child.stderr else ""
    finally:
        if child.poll() is None:
            child.kill()
    assert asked >= 1
    assert len(at.session_state.turns) == 1 + asked
    assert all(t.answer is not None for t in at.session_state.turns)
    at.chat_input[0].set_value(QUESTION).run()  # the next question: the new generation
    assert "200" in " ".join(m.value for m in at.sidebar.markdown)  # papers in the index
    assert "An ingest" not in " ".join(c.value for c in at.caption)


@pytest.mark.slow
def test_a_reader_that_lived_through_an_ingest_reads_the_new_papers_vectors(
    tmp_path: Path, embeddings: Any
) -> None:
    """In the page's process Chroma's read of the new papers' vectors failed after another
    process ingested ("Error executing plan: Internal error: Error finding id": the embedded
    client keeps the HNSW segments it loaded), so related papers and the map were gone until a
    restart (issue 22, item 7). The new generation reopens the client: the same process reads
    every paper's vector, relates and maps the new ones, and reads once per generation."""
    from rag.answer.pipeline import open_assistant
    from rag.explore.related import related_papers
    from rag.explore.topicmap import load_topic_map
    from ui import explore

    lines = CORPUS_JSONL.read_text().splitlines()
    first, more = tmp_path / "first.jsonl", tmp_path / "more.jsonl"
    first.write_text("\n".join(lines[:30]) + "\n")
    more.write_text("\n".join(lines[:60]) + "\n")
    settings = make_settings(tmp_path / "index")
    build_index(settings, [first], embeddings=embeddings)
    assistant = open_assistant(settings, embeddings=embeddings)
    before = explore.corpus_of(assistant)
    assert len(before.papers) == 30
    command = [sys.executable, "-m", "rag.cli.main", "ingest", "--index", str(tmp_path / "index")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    subprocess.run([*command, str(more)], env=env, check=True, capture_output=True)
    after = explore.corpus_of(assistant)  # raised StoreError before the fix
    assert len(after.papers) == 60 and after.generation != before.generation
    added = sorted(set(after.ids) - set(before.ids))
    assert len(added) == 30
    assert len(related_papers(after, added[0], k=5)) == 5
    topic_map = load_topic_map(assistant.retriever.index, corpus=after)
    assert sorted(topic_map.paper_ids) == sorted(after.ids)
    import rag

    read_calls = []
    original = rag.read_paper_vectors  # ui.explore imports it from `rag` when it reads
    rag.read_paper_vectors = lambda *a: read_calls.append(1) or original(*a)  # type: ignore[attr-defined]
    try:
        for _ in range(5):
            assert len(explore.corpus_of(assistant).papers) == 60
    finally:
        rag.read_paper_vectors = original  # type: ignore[attr-defined]
    assert read_calls == []  # read once for this generation


@pytest.mark.slow  # over a second on 2 cores
def test_an_index_of_int8_vectors_is_rebuilt_by_the_next_make_run(
    tmp_path: Path, small_corpus: Path, embeddings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """int8 vectors (the default before issue 28) depend on the CPU: `rag ingest --if-needed`
    (what `make run` calls) rebuilds such an index with float32 ones instead of refusing it,
    and an index from before the precision was recorded counts as int8."""
    from rag.index.papers import PaperIndex
    from rag.models.minilm import LocalEmbeddings

    index_dir = tmp_path / "index"
    old = make_settings(index_dir, embedding={"backend": "onnx-int8"})
    build_index(old, [small_corpus], embeddings=LocalEmbeddings(backend="onnx-int8"))
    assert index_is_built(old)
    settings = make_settings(index_dir)
    assert not index_is_built(settings)  # a file check: no Chroma opened to see it
    # As an index written before the precision was recorded: no "vectors" in its manifest.
    index = PaperIndex.open(old, LocalEmbeddings(backend="onnx-int8"))
    meta = {k: v for k, v in index.manifest().as_metadata().items() if k != "vectors"}
    index.chunks.modify(metadata=meta)
    assert index.manifest().vectors == "int8"
    stale = r"int8 vectors.*float32 vectors.*`rag ingest` rebuilds"
    with pytest.raises(StaleVectorsError, match=stale):
        PaperIndex.open(settings, embeddings)  # a reader is told, as before

    args = ["ingest", "--if-needed", "--index", str(index_dir), "--config", "offline"]
    assert main([*args, str(small_corpus)]) == 0
    assert "held int8 vectors; rebuilt with float32" in capsys.readouterr().out
    rebuilt = PaperIndex.open(settings, embeddings)
    assert rebuilt.manifest().vectors == "float32" and rebuilt.papers.count() == 3
    assert index_is_built(settings)
    assert main([*args, str(small_corpus)]) == 0  # and once rebuilt, it is left alone
    assert "is ready" in capsys.readouterr().err
