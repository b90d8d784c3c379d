"""Load test of server mode: 8 concurrent clients issue 400 searches against a Chroma server.

    .venv/bin/python -m bench.load_test [--corpus seeds|full] [--chroma-url http://HOST:PORT]
        [--clients 8] [--requests 400] [--time-limit 300] [--json]

Without --chroma-url it starts its own `chroma run` on a free loopback port (stopped at the
end) and ingests the 38 seed papers, or the 2,105-paper corpus plus the seeds (--corpus
full). With --chroma-url it uses that server and ingests only if the collection is missing.

Each client is a thread of this one process, and all share one Retriever and one embedding
model: that is how the Streamlit app serves its sessions (one process, the retriever cached
with st.cache_resource), so it measures what a UI replica under load does. Separate processes
would each load their own copy of the model (~90 MB, a few seconds) and, on a 2-core machine,
mostly measure CPU contention between torch instances.

Two kinds of request, each run by one client (the baseline for the ratios) and then by
--clients clients, each phase bounded by --requests and --time-limit:
  search     full hybrid searches (embed the question, dense query on the server, BM25,
             papers fetched from the server);
  store      server round trips only (dense query with a precomputed vector + paper fetch),
             the Chroma server's share of a search.
It prints requests, errors (must be 0), p50/p95/max latency and throughput per phase, and
exits 1 if any request failed or a phase hit the time limit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag.settings import (
    BUNDLED_CORPUS,
    EVAL_DATA,
    SEED_FILES,
    Settings,
    get_settings,
    with_overrides,
)

QUESTIONS = EVAL_DATA / "questions.jsonl"


@dataclass
class Phase:
    name: str
    clients: int
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timed_out: bool = False

    @property
    def requests(self) -> int:
        return len(self.latencies) + len(self.errors)

    def as_dict(self) -> dict[str, Any]:
        ms = np.asarray(self.latencies) * 1000 if self.latencies else np.zeros(1)
        return {
            "phase": self.name,
            "clients": self.clients,
            "requests": self.requests,
            "errors": len(self.errors),
            "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "max_ms": round(float(ms.max()), 1),
            "per_second": round(self.requests / self.seconds, 1) if self.seconds else 0.0,
            "seconds": round(self.seconds, 2),
            "timed_out": self.timed_out,
        }


def run_phase(
    name: str, clients: int, total: int, time_limit: float, request: Callable[[int], object]
) -> Phase:
    """`clients` threads take request numbers 0..total-1 from a shared counter until done."""
    phase = Phase(name, clients)
    lock = threading.Lock()
    counter = iter(range(total))
    start = threading.Barrier(clients + 1)
    deadline = 0.0

    def client() -> None:
        start.wait()
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            if time.perf_counter() > deadline:
                phase.timed_out = True
                return
            began = time.perf_counter()
            try:
                request(i)
            except Exception as e:  # counted and reported, never fatal to the run
                with lock:
                    phase.errors.append(f"{type(e).__name__}: {e}")
                continue
            elapsed = time.perf_counter() - began
            with lock:
                phase.latencies.append(elapsed)

    threads = [threading.Thread(target=client, name=f"client-{n}") for n in range(clients)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline = began + time_limit
    start.wait()
    for thread in threads:
        thread.join()
    phase.seconds = time.perf_counter() - began
    return phase


def settings_for(url: str, cache: Path) -> Settings:
    from urllib.parse import urlparse

    parsed = urlparse(url)
    return with_overrides(
        get_settings(),
        {
            "llm": {"model": "offline"},
            "store": {
                "mode": "http",
                "host": parsed.hostname,
                "port": parsed.port or 8000,
                "ssl": parsed.scheme == "https",
                "index_dir": str(cache),
            },
        },
    )


def ensure_ingested(settings: Settings, corpus: str, embeddings: Any) -> dict[str, Any]:
    from rag.errors import IndexMissingError
    from rag.index.ingest import build_index
    from rag.index.papers import PaperIndex

    try:
        return dict(PaperIndex.open(settings, embeddings).stats())
    except IndexMissingError:
        pass
    paths = [BUNDLED_CORPUS] if corpus == "full" else list(SEED_FILES)
    began = time.perf_counter()
    report = build_index(settings, paths, embeddings=embeddings)
    print(f"ingested {report.added} papers in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    return dict(PaperIndex.open(settings, embeddings).stats())


def load_questions() -> list[str]:
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    return [str(r["question"]) for r in rows if str(r.get("question", "")).strip()]


def run(args: argparse.Namespace, url: str, cache: Path) -> list[Phase]:
    from rag.models.factory import make_embeddings
    from rag.retrieval.retriever import open_retriever

    settings = settings_for(url, cache)
    embeddings = make_embeddings(settings.embedding)
    stats = ensure_ingested(settings, args.corpus, embeddings)
    print(f"server {url}: {stats['papers']} papers, {stats['chunks']} chunks", file=sys.stderr)
    retriever = open_retriever(settings, embeddings)
    questions = load_questions()
    retriever.search(questions[0])  # load the model and the BM25 cache before timing
    vectors = embeddings.embed_documents(questions)

    def search(i: int) -> object:
        results = retriever.search(questions[i % len(questions)])
        if not results:
            raise RuntimeError(f"no results for question {i % len(questions)}")
        return results

    def store_round_trip(i: int) -> object:
        hits = retriever.index.dense_search(vectors[i % len(vectors)], settings.retrieval.fetch_k)
        papers = retriever.index.get_papers(list(dict.fromkeys(h.paper_id for h in hits))[:5])
        if not papers:
            raise RuntimeError(f"no papers for question {i % len(questions)}")
        return papers

    baseline_n = min(args.requests, max(40, args.requests // 5))
    return [
        run_phase("search", 1, baseline_n, args.time_limit, search),
        run_phase("search", args.clients, args.requests, args.time_limit, search),
        run_phase("store", 1, baseline_n, args.time_limit, store_round_trip),
        run_phase("store", args.clients, args.requests, args.time_limit, store_round_trip),
    ]


def report(phases: list[Phase], as_json: bool) -> None:
    rows = [p.as_dict() for p in phases]
    for row in rows:
        base = next(r for r in rows if r["phase"] == row["phase"] and r["clients"] == 1)
        row["p50_vs_one_client"] = round(row["p50_ms"] / base["p50_ms"], 2) if base["p50_ms"] else 0
        row["throughput_vs_one_client"] = (
            round(row["per_second"] / base["per_second"], 2) if base["per_second"] else 0
        )
    if as_json:
        print(json.dumps(rows))
        return
    header = f"{'phase':<9} {'clients':>7} {'requests':>8} {'errors':>6} {'p50 ms':>8} "
    header += f"{'p95 ms':>8} {'max ms':>8} {'req/s':>7} {'p50 x':>6} {'req/s x':>7}"
    print(header)
    for r in rows:
        print(
            f"{r['phase']:<9} {r['clients']:>7} {r['requests']:>8} {r['errors']:>6} "
            f"{r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} {r['max_ms']:>8.1f} {r['per_second']:>7.1f} "
            f"{r['p50_vs_one_client']:>6.2f} {r['throughput_vs_one_client']:>7.2f}"
            + ("  (stopped at --time-limit)" if r["timed_out"] else "")
        )
    print("x = ratio to one client doing the same kind of request, measured in this run")
    for phase in phases:
        for error in phase.errors[:5]:
            print(f"{phase.name} error: {error}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chroma-url", help="an existing Chroma server (default: start one)")
    parser.add_argument("--corpus", choices=["seeds", "full"], default="seeds")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=400, help="per phase")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds per phase")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="rag-load-") as scratch:
        cache = Path(scratch) / "cache"
        if args.chroma_url:
            phases = run(args, args.chroma_url, cache)
        else:
            from testkit.chroma_server import ChromaServer

            with ChromaServer(Path(scratch) / "chroma") as server:
                phases = run(args, server.url, cache)
    report(phases, args.json)
    return 1 if any(p.errors or p.timed_out for p in phases) else 0


if __name__ == "__main__":
    sys.exit(main())
