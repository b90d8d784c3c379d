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
from rag.corpus.loaders import load_papers
from rag.index.build_status import (
    BuildStatus,
    index_is_built,
    read_build_status,
    recording_build,
    status_path,
)
from rag.index.ingest import build_index
from rag.settings import SEED_FILES
from tests.helpers import ROOT, make_settings

APP = str(ROOT / "ui" / "app.py")


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "small.jsonl"
    papers = load_papers(list(SEED_FILES))[:3]
    path.write_text(
        "".join(json.dumps({"id": p.id, "abstract": p.abstract}) + "\n" for p in papers)
    )
    return path


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
