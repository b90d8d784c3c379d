"""Faults, each with a clear message and nothing lost.

- `rag ingest` killed with SIGKILL at random points (batches of 4 papers, so the kill lands
  between or inside writes), then re-run: the index is identical to one built in one go.
  The random seed is printed on failure; RAG_FAULT_SEED=N replays it.
- Index folders that are missing, a file, corrupt, or built with another embedding model or
  chunking; a corrupt BM25 cache is rebuilt without a word.
- The LLM endpoint refuses, times out, answers 401/429/500, malformed JSON, an empty answer or
  drops the connection (testkit/openai_server.py): `AnswerError` with a message that says what to
  do, for `answer` and `stream_answer`, and the next question works.
The Chroma server going down is in tests/test_server_mode.py.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag.answer.pipeline import answer, open_assistant, stream_answer
from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.errors import AnswerError, IndexMismatchError, IndexMissingError, StoreError
from rag.index.bm25 import KeywordIndex
from rag.index.ingest import build_index
from rag.index.papers import PaperIndex
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.retriever import Retriever, open_retriever
from rag.settings import SEED_FILES, Settings
from testkit.chroma_server import free_port
from testkit.openai_server import OpenAIServer, Reply
from tests.helpers import ROOT, copy_index, index_snapshot, make_settings, three_seed_papers
from tests.scripted_model import llm_config

REBIND_QUESTION = (
    "What is ReBIND and how does it use the Lennard-Jones potential to predict ground-state "
    "molecular conformations?"
)

# Kill -9 at random points ---------------------------------------------------------------------

# The real CLI, with batches of 4 papers (not rag.index.ingest.PAPERS_PER_BATCH, nor
# SHIPPED_PAPERS_PER_BATCH when the shipped vectors hold them): 38 papers, 10 batches.
SMALL_BATCHES = (
    "import sys, rag.index.ingest; rag.index.ingest.PAPERS_PER_BATCH = 4; "
    "rag.index.ingest.SHIPPED_PAPERS_PER_BATCH = 4; "
    "from rag.cli.main import main; sys.exit(main(sys.argv[1:]))"
)
PROGRESS = re.compile(r"(\d+)/38")


class Ingest:
    """`rag ingest --json` in a child process; stderr (the progress bar) read as it comes."""

    def __init__(self, index_dir: Path) -> None:
        env = {**os.environ, "RAG_LLM__MODEL": "offline", "TQDM_MININTERVAL": "0"}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SMALL_BATCHES, "ingest", "--config", "seeds"]
            + ["--index", str(index_dir), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        self.stderr = b""
        self.marks: dict[int, float] = {}  # papers done -> when it was first seen
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        while chunk := os.read(self.proc.stderr.fileno(), 4096):
            self.stderr += chunk
            for done in PROGRESS.findall(chunk.decode(errors="replace")):
                self.marks.setdefault(int(done), time.monotonic())

    @property
    def done(self) -> int:
        return max(self.marks, default=-1)

    def kill_after(self, papers: int, rng: random.Random) -> str:
        """SIGKILL once `papers` are reported done, plus a random part of a batch's time."""
        deadline = time.monotonic() + 300
        while self.done < papers and self.proc.poll() is None:
            assert time.monotonic() < deadline, self.stderr[-500:]
            time.sleep(0.005)
        # One batch's time: the shortest gap between marks after the first batch (whose gap
        # also holds loading the model), so the kill lands at most a batch past the target.
        times = sorted(self.marks.values())
        batch = min((b - a for a, b in itertools.pairwise(times[1:])), default=0.2)
        delay = rng.uniform(0, batch)
        time.sleep(delay)
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self._reader.join(timeout=10)
        return f"after {self.done}/38 papers + {delay:.2f}s -> exit {self.proc.returncode}"

    def finish(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()  # stderr belongs to the reader thread
        self.proc.wait(timeout=600)
        self._reader.join(timeout=10)
        assert self.proc.returncode == 0, self.stderr[-2000:]
        return dict(json.loads(out))


@pytest.mark.slow  # three `rag ingest` processes
def test_sigkill_at_random_points_then_rerun_gives_the_identical_index(
    tmp_path: Path, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    seed = int(os.environ.get("RAG_FAULT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    index_dir = tmp_path / "index"
    # Two kills: one while batches are written, one anywhere up to the BM25 build at the end.
    targets = [rng.randrange(0, 32, 4), rng.choice([*range(0, 37, 4), 38])]
    history = [f"RAG_FAULT_SEED={seed}"]
    runs = []
    for target in sorted(targets):
        runs.append(Ingest(index_dir))
        history.append(runs[-1].kill_after(target, rng))
    # The first kill lands before the last batch is reported: it left work to redo.
    assert runs[0].proc.returncode == -signal.SIGKILL and runs[0].done < 38, history

    report = Ingest(index_dir).finish()
    history.append(f"re-run: {report}")
    print("\n".join(history))  # shown with -s, and on failure
    assert report["added"] + report["unchanged"] == 38 and report["updated"] == 0, history
    assert report["unchanged"] >= runs[-1].done, history  # nothing reported stored was lost

    got, want = index_snapshot(make_settings(index_dir)), index_snapshot(seed_settings)
    assert got["paper_hashes"] == want["paper_hashes"], history
    assert got["chunk_ids"] == want["chunk_ids"], history
    assert got == want, history
    index = PaperIndex.open(make_settings(index_dir), embeddings)
    assert sorted(index.keyword_index().chunk_ids) == want["chunk_ids"], history
    resumed = Retriever(index, embeddings, seed_settings.retrieval)
    reference = open_retriever(seed_settings, embeddings)
    # A chunk embedded in another batch after the kill gets a vector a float32 rounding error
    # away (another padding): near-ties below the top may swap.
    for paper in load_papers(list(SEED_FILES))[::5]:
        question = paper.abstract[:160]
        got_ids = [r.paper.id for r in resumed.search(question)]
        want_ids = [r.paper.id for r in reference.search(question)]
        assert got_ids[0] == want_ids[0] == paper.id, history
        assert len(set(got_ids) & set(want_ids)) >= len(want_ids) - 1, history


# Index folders ------------------------------------------------------------------------------


def cli_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run `rag ARGS` in-process; it must fail with exit 2 and exactly one `error:` line."""
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_missing_index_says_how_to_build_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    line = cli_error(capsys, "search", "graph neural networks", "--index", str(missing))
    assert line == f"error: no index at {missing}: build it with `rag ingest --index {missing}`"
    assert not missing.exists()  # a search never creates an empty index


@pytest.mark.slow
def test_a_file_where_the_index_folder_should_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "index"
    file.write_text("not a folder")
    for command in (["search", "graph neural networks"], ["stats"], ["ingest"]):
        line = cli_error(capsys, *command, "--index", str(file))
        assert line == (
            f"error: {file} is a file, not a folder: point store.index_dir (--index) at a "
            "folder, or move the file away"
        )
    assert file.read_text() == "not a folder"


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_chroma_database_is_a_clear_error(
    damage: str, tmp_path: Path, seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = copy_index(seed_settings, tmp_path / "index")
    database = settings.store.index_dir / "chroma" / "chroma.sqlite3"
    size = database.stat().st_size
    if damage == "garbage":
        database.write_bytes(random.Random(0).randbytes(size))
    else:
        with database.open("r+b") as f:
            f.truncate(size // 2)
    index_dir = settings.store.index_dir
    line = cli_error(capsys, "search", "graph neural networks", "--index", str(index_dir))
    assert line.startswith(f"error: cannot open the index at {index_dir} (")
    assert re.search(r"file is not a database|malformed", line), line
    assert line.endswith("check the folder, or rebuild it with `rag ingest --rebuild`")


def test_corrupt_bm25_cache_is_rebuilt_and_search_is_unchanged(
    tmp_path: Path,
    seed_settings: Settings,
    embeddings: LocalEmbeddings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = copy_index(seed_settings, tmp_path / "index")
    cache = PaperIndex.open(settings, embeddings).keyword_cache.directory
    saved = KeywordIndex.load(cache)
    assert saved is not None and saved.chunk_ids  # the cache is whole and read back...
    builds: list[int] = []
    real_build = KeywordIndex.build

    def counting_build(*args: Any, **kwargs: Any) -> KeywordIndex:
        builds.append(1)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(KeywordIndex, "build", counting_build)
    want = open_retriever(settings, embeddings).search(REBIND_QUESTION)
    assert builds == []  # ...so searching it rebuilds nothing
    for corrupt in ("{ truncated", json.dumps({"format": 2, "generation": saved.generation})):
        (cache / "meta.json").write_text(corrupt)
        assert KeywordIndex.load(cache) is None
        got = open_retriever(settings, embeddings).search(REBIND_QUESTION)
        assert [(r.paper.id, r.keyword_rank) for r in got] == [
            (r.paper.id, r.keyword_rank) for r in want
        ]
    assert len(builds) == 2  # each corrupt cache was rebuilt once...
    repaired = KeywordIndex.load(cache)
    assert repaired is not None and repaired.chunk_ids == saved.chunk_ids  # ...and saved whole
    assert repaired.term_counts == saved.term_counts


@pytest.mark.slow
def test_an_index_from_another_embedding_model_or_chunking(
    tmp_path: Path, embeddings: LocalEmbeddings, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = three_seed_papers(tmp_path / "three.jsonl")
    with OpenAIServer() as server:  # OpenAI-protocol embeddings over real HTTP
        other = make_settings(
            tmp_path / "openai-index",
            embedding={
                "provider": "openai",
                "model": "text-embedding-test",
                "base_url": server.base_url,
            },
        )
        build_index(other, [papers])
        assert any(r.path.endswith("/embeddings") for r in server.requests)
    index_dir = other.store.index_dir
    with pytest.raises(IndexMismatchError) as mismatch:
        open_retriever(make_settings(index_dir), embeddings)
    message = str(mismatch.value)
    assert f"the index in {index_dir} was built with embedding model text-embedding-test" in message
    assert "the configuration asks for embedding model all-MiniLM-L6-v2" in message
    assert "rebuild it with `rag ingest --rebuild`" in message
    line = cli_error(capsys, "search", "molecules", "--index", str(index_dir))
    assert "built with embedding model text-embedding-test" in line

    local = make_settings(tmp_path / "local-index")
    build_index(local, [papers], embeddings=embeddings)
    with pytest.raises(IndexMismatchError, match="chunks of 256 tokens.*chunks of 128 tokens"):
        open_retriever(make_settings(local.store.index_dir, chunking={"max_tokens": 128}))
    # Rebuilding with the new setting is the way out, and it works in place.
    rechunked = make_settings(local.store.index_dir, chunking={"max_tokens": 128})
    build_index(rechunked, [papers], rebuild=True, embeddings=embeddings)
    assert open_retriever(rechunked, embeddings).search("molecular conformations")


# LLM endpoint -------------------------------------------------------------------------------

KEPT = "Your question and the chat are kept; ask again, or use --config offline."
ANSWER = "ReBIND rewires molecular graphs with Lennard-Jones edges [1]."


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def llm_settings(index: Settings, base_url: str, **llm: Any) -> Settings:
    values = {"model": "openai:gpt-test", "base_url": base_url, "max_retries": 1, **llm}
    return make_settings(index.store.index_dir, llm=values)


def ask(settings: Settings, embeddings: LocalEmbeddings, streamed: bool) -> Any:
    assistant = open_assistant(settings, embeddings)
    if streamed:
        return list(stream_answer(REBIND_QUESTION, assistant=assistant))[-1]
    return answer(REBIND_QUESTION, assistant=assistant)


FAULTS: dict[str, tuple[list[Reply], dict[str, Any], str]] = {
    # name: (scripted replies, llm settings, what the message must say)
    "401": (
        [Reply(status=401, content="Incorrect API key provided")],
        {},
        "rejected the API key for openai:gpt-test (401): set OPENAI_API_KEY to a valid key",
    ),
    "429": (
        [Reply(status=429, content="Rate limit reached")] * 2,
        {},
        "is still rate limiting openai:gpt-test (429) after 1 retries",
    ),
    "500": (
        [Reply(status=500, content="upstream exploded")] * 2,
        {},
        "answered 500 after 1 retries for openai:gpt-test: Error code: 500 - upstream exploded",
    ),
    "timeout": (
        [Reply(ANSWER, delay=5)],
        {"timeout": 0.5, "max_retries": 0},
        "did not answer within llm.timeout = 0.5 s: raise llm.timeout (RAG_LLM__TIMEOUT)",
    ),
    "malformed": (
        [Reply(raw_body='{"choices": [{"message": ')] * 2,
        {},
        "gave no usable reply for openai:gpt-test (",
    ),
    # Twice: an empty stream is asked once more, whole (rag.answer.streaming).
    "empty": ([Reply("")] * 2, {}, "openai:gpt-test returned an empty answer"),
    "whitespace": ([Reply("  \n ")], {}, "openai:gpt-test returned an empty answer"),
    "dropped connection": (
        [Reply(ANSWER, close_connection=True)] * 2,
        {},
        "cannot connect to the server at http://127.0.0.1:",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("streamed", [False, True], ids=["answer", "stream"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_llm_faults_explain_what_to_do(
    fault: str,
    streamed: bool,
    llm: OpenAIServer,
    seed_settings: Settings,
    embeddings: LocalEmbeddings,
) -> None:
    replies, options, wanted = FAULTS[fault]
    llm.reset()
    llm.script(*replies)
    settings = llm_settings(seed_settings, llm.base_url, **options)
    with pytest.raises(AnswerError) as failed:
        ask(settings, embeddings, streamed)
    message = str(failed.value)
    assert message.startswith("The language model failed: "), message
    assert wanted in message and message.endswith(KEPT), message
    assert failed.value.question == REBIND_QUESTION
    assert "Traceback" not in message and "\n" not in message
    assert llm.requests, "the model was never called"
    if fault in ("429", "500"):
        assert len(llm.requests) == 2  # retried once, as configured

    # The next question, with the endpoint healthy again, is answered with its citation.
    llm.reset()
    llm.script(ANSWER)
    result = ask(settings, embeddings, streamed)
    assert result.answer == ANSWER and [c.n for c in result.citations] == [1]
    assert "Lennard-Jones" in result.citations[0].quote


@pytest.mark.slow
def test_llm_endpoint_refusing_connections(
    seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    base_url = f"{server}/v1"
    for streamed in (False, True):
        with pytest.raises(AnswerError) as failed:
            ask(llm_settings(seed_settings, base_url), embeddings, streamed)
        assert str(failed.value) == (
            f"The language model failed: cannot connect to the server at {server} for "
            "openai:gpt-test: start that server, or set llm.base_url (RAG_LLM__BASE_URL) to one "
            f"that is running. {KEPT}"
        )


def test_rag_ask_with_a_rejected_key_prints_one_line(
    tmp_path: Path,
    llm: OpenAIServer,
    seed_settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm.reset()
    llm.script(Reply(status=401, content="Incorrect API key provided"))
    config = llm_config(tmp_path, llm)
    index_dir = str(seed_settings.store.index_dir)
    line = cli_error(capsys, "ask", REBIND_QUESTION, "--config", str(config), "--index", index_dir)
    assert "rejected the API key for openai:gpt-test (401)" in line and line.endswith(KEPT)


def test_a_model_citing_sources_it_was_not_given_has_them_dropped(
    llm: OpenAIServer, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    llm.reset()
    llm.script("ReBIND adds Lennard-Jones edges [1]. A famous paper agrees [7][12].")
    result = ask(llm_settings(seed_settings, llm.base_url), embeddings, streamed=False)
    assert result.answer == "ReBIND adds Lennard-Jones edges [1]. A famous paper agrees."
    assert result.dropped_citations == 2
    assert [c.n for c in result.citations] == [1]


def test_store_errors_are_not_swallowed_by_the_answer(
    tmp_path: Path, embeddings: LocalEmbeddings
) -> None:
    """The Chroma server stopping is a StoreError naming it, also when asking."""
    settings = make_settings(tmp_path, store={"mode": "http", "port": free_port()})
    with pytest.raises(StoreError, match="cannot reach the Chroma server at http://127.0.0.1:"):
        open_assistant(settings, embeddings)
    with pytest.raises(IndexMissingError):
        open_assistant(make_settings(tmp_path / "none"), embeddings)


def test_a_lone_surrogate_in_a_model_reply_is_shown_as_a_replacement_character(
    tmp_path: Path,
    llm: OpenAIServer,
    seed_settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 32, L4: "\\ud800" is valid JSON and no UTF-8 output can carry it; the answer, its
    JSON and a comparison's table show U+FFFD instead of a traceback."""
    llm.reset()
    reply = "ReBIND adds Lennard-Jones edges \ud800 between atoms [1]."
    llm.script(reply, reply)
    config = llm_config(tmp_path, llm)
    index_dir = str(seed_settings.store.index_dir)
    args = ["ask", REBIND_QUESTION, "--config", str(config), "--index", index_dir]
    assert main(args) == 0
    assert "edges \ufffd between" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    assert "edges \ufffd between" in json.loads(capsys.readouterr().out)["answer"]
