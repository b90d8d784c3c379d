"""Server mode against a real `chroma run --path DIR --port PORT` on loopback.

The same seed papers are ingested into the server through the `rag` command and compared with
the embedded session index: same papers, same chunks, same search results. Also: a second
client sees another client's re-ingest and rebuild, the auth token and headers reach the
server, and a server that is down, or stops mid-session, gives one clear line naming the URL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rag.answer.pipeline import answer, open_assistant
from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.errors import StoreError
from rag.index.ingest import build_index
from rag.index.papers import PaperIndex
from rag.index.store import make_client
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.retriever import open_retriever
from rag.settings import SEED_FILES, Settings
from testkit.chroma_server import ChromaServer, free_port
from tests.helpers import ROOT, index_snapshot, make_settings, read_jsonl

# A real `chroma run` for the module, and `rag` processes against it: left out of make test-fast.
pytestmark = pytest.mark.slow

RAG = str(Path(sys.executable).with_name("rag"))
SEED_QUESTIONS = [
    q["question"] for q in read_jsonl(ROOT / "tests" / "data" / "seed_questions.jsonl")
]
REBIND_QUESTION = (
    "What is ReBIND and how does it use the Lennard-Jones potential to predict ground-state "
    "molecular conformations?"
)
REBIND_GOLD = "rewires molecular graphs by adding edges based on the Lennard-Jones potential"


def http_settings(server: ChromaServer, cache: Path, collection: str = "iclr2025") -> Settings:
    return make_settings(
        cache,
        store={"mode": "http", "host": server.host, "port": server.port, "collection": collection},
    )


def run_rag(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """The installed `rag` command in a child process, offline; the seeds embedded here, as
    the embedded seed index (tests/conftest.py) they are compared with is."""
    env = {
        **os.environ,
        "RAG_LLM__MODEL": "offline",
        "RAG_EMBEDDING__BUNDLED_VECTORS": "false",
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.run(
        [RAG, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, **kwargs
    )


def ranked_ids(settings: Settings, embeddings: LocalEmbeddings, question: str) -> list[str]:
    return [r.paper.id for r in open_retriever(settings, embeddings).search(question)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    chroma = ChromaServer(tmp_path_factory.mktemp("chroma-server") / "data")
    chroma.start()
    yield chroma
    chroma.stop()


@pytest.fixture(scope="module")
def served(
    server: ChromaServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Settings, dict[str, Any]]:
    """The seed papers ingested into the server by `rag ingest --chroma-url` (a real process)."""
    cache = tmp_path_factory.mktemp("bm25-cache")
    args = ["--config", "seeds", "--chroma-url", server.url, "--index", str(cache), "--json"]
    done = run_rag("ingest", *args)
    assert done.returncode == 0, done.stderr
    return http_settings(server, cache), json.loads(done.stdout)


# Ingest, stats, search through the CLI and the library ----------------------------------------


def test_cli_ingest_stores_the_same_papers_and_chunks_as_embedded(
    served: tuple[Settings, dict[str, Any]], seed_settings: Settings
) -> None:
    settings, report = served
    seeds = load_papers(list(SEED_FILES))
    assert report["added"] == len(seeds) == 38
    on_server, embedded = index_snapshot(settings), index_snapshot(seed_settings)
    assert report["chunks"] == on_server["chunks"] == embedded["chunks"]
    assert on_server == embedded  # same ids, texts and content hashes
    assert set(on_server["paper_hashes"]) == {p.id for p in seeds}


def test_cli_stats_and_search_against_the_server(
    served: tuple[Settings, dict[str, Any]],
    server: ChromaServer,
    seed_settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, _ = served
    cache = str(settings.store.index_dir)
    assert main(["stats", "--chroma-url", server.url, "--index", cache, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats == {"papers": 38, "chunks": index_snapshot(seed_settings)["chunks"]} | {
        "untitled": 38,  # the seed files alone
        "embedding_model": "all-MiniLM-L6-v2",
    }

    args = ["search", REBIND_QUESTION, "--json", "--index", cache]
    assert main([*args, "--chroma-url", server.url]) == 0
    remote = json.loads(capsys.readouterr().out)["results"]
    assert REBIND_GOLD in remote[0]["abstract"]
    assert (
        main(["search", REBIND_QUESTION, "--json", "--index", str(seed_settings.store.index_dir)])
        == 0
    )
    local = json.loads(capsys.readouterr().out)["results"]
    assert [r["paper_id"] for r in remote] == [r["paper_id"] for r in local]


def test_library_search_matches_embedded_for_every_seed_question(
    served: tuple[Settings, dict[str, Any]], seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    settings, _ = served
    remote = open_retriever(settings, embeddings)
    local = open_retriever(seed_settings, embeddings)
    for question in SEED_QUESTIONS:
        got, want = remote.search(question), local.search(question)
        assert [r.paper.id for r in got] == [r.paper.id for r in want], question
        assert [r.similarity for r in got] == pytest.approx([r.similarity for r in want], abs=1e-5)
    # The BM25 cache of a server lives beside the embedded index, one folder per server.
    assert remote.index.keyword_cache.directory.parent == settings.store.index_dir
    assert (remote.index.keyword_cache.directory / "meta.json").exists()


def test_ask_against_the_server_gives_the_embedded_answer(
    served: tuple[Settings, dict[str, Any]],
    server: ChromaServer,
    seed_settings: Settings,
    embeddings: LocalEmbeddings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, _ = served
    remote = answer(REBIND_QUESTION, assistant=open_assistant(settings, embeddings, None))
    local = answer(REBIND_QUESTION, assistant=open_assistant(seed_settings, embeddings, None))
    assert remote.answer == local.answer and not remote.abstained
    cited = remote.sources[remote.citations[0].n - 1].paper
    assert REBIND_GOLD in cited.abstract and remote.citations[0].quote in cited.abstract

    cache = str(settings.store.index_dir)
    args = ["ask", REBIND_QUESTION, "--config", "offline", "--index", cache, "--json"]
    assert main([*args, "--chroma-url", server.url]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == remote.as_json()


# Several clients -----------------------------------------------------------------------------


def write_jsonl(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


PAPERS = [
    {
        "id": "p-graph",
        "title": "Message passing on sparse graphs",
        "abstract": "We study message passing neural networks on sparse graphs and show that "
        "their expressive power is bounded by the Weisfeiler-Leman test.",
    },
    {
        "id": "p-speech",
        "title": "Streaming speech recognition",
        "abstract": "We present a streaming speech recognition model that reduces latency "
        "by half while keeping the word error rate of offline transducers.",
    },
]
QUOKKA = {
    "id": "p-quokka",
    "title": "QuokkaNet",
    "abstract": "We introduce QuokkaNet, a camera-trap detector that counts quokkas and other "
    "small marsupials on Rottnest Island from infrared images.",
}


def test_a_second_client_sees_another_clients_reingest_and_rebuild(
    server: ChromaServer, tmp_path: Path, embeddings: LocalEmbeddings
) -> None:
    # Two hosts: each has its own BM25 cache folder, both share the collection on the server.
    writer = http_settings(server, tmp_path / "writer", collection="shared")
    reader = http_settings(server, tmp_path / "reader", collection="shared")
    first = write_jsonl(tmp_path / "first.jsonl", PAPERS)
    build_index(writer, [first], embeddings=embeddings)
    retriever = open_retriever(reader, embeddings)
    before = retriever.search("quokka marsupials on Rottnest Island")
    assert {r.paper.id for r in before} == {"p-graph", "p-speech"}

    second = write_jsonl(tmp_path / "second.jsonl", [QUOKKA])
    report = build_index(writer, [first, second], embeddings=embeddings)
    assert (report.added, report.unchanged) == (1, 2)
    after = retriever.search("quokka marsupials on Rottnest Island")
    assert after[0].paper.id == "p-quokka"
    assert after[0].keyword_rank == 0  # found by BM25 too: the reader rebuilt its cache

    build_index(writer, [second], rebuild=True, embeddings=embeddings)  # drop and recreate
    rebuilt = retriever.search("streaming speech recognition latency")
    assert [r.paper.id for r in rebuilt] == ["p-quokka"]
    generation = retriever.index.current_generation()
    saved = retriever.index.keyword_cache.directory / "meta.json"
    assert json.loads(saved.read_text())["generation"] == generation


# Credentials --------------------------------------------------------------------------------


class _RecordingChroma(BaseHTTPRequestHandler):
    """Just enough of Chroma's API for the client to connect; records every request's headers."""

    seen: list[dict[str, str]] = []
    paths: list[str] = []
    token = "s3cret"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(dict(self.headers))
        self.paths.append(self.path)
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            status, body = 401, {"error": "Unauthorized", "message": "invalid token"}
        elif self.path.endswith("/heartbeat"):
            status, body = 200, {"nanosecond heartbeat": 1}
        elif self.path.endswith("/auth/identity"):
            status, body = 200, {"user_id": "u", "tenant": "lab", "databases": ["iclr"]}
        elif "/databases/" in self.path:
            status, body = 200, {"id": "d", "name": "iclr", "tenant": "lab"}
        else:
            status, body = 200, {"name": "lab"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_token_headers_tenant_and_database_reach_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _RecordingChroma)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        port = httpd.server_address[1]
        store = {"mode": "http", "port": port, "tenant": "lab", "database": "iclr"}
        settings = make_settings(tmp_path, **{"store": store})
        monkeypatch.setenv("CHROMA_AUTH_TOKEN", "s3cret")
        monkeypatch.setenv("CHROMA_HEADERS", '{"X-Lab": "iclr"}')
        make_client(settings)
        assert _RecordingChroma.seen
        assert all(h["Authorization"] == "Bearer s3cret" for h in _RecordingChroma.seen)
        assert all(h["X-Lab"] == "iclr" for h in _RecordingChroma.seen)
        assert "/api/v2/tenants/lab/databases/iclr" in _RecordingChroma.paths

        monkeypatch.setenv("CHROMA_AUTH_TOKEN", "wrong")
        with pytest.raises(StoreError) as refused:
            make_client(settings)
        assert f"127.0.0.1:{port} refused the credentials" in str(refused.value)
        assert "set CHROMA_AUTH_TOKEN" in str(refused.value)

        monkeypatch.setenv("CHROMA_HEADERS", "X-Lab: iclr")
        with pytest.raises(StoreError, match="CHROMA_HEADERS must be a JSON object"):
            make_client(settings)
    finally:
        httpd.shutdown()
        httpd.server_close()


class _Gateway(BaseHTTPRequestHandler):
    """A reverse proxy in front of Chroma: `reply` is (status, body) for every request."""

    reply: tuple[int, str] = (502, "")

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        status, body = self.reply
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.parametrize("upstream", [4010, 8403])
def test_an_unreachable_server_on_a_port_like_401_or_403_is_not_a_credentials_error(
    tmp_path: Path, upstream: int
) -> None:
    """Errors are told apart by Chroma's exception types, not by digits in their text."""
    down = f"connection to upstream http://127.0.0.1:{upstream}/api/v2/heartbeat failed"
    refused = json.dumps({"error": "AuthError", "message": "Permission denied."})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        settings = make_settings(tmp_path, store={"mode": "http", "port": httpd.server_address[1]})
        _Gateway.reply = (502, f"502 Bad Gateway: {down}")
        with pytest.raises(StoreError) as unreachable:
            make_client(settings)
        assert str(unreachable.value).startswith("cannot reach the Chroma server at http://")
        assert f":{upstream}/api/v2/heartbeat" in str(unreachable.value)
        assert "credentials" not in str(unreachable.value)

        _Gateway.reply = (403, refused)  # Chroma's own "AuthError": ChromaAuthError
        with pytest.raises(StoreError) as denied:
            make_client(settings)
        assert "refused the credentials (Permission denied.)" in str(denied.value)
        assert "set CHROMA_AUTH_TOKEN" in str(denied.value)
    finally:
        httpd.shutdown()
        httpd.server_close()


# Server down --------------------------------------------------------------------------------


def assert_one_clear_line(stderr: str, url: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and url in lines[0], stderr
    assert "chroma run --path DIR --port PORT" in lines[0]
    assert "Traceback" not in stderr


def test_server_down_at_start_names_the_url_and_how_to_start_it(
    tmp_path: Path, embeddings: LocalEmbeddings
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for command in (["stats"], ["search", "graph neural networks"], ["ingest"]):
        done = run_rag(*command, "--chroma-url", url, "--index", str(tmp_path))
        assert done.returncode == 2
        assert_one_clear_line(done.stderr, url)
    settings = make_settings(tmp_path, store={"mode": "http", "port": int(url.rsplit(":", 1)[1])})
    with pytest.raises(StoreError, match=f"cannot reach the Chroma server at {url}"):
        PaperIndex.open(settings, embeddings)


def test_server_stopping_mid_session_is_a_store_error_and_restart_recovers(
    tmp_path: Path, embeddings: LocalEmbeddings
) -> None:
    server = ChromaServer(tmp_path / "data")
    server.start()
    try:
        settings = http_settings(server, tmp_path / "cache")
        seeds = load_papers(list(SEED_FILES))[:6]
        corpus = write_jsonl(
            tmp_path / "six.jsonl", [{"id": p.id, "abstract": p.abstract} for p in seeds]
        )
        build_index(settings, [corpus], embeddings=embeddings)
        retriever = open_retriever(settings, embeddings)
        question = seeds[2].abstract[:200]
        before = [r.paper.id for r in retriever.search(question)]
        assert before[0] == seeds[2].id

        assistant = open_assistant(settings, embeddings)
        server.stop()
        for mode in ("hybrid", "dense", "keyword"):
            with pytest.raises(StoreError) as down:
                retriever.search(question, mode=mode)  # type: ignore[arg-type]
            assert f"the Chroma server at {server.url} failed" in str(down.value)
            assert "chroma run --path DIR --port PORT" in str(down.value)

        with pytest.raises(StoreError, match=f"the Chroma server at {server.url} failed"):
            answer(question, assistant=assistant)

        server.start()  # same folder, same port: nothing was lost
        assert [r.paper.id for r in retriever.search(question)] == before
        assert answer(question, assistant=assistant).citations[0].paper_id == seeds[2].id

        # The CLI, mid-way through a batch: one clear line and a non-zero exit.
        batch = tmp_path / "questions.txt"
        batch.write_text("\n".join(SEED_QUESTIONS * 200))
        child = subprocess.Popen(
            [RAG, "search", "--batch", str(batch), "--chroma-url", server.url]
            + ["--index", str(tmp_path / "cache")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "RAG_LLM__MODEL": "offline", "PYTHONUNBUFFERED": "1"},
        )
        assert child.stdout is not None
        first = child.stdout.readline()
        assert first.startswith("## "), first  # it was answering before the server stopped
        server.stop()
        out, err = child.communicate(timeout=120)
        assert child.returncode == 2
        assert_one_clear_line(err, server.url)
        assert "failed" in err
    finally:
        server.stop()
