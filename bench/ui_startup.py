"""Time the chat in a real browser: `streamlit run` to the first answer, then a warm answer.

    .venv/bin/python -m bench.ui_startup --index .rag/index          # an index built by rag ingest
    .venv/bin/python -m bench.ui_startup --index DIR --json
    .venv/bin/python -m bench.ui_startup --index DIR --baseline main --runs 3 --load 2

Starts `streamlit run ui/app.py` on a free loopback port (offline answerer unless --model),
drives Debian's Chromium with Playwright, asks one question as soon as the chat input
shows, and prints the seconds from process start to the answer (with its source cards)
on screen (and the CPU seconds the server used for it, which a busy machine does not
inflate), then the time for a second, warm answer. Baselines from the same run:
- a bare Streamlit script's first paint (what any Streamlit app costs to start);
- `rag.answer.pipeline.answer()` called in-process on a warm assistant (what the answer
  itself costs).

`--baseline REV` times REV's page too, checked out with `git worktree add --detach` into a
temporary directory (removed after), alternating with this checkout `--runs` times (the
medians are printed, and each run's figures); `--load N` keeps N busy processes (one
`while True: pass` each) running during the whole measurement, for a load average of about N
on top of what else runs (it is printed: the machine is shared).
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testkit.streamlit_app import chromium, streamlit

ROOT = Path(__file__).resolve().parents[1]

TIMEOUT_MS = 300_000


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far: its cost, whatever else loads the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bare_first_paint(browser: Any, env: dict[str, str]) -> float:
    """Seconds from `streamlit run` of a one-line script to its text in the browser."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bare.py"
        script.write_text('import streamlit as st\n\nst.write("bare streamlit is up")\n')
        with streamlit(env, script) as served:
            page = browser.new_page()
            page.goto(served.url)
            page.get_by_text("bare streamlit is up").wait_for(timeout=TIMEOUT_MS)
            seconds = time.perf_counter() - served.started
            page.close()
    return seconds


def ask(page: Any, question: str, turn: int) -> float:
    """Type `question`; seconds until its answer, cards and feedback widget are on screen."""
    box = page.get_by_test_id("stChatInputTextArea")
    box.wait_for(timeout=TIMEOUT_MS)
    box.fill(question)
    sent = time.perf_counter()
    box.press("Enter")
    reply = page.get_by_test_id("stChatMessage").nth(2 * turn + 1)
    reply.get_by_test_id("stFeedback").wait_for(timeout=TIMEOUT_MS)
    return time.perf_counter() - sent


def app_timings(
    browser: Any, env: dict[str, str], questions: list[str], root: Path = ROOT
) -> dict[str, float]:
    """`root`'s ui/app.py, its own code first on the path: the seconds to each step."""
    env = {**env, "PYTHONPATH": str(root)}
    with streamlit(env, script=root / "ui" / "app.py", cwd=root) as served:
        page = browser.new_page()
        page.goto(served.url)
        page.get_by_test_id("stChatInputTextArea").wait_for(timeout=TIMEOUT_MS)
        input_shown = time.perf_counter() - served.started
        ask(page, questions[0], 0)
        first = time.perf_counter() - served.started
        first_cpu = cpu_seconds(served.pid)
        errors = page.get_by_test_id("stAlertContentError").count()
        warm = ask(page, questions[1], 1)
        page.close()
    if errors:
        raise SystemExit("the app showed an error instead of an answer; check the index")
    return {
        "server_healthy_s": served.healthy_after,
        "chat_input_shown_s": input_shown,
        "first_answer_s": first,
        "server_cpu_s_at_first_answer": first_cpu,
        "warm_answer_s": warm,
    }


def library_answer_seconds(env: dict[str, str], questions: list[str]) -> float:
    """`answer()` in this process for the second question after the first, as the app did."""
    os.environ.update({k: v for k, v in env.items() if k.startswith("RAG_")})
    from rag.answer.pipeline import answer, open_assistant
    from rag.settings import get_settings

    assistant = open_assistant(get_settings(env.get("RAG_CONFIG") or None))
    answer(questions[0], assistant=assistant)
    started = time.perf_counter()
    answer(questions[1], assistant=assistant)
    return time.perf_counter() - started


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """`processes` CPU-bound processes for the block (a load average of about that many)."""
    spinning = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)
    ]
    try:
        if spinning:
            time.sleep(5)  # the 1-minute load average needs a while to rise; the CPUs do not
        yield
    finally:
        for proc in spinning:
            proc.kill()
            proc.wait()


@contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """`rev` checked out in a temporary worktree for the block."""
    with tempfile.TemporaryDirectory() as tmp:
        into = Path(tmp) / "baseline"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), rev],
            check=True,
            capture_output=True,
        )
        try:
            yield into
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(into)], check=False
            )


def compared(
    browser: Any, env: dict[str, str], questions: list[str], roots: dict[str, Path], runs: int
) -> dict[str, Any]:
    """Each checkout's timings (medians over `runs` alternating rounds, and every run), with a
    bare Streamlit's first paint in each round."""
    every: dict[str, list[dict[str, float]]] = {name: [] for name in [*roots, "bare"]}
    for _ in range(runs):
        every["bare"].append({"first_paint_s": bare_first_paint(browser, env)})
        for name, root in roots.items():
            got = app_timings(browser, env, questions, root)
            got["load_average_1min"] = os.getloadavg()[0]
            every[name].append(got)
            print(f"{name}: " + ", ".join(f"{k} {v:.2f}" for k, v in got.items()), flush=True)
    return {
        name: {
            **{k: round(statistics.median(r[k] for r in rows), 2) for k in rows[0]},
            "runs": [{k: round(v, 2) for k, v in r.items()} for r in rows],
        }
        for name, rows in every.items()
    }


def print_result(result: dict[str, Any], as_json: bool) -> None:
    """One JSON line for scripts, or aligned `key  value` lines for a person."""
    if as_json:
        print(json.dumps(result))
        return
    width = max(map(len, result))
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=ROOT / ".rag" / "index")
    parser.add_argument("--model", default="offline", help="llm.model for the app")
    parser.add_argument("--config", help="RAG_CONFIG for the app (a preset or a file)")
    parser.add_argument(
        "--question", default="How can attention masks be supported efficiently in FlashAttention?"
    )
    parser.add_argument("--second", default="Summarize the work on evaluating LLM unlearning")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--baseline", help="a git revision to time beside this checkout")
    parser.add_argument("--runs", type=int, default=1, help="rounds over the checkouts")
    parser.add_argument("--load", type=int, default=0, help="busy processes during the runs")
    args = parser.parse_args()
    if not (args.index / "chroma" / "chroma.sqlite3").exists():
        raise SystemExit(f"no index at {args.index}: build it with `rag ingest --index DIR`")

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.update(RAG_STORE__INDEX_DIR=str(args.index.resolve()), RAG_LLM__MODEL=args.model)
    env["RAG_UI__FEEDBACK_PATH"] = str(Path(tempfile.gettempdir()) / "ui-bench-feedback.jsonl")
    if args.config:
        env["RAG_CONFIG"] = args.config

    questions = [args.question, args.second]
    if args.baseline:
        with checkout(args.baseline) as base, busy(args.load), chromium() as browser:
            roots = {f"baseline {args.baseline}": base, "current": ROOT}
            result = compared(browser, env, questions, roots, args.runs)
        print_result(
            {"index": str(args.index), "cores": os.cpu_count(), "busy": args.load, **result},
            args.json,
        )
        return
    with busy(args.load), chromium() as browser:
        bare = bare_first_paint(browser, env)
        app = app_timings(browser, env, questions)
    library = library_answer_seconds(env, [args.question, args.second])
    result = {
        "index": str(args.index),
        "cores": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        **{k: round(v, 2) for k, v in app.items()},
        "bare_streamlit_first_paint_s": round(bare, 2),
        "library_warm_answer_s": round(library, 3),
        "first_answer_vs_bare_streamlit": round(app["first_answer_s"] / bare, 2),
        "warm_answer_vs_library": round(app["warm_answer_s"] / library, 2),
        "target_first_answer_s": 10.0,
    }
    print_result(result, args.json)


if __name__ == "__main__":
    main()
