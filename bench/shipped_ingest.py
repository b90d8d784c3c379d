"""`rag ingest` of the bundled corpus into an empty folder, with the shipped vectors and without.

    .venv/bin/python -m bench.shipped_ingest [--json]

Two `rag ingest` processes, one after the other, each into its own empty folder: the default
(the vectors and map shipped in data/iclr2025, rag.index.shipped) and the baseline
`RAG_EMBEDDING__BUNDLED_VECTORS=false`, which embeds every chunk and paper (and computes the
map) here. Wall time of each process, their ratio, the load average beside them; then
`rag eval --no-baselines` on both indexes: the retrieval figures must be the same (R@5 and
MRR@10 to the first decimal). The ONNX export is made before the clock starts.
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
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from rag.models.minilm import LocalEmbeddings

    LocalEmbeddings().embed_query("warm the ONNX export")  # exported once, outside the clock
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"PYTHONPATH": str(ROOT), "RAG_LLM__MODEL": "offline"}
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-shipped-") as tmp:
        for name, extra in (
            ("shipped", {}),
            ("computed", {"RAG_EMBEDDING__BUNDLED_VECTORS": "false"}),
        ):
            index = Path(tmp) / name
            load = os.getloadavg()[0]
            seconds, _ = rag("ingest", "--index", str(index), "--json", env=env | extra)
            _, report = rag(
                "eval", "--index", str(index), "--no-baselines", "--json", env=env | extra
            )
            result[name] = {"ingest_s": round(seconds, 1), "load": round(load, 2)} | figures(report)
            print(f"{name}: {result[name]}", file=sys.stderr)
    result["speedup"] = round(result["computed"]["ingest_s"] / result["shipped"]["ingest_s"], 2)
    same = all(result["shipped"][k] == result["computed"][k] for k in ("R@5", "MRR@10"))
    result["same_retrieval"] = same
    if args.json:
        print(json.dumps(result))
        return
    for name in ("shipped", "computed"):
        r = result[name]
        print(
            f"{name:<9} ingest {r['ingest_s']:7.1f} s (load {r['load']:.2f})   "
            f"R@5 {r['R@5']:.1f}  MRR@10 {r['MRR@10']:.1f}"
        )
    print(f"shipped vectors: {result['speedup']:.2f}x faster; retrieval the same: {same}")


if __name__ == "__main__":
    main()
