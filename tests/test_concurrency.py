"""Two `rag ingest` at once on one embedded index, and many sessions sharing one Retriever.

The ingests are real processes started together: with store.lock_timeout = 0 exactly one
writes and the other fails at once with a clear line; with a timeout the second waits and
finds nothing left to do. Either way the index ends identical to one built alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rag.index.papers import PaperIndex
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.retriever import Retriever
from rag.settings import Settings
from tests.helpers import (
    EVAL_QUESTIONS,
    ROOT,
    copy_index,
    index_snapshot,
    make_settings,
    read_jsonl,
)

RAG = str(Path(sys.executable).with_name("rag"))


def start_ingests(index_dir: Path, lock_timeout: float) -> list[subprocess.Popen[str]]:
    env = {
        **os.environ,
        "RAG_LLM__MODEL": "offline",
        "RAG_STORE__LOCK_TIMEOUT": str(lock_timeout),
    }
    command = [RAG, "ingest", "--config", "seeds", "--index", str(index_dir), "--json"]
    return [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env
        )
        for _ in range(2)
    ]


def finish(procs: list[subprocess.Popen[str]]) -> list[tuple[int, str, str]]:
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        results.append((proc.returncode, out, err))
    return results


@pytest.mark.slow  # two `rag ingest` processes, each loading the model
def test_two_ingests_at_once_one_fails_clearly_and_the_index_is_whole(
    tmp_path: Path, seed_settings: Settings
) -> None:
    index_dir = tmp_path / "index"
    results = finish(start_ingests(index_dir, lock_timeout=0))
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    (_, out, _), (_, _, err) = sorted(results)
    assert json.loads(out)["added"] == 38
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: another `rag ingest` is writing to {index_dir}")
    assert "set store.lock_timeout to wait" in lines[0]
    assert index_snapshot(make_settings(index_dir)) == index_snapshot(seed_settings)


@pytest.mark.slow  # two `rag ingest` processes, each loading the model
def test_with_a_lock_timeout_the_second_ingest_waits_and_finds_nothing_to_do(
    tmp_path: Path, seed_settings: Settings
) -> None:
    index_dir = tmp_path / "index"
    results = finish(start_ingests(index_dir, lock_timeout=600))
    assert [code for code, _, _ in results] == [0, 0], results
    reports = sorted((json.loads(out) for _, out, _ in results), key=lambda r: r["added"])
    assert (reports[0]["added"], reports[0]["unchanged"]) == (0, 38)
    assert (reports[1]["added"], reports[1]["unchanged"]) == (38, 0)
    assert reports[0]["embedded_chunks"] == 0
    assert index_snapshot(make_settings(index_dir)) == index_snapshot(seed_settings)


@pytest.mark.slow
def test_threads_sharing_one_retriever_get_the_sequential_results(
    tmp_path: Path, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    """4 sessions x 25 questions at once, starting with no BM25 cache so they race to build it."""
    settings = copy_index(seed_settings, tmp_path / "index")
    questions = [q["question"] for q in read_jsonl(EVAL_QUESTIONS)]
    questions = [q for q in questions if q.strip()][:100]
    assert len(questions) == 100

    def ranking(retriever: Retriever, question: str) -> list[tuple[str, float, float]]:
        return [(r.paper.id, r.score, r.similarity) for r in retriever.search(question)]

    sequential_retriever = Retriever(
        PaperIndex.open(settings, embeddings), embeddings, settings.retrieval
    )
    expected = [ranking(sequential_retriever, q) for q in questions]
    assert sum(1 for e in expected if e) == 100

    shutil.rmtree(PaperIndex.open(settings, embeddings).keyword_cache.directory)
    shared = Retriever(PaperIndex.open(settings, embeddings), embeddings, settings.retrieval)
    start = threading.Barrier(4)

    def session(worker: int) -> list[tuple[int, list[tuple[str, float, float]]]]:
        start.wait()
        return [(i, ranking(shared, questions[i])) for i in range(worker, 100, 4)]

    with ThreadPoolExecutor(4) as pool:
        done = [row for rows in pool.map(session, range(4)) for row in rows]
    assert len(done) == 100
    for i, got in done:
        assert [row[0] for row in got] == [row[0] for row in expected[i]], questions[i]
        scores = [value for row in got for value in row[1:]]
        assert scores == pytest.approx([v for row in expected[i] for v in row[1:]], abs=1e-6)
