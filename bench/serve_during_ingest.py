"""Answer latency of a long-running reader (the app's process) before, during and after an
ingest into the index it serves, by another process (issue 22, item 7).

    .venv/bin/python -m bench.serve_during_ingest [--base 300] [--added 150] [--json]

Builds an index of the first `--base` bundled papers, opens it as the app does (one
`open_assistant`, warmed up), answers questions with the offline answerer in a loop while
`rag ingest` adds `--added` more papers in a child process, then answers the same questions
again, and once more in a fresh reader. Prints per-phase medians and maxima, and where the time
of the slowest answers went (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rag.answer.pipeline import answer, open_assistant
from rag.index.ingest import build_index
from rag.models.factory import make_embeddings
from rag.settings import BUNDLED_PAPERS, get_settings, with_overrides

QUESTIONS = [
    "How do language models handle long contexts?",
    "Which papers study diffusion models for images?",
    "What methods improve reinforcement learning from human feedback?",
    "How are graph neural networks made more expressive?",
]


def timed(
    assistant: object, questions: list[str], profile: cProfile.Profile | None = None
) -> list[float]:
    times = []
    for q in questions:
        start = time.perf_counter()
        if profile:
            profile.enable()
        answer(q, assistant=assistant)  # type: ignore[arg-type]
        if profile:
            profile.disable()
        times.append(time.perf_counter() - start)
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {
        "n": len(times),
        "median_s": round(statistics.median(times), 3) if times else 0.0,
        "max_s": round(max(times), 3) if times else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=int, default=300)
    parser.add_argument("--added", type=int, default=150)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    lines = BUNDLED_PAPERS.read_text(encoding="utf-8").splitlines()
    root = Path(tempfile.mkdtemp(prefix="bench-serve-ingest-"))
    first, more = root / "first.jsonl", root / "all.jsonl"
    first.write_text("\n".join(lines[: args.base]) + "\n", encoding="utf-8")
    more.write_text("\n".join(lines[: args.base + args.added]) + "\n", encoding="utf-8")
    settings = with_overrides(
        get_settings(), {"store": {"index_dir": str(root / "index")}, "llm": {"model": "offline"}}
    )
    embeddings = make_embeddings(settings.embedding)
    build_index(settings, [first], embeddings=embeddings)
    assistant = open_assistant(settings, embeddings=embeddings)
    assistant.warm_up()
    results: dict[str, object] = {"base_papers": args.base, "added_papers": args.added}
    results["before"] = summary(timed(assistant, QUESTIONS * 2))

    env_cmd = [sys.executable, "-m", "rag.cli.main", "ingest", "--index", str(root / "index")]
    during: list[float] = []
    errors: list[str] = []
    started = time.perf_counter()
    child = subprocess.Popen([*env_cmd, str(more)], stdout=subprocess.DEVNULL)

    def ask_while_ingesting() -> None:
        while child.poll() is None:
            try:
                during.extend(timed(assistant, QUESTIONS[:1]))
            except Exception as e:  # noqa: BLE001 - what the reader sees is the measurement
                errors.append(f"{type(e).__name__}: {e}"[:200])

    asker = threading.Thread(target=ask_while_ingesting)
    asker.start()
    child.wait()
    asker.join()
    results["ingest_s"] = round(time.perf_counter() - started, 1)
    results["ingest_exit"] = child.returncode
    results["during"] = summary(during) | {"errors": errors[:5], "error_count": len(errors)}
    profile = cProfile.Profile()
    results["after"] = summary(timed(assistant, QUESTIONS * 2, profile))
    results["papers_seen_after"] = assistant.stats()["papers"]
    fresh = open_assistant(settings, embeddings=embeddings)
    fresh.warm_up()
    results["fresh_reader"] = summary(timed(fresh, QUESTIONS * 2))
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(25)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(json.dumps(results, indent=2))
        print(out.getvalue())


if __name__ == "__main__":
    main()
