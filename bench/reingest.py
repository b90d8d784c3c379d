"""Unchanged re-ingest time, and the peak memory of the app's processes.

    .venv/bin/python -m bench.reingest [--index DIR] [--config PRESET]

1. Re-ingest of an unchanged corpus (the 2,105 papers plus the seeds; default index
   .rag/eval-index, built once if missing): `build_index` in this process (target <= 3 s;
   median of 3), then the whole `rag ingest` command in a fresh process (interpreter start-up
   and imports included), with the first full ingest's time from the same run when it had to
   build one.
2. Peak RSS (the kernel's ru_maxrss of the child process, target <= 1.5 GB) of: `rag search`
   and `rag ask` (offline answerer) over 20 questions on that index, and the Streamlit app
   driven through three questions by Streamlit's AppTest in a child process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rag.cli.main import EVAL_CORPUS
from rag.cli.main import EVAL_QUESTIONS as QUESTIONS
from rag.evaluation.metrics import load_questions
from rag.index.ingest import build_index
from rag.models.factory import make_embeddings
from rag.settings import get_settings, with_overrides

ROOT = Path(__file__).resolve().parents[1]

RAG = [str(ROOT / ".venv" / "bin" / "python"), "-m", "rag.cli.main"]
UI_SCRIPT = """
import sys
from streamlit.testing.v1 import AppTest
app = AppTest.from_file(sys.argv[1], default_timeout=600)
app.run()
for question in sys.argv[2:]:
    app.chat_input[0].set_value(question).run()
    assert not app.exception, app.exception
print(len(app.chat_message), "messages")
"""


# Linux counts the memory of the process a child was forked from in the child's ru_maxrss
# (the high-water mark survives exec), and this process holds the model. So each command is
# started by a small launcher process, which reports its child's own peak.
LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_child(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, last output line) of one child process."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile() as peak:
        launch = [sys.executable, "-c", LAUNCHER, peak.name, *command]
        code = subprocess.call(launch, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        seconds = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode(errors="replace").strip()
        kilobytes = int(Path(peak.name).read_text() or 0)
    if code != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed:\n{text[-2000:]}")
    return seconds, kilobytes / 1024, (text.splitlines() or [""])[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=ROOT / ".rag" / "eval-index")
    parser.add_argument("--config", default="offline", help="preset or file (default offline)")
    args = parser.parse_args()

    settings = with_overrides(get_settings(args.config), {"store": {"index_dir": str(args.index)}})
    corpus = list(EVAL_CORPUS)
    embeddings = make_embeddings(settings.embedding)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; index {args.index}")
    first = build_index(settings, corpus, embeddings=embeddings)
    if first.added or first.updated:
        print(
            f"first ingest: {first.added + first.updated} papers, {first.embedded_chunks} "
            f"chunks in {first.seconds:.1f} s"
        )
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        report = build_index(settings, corpus, embeddings=embeddings)
        runs.append(time.perf_counter() - started)
        assert report.added == report.updated == 0, report
    print(
        f"unchanged re-ingest of {report.unchanged} papers, in process: median "
        f"{statistics.median(runs):.2f} s (runs {', '.join(f'{r:.2f}' for r in runs)}; "
        f"target <= 3 s)"
    )
    cli = [*RAG, "ingest", *map(str, corpus), "--index", str(args.index)]
    seconds, rss, last = run_child([*cli, "--config", args.config])
    print(
        f"unchanged re-ingest, `rag ingest` in a new process: {seconds:.2f} s "
        f"(peak RSS {rss:.0f} MB)"
    )

    questions = [q.question for q in load_questions(QUESTIONS) if q.kind != "chinese"][:20]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(questions) + "\n")
    target = 1536
    where = ["--index", str(args.index), "--config", args.config]
    rows = []
    for name in ("search", "ask"):
        seconds, rss, _ = run_child([*RAG, name, "--batch", f.name, "--json", *where])
        rows.append((f"rag {name} ({len(questions)} questions)", seconds, rss))
    env = os.environ | {"RAG_CONFIG": args.config, "RAG_STORE__INDEX_DIR": str(args.index)}
    try:
        seconds, rss, last = run_child(
            [RAG[0], "-c", UI_SCRIPT, str(ROOT / "ui" / "app.py"), *questions[:3]], env=env
        )
        rows.append(("Streamlit app (AppTest, 3 questions)", seconds, rss))
    except RuntimeError as e:
        print(f"the Streamlit app could not be measured: {e}")
    os.unlink(f.name)
    for name, seconds, rss in rows:
        verdict = "meets" if rss <= target else "MISSES"
        print(f"peak RSS {name:<40}{rss:7.0f} MB  ({seconds:5.1f} s; target <= 1.5 GB: {verdict})")
    print(
        json.dumps({"reingest_s": statistics.median(runs), "peak_rss_mb": max(r[2] for r in rows)})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
