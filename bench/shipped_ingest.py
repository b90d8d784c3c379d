"""`rag ingest` of the bundled corpus into an empty folder, with the shipped vectors and without.

    .venv/bin/python -m bench.shipped_ingest [--papers N] [--json]

Two `rag ingest` processes, one after the other, each into its own empty folder: the default
(the vectors and map shipped in data/iclr2025, rag.index.shipped) and the baseline
`RAG_EMBEDDING__BUNDLED_VECTORS=false`, which embeds every chunk and paper (and computes the
map) here. Wall time of each process, their ratio, the load average beside them; then
`rag eval --no-baselines` on both indexes: the retrieval figures must be the same (R@5 and
MRR@10 to the first decimal). The ONNX export is made before the clock starts.
`--papers N` ingests only the first N papers of data/iclr2025/iclr2025.jsonl (a busy machine:
the recomputing half is the slow one); both halves then compute the map of that subset, and
there is no eval (its questions are about the whole corpus).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def rag(*args: str, env: dict[str, str]) -> tuple[float, str]:
    command = [sys.executable, "-m", "rag.cli.main", *args]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"rag {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return seconds, done.stdout


def figures(eval_json: str) -> dict[str, float]:
    report = json.loads(eval_json)
    overall = report["systems"][0]["overall"]
    return {"R@5": round(100 * overall["recall_5"], 1), "MRR@10": round(100 * overall["mrr_10"], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, help="only the first N papers (no eval)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from rag.models.minilm import LocalEmbeddings
    from rag.settings import BUNDLED_PAPERS

    LocalEmbeddings().embed_query("warm the ONNX export")  # exported once, outside the clock
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"PYTHONPATH": str(ROOT), "RAG_LLM__MODEL": "offline"}
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-shipped-") as tmp:
        paths: list[str] = []
        if args.papers:
            lines = BUNDLED_PAPERS.read_text(encoding="utf-8").splitlines(keepends=True)
            subset = Path(tmp) / "papers.jsonl"
            subset.write_text("".join(lines[: args.papers]), encoding="utf-8")
            paths = [str(subset)]
        for name, extra in (
            ("shipped", {}),
            ("computed", {"RAG_EMBEDDING__BUNDLED_VECTORS": "false"}),
        ):
            index = Path(tmp) / name
            load = os.getloadavg()[0]
            seconds, _ = rag("ingest", *paths, "--index", str(index), "--json", env=env | extra)
            result[name] = {"ingest_s": round(seconds, 1), "load": round(load, 2)}
            if not args.papers:
                _, report = rag(
                    "eval", "--index", str(index), "--no-baselines", "--json", env=env | extra
                )
                result[name] |= figures(report)
            print(f"{name}: {result[name]}", file=sys.stderr)
    result["speedup"] = round(result["computed"]["ingest_s"] / result["shipped"]["ingest_s"], 2)
    same = all(result["shipped"].get(k) == result["computed"].get(k) for k in ("R@5", "MRR@10"))
    result["same_retrieval"] = same if not args.papers else None
    if args.json:
        print(json.dumps(result))
        return
    for name in ("shipped", "computed"):
        r = result[name]
        scores = f"   R@5 {r['R@5']:.1f}  MRR@10 {r['MRR@10']:.1f}" if "R@5" in r else ""
        print(f"{name:<9} ingest {r['ingest_s']:7.1f} s (load {r['load']:.2f}){scores}")
    of = f" ({args.papers} papers)" if args.papers else ""
    compared = f"retrieval the same: {same}" if not args.papers else "no eval on a subset"
    print(f"shipped vectors{of}: {result['speedup']:.2f}x faster; {compared}")


if __name__ == "__main__":
    main()
