"""The offline answer's time, as the page runs it (`stream_answer` to its end), this tree
beside a baseline revision measured in the same run.

    python -m bench.answer_latency [--baseline REV] [--questions 60] [--rounds 2] [--json]

Questions: the first N of data/eval/questions.jsonl and data/eval/list_questions.jsonl
(half each), on a warm assistant (one pass first, not timed); each round times every
question once. Printed: the median and p90 of wall seconds and of CPU seconds (the
process's, which other processes' load inflates far less than wall time), and the ratio of
this tree to the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

EVAL = Path("data/eval")


def questions(n: int) -> list[str]:
    rows = []
    for name in ("questions.jsonl", "list_questions.jsonl"):
        lines = (EVAL / name).read_text(encoding="utf-8").splitlines()
        rows.append([json.loads(line)["question"] for line in lines if line.strip()])
    return rows[0][: n - n // 2] + rows[1][: n // 2]


def timed(asked: list[str], rounds: int) -> dict[str, list[float]]:
    os.environ["RAG_LLM__MODEL"] = "offline"
    from rag.answer.pipeline import answer, open_assistant
    from rag.settings import get_settings

    assistant = open_assistant(get_settings())
    for question in asked:  # warm: models, index, caches
        answer(question, assistant=assistant)
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(rounds):
        for question in asked:
            w, c = time.perf_counter(), time.process_time()
            answer(question, assistant=assistant)
            wall.append(time.perf_counter() - w)
            cpu.append(time.process_time() - c)
    return {"wall": wall, "cpu": cpu}


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": statistics.median(ordered), "p90": ordered[int(0.9 * (len(ordered) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a git revision measured in the same run")
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    asked = questions(args.questions)
    if args.out:
        args.out.write_text(json.dumps(timed(asked, args.rounds)), encoding="utf-8")
        return
    runs = {"this tree": timed(asked, args.rounds)}
    if args.baseline:
        from bench.baseline import measure_at

        flags = ["--questions", str(args.questions), "--rounds", str(args.rounds)]
        runs[args.baseline] = measure_at(args.baseline, "answer_latency.py", flags)
    result: dict[str, Any] = {
        name: {kind: summary(values) for kind, values in run.items()} for name, run in runs.items()
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"{len(asked)} questions x {args.rounds} rounds, offline, warm")
    print(f"{'':12}{'wall p50':>10}{'wall p90':>10}{'cpu p50':>10}{'cpu p90':>10}")
    for name, figures in result.items():
        cells = [figures[k][p] for k in ("wall", "cpu") for p in ("p50", "p90")]
        print(f"{name:12}" + "".join(f"{v:>10.3f}" for v in cells))
    if args.baseline:
        mine, base = result["this tree"], result[args.baseline]
        for kind in ("wall", "cpu"):
            print(f"ratio {kind} p50: {mine[kind]['p50'] / base[kind]['p50']:.2f}")


if __name__ == "__main__":
    main()
