"""Time a cold `rag search`: process start to the first result, this tree against another.

    .venv/bin/python -m bench.cold_search --index DIR --baseline-src OLD_TREE [--runs 5]

OLD_TREE is another checkout of the project (e.g. `git worktree add /tmp/old COMMIT`). Each
tree searches its own copy of the index (without the BM25 cache, which each tree then writes
and reads in its own format), warmed by one search;
then the two alternate, `--runs` times each, so both see the same machine load. Prints the
median seconds to the first result line of each and their ratio, and the median CPU seconds
of each process (a fair comparison on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How can attention masks be supported efficiently in FlashAttention?"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def first_result_seconds(src: Path, index: Path, question: str) -> tuple[float, float]:
    """Seconds from starting `python -m rag.cli.main search` with `src` first on the path to its
    first line of output (the first result), and the CPU seconds the whole process used
    (which other jobs on the machine do not inflate)."""
    cpu = children_cpu()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["PYTHONPATH"] = str(src)
    command = [sys.executable, "-m", "rag.cli.main", "search", question, "--index", str(index)]
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
    return seconds, children_cpu() - cpu


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
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="cold-search-") as tmp:
        copies = {}
        for name in trees:
            copies[name] = Path(tmp) / name.replace(" ", "-")
            shutil.copytree(args.index, copies[name])
            # No BM25 cache from another version: each tree writes (and reads) its own.
            shutil.rmtree(copies[name] / "keyword", ignore_errors=True)
        for name, src in trees.items():  # each tree writes its BM25 cache as it would
            first_result_seconds(src, copies[name], args.question)
        for _ in range(args.runs):
            for name, src in trees.items():
                seconds, used = first_result_seconds(src, copies[name], args.question)
                times[name].append(seconds)
                cpu[name].append(used)

    medians = {name: statistics.median(t) for name, t in times.items()}
    cpu_medians = {name: statistics.median(t) for name, t in cpu.items()}
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
        "baseline_cpu_median_s": round(cpu_medians["baseline"], 2),
        "this_tree_cpu_median_s": round(cpu_medians["this tree"], 2),
        "cpu_ratio": round(cpu_medians["baseline"] / cpu_medians["this tree"], 2),
    }
    if args.json:
        print(json.dumps(result))
        return
    load = result["load_average_1min"]
    print(f"cold `rag search` on {args.index}, {args.runs} runs each, load average {load}")
    for name, key in (("baseline", "baseline"), ("this tree", "this_tree")):
        runs = ", ".join(f"{t:.2f}" for t in result[f"{key}_runs_s"])
        print(
            f"  {name:<9} first result {result[f'{key}_median_s']:6.2f} s median ({runs}); "
            f"CPU {result[f'{key}_cpu_median_s']:.2f} s"
        )
    print(f"  baseline / this tree: {result['speedup']}x wall, {result['cpu_ratio']}x CPU")


if __name__ == "__main__":
    main()
