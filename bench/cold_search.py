"""Time a cold `rag search`: process start to the first result, this tree against another.

    .venv/bin/python bench/cold_search.py --index DIR --baseline-src OLD_TREE [--runs 5]

OLD_TREE is another checkout of the project (e.g. `git worktree add /tmp/old COMMIT`). Each
tree searches its own copy of the index (each keeps its own BM25 cache), warmed by one search;
then the two alternate, `--runs` times each, so both see the same machine load. Prints the
median seconds to the first result line of each and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How can attention masks be supported efficiently in FlashAttention?"


def first_result_seconds(src: Path, index: Path, question: str) -> float:
    """Seconds from starting `python -m rag.cli search` with `src` first on the path to its
    first line of output (the first result)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["PYTHONPATH"] = str(src)
    command = [sys.executable, "-m", "rag.cli", "search", question, "--index", str(index)]
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=src, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    seconds = time.perf_counter() - started
    rest, err = proc.communicate()
    if proc.returncode != 0 or not line.strip():
        raise SystemExit(f"rag search from {src} failed ({proc.returncode}): {err.strip()}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="an index built by rag ingest")
    parser.add_argument("--baseline-src", type=Path, required=True, help="another checkout")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.index / "chroma" / "chroma.sqlite3").exists():
        raise SystemExit(f"no index at {args.index}: build it with `rag ingest --index DIR`")

    trees = {"baseline": args.baseline_src.resolve(), "this tree": ROOT}
    times: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="cold-search-") as tmp:
        copies = {}
        for name in trees:
            copies[name] = Path(tmp) / name.replace(" ", "-")
            shutil.copytree(args.index, copies[name])
        for name, src in trees.items():  # each tree writes its BM25 cache as it would
            first_result_seconds(src, copies[name], args.question)
        for _ in range(args.runs):
            for name, src in trees.items():
                times[name].append(first_result_seconds(src, copies[name], args.question))

    medians = {name: statistics.median(t) for name, t in times.items()}
    result = {
        "index": str(args.index),
        "runs": args.runs,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "baseline_src": str(trees["baseline"]),
        "baseline_median_s": round(medians["baseline"], 2),
        "this_tree_median_s": round(medians["this tree"], 2),
        "baseline_runs_s": [round(t, 2) for t in times["baseline"]],
        "this_tree_runs_s": [round(t, 2) for t in times["this tree"]],
        "speedup": round(medians["baseline"] / medians["this tree"], 2),
    }
    if args.json:
        print(json.dumps(result))
        return
    width = max(map(len, result))
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
