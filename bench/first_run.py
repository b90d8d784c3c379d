"""Time `make run` on a fresh clone: to the first answer in a real browser, then a later start.

    .venv/bin/python -m bench.first_run                 # clones this repository to a temp folder
    .venv/bin/python -m bench.first_run --clone DIR --json
    .venv/bin/python -m bench.first_run --multilingual both   # with and without, one run

The clone has no index. `make run` is started in it with this interpreter's environment as the
installed venv (BIN=..., and a VENV marker newer than pyproject.toml so nothing is installed:
the pip install is not counted). Debian's Chromium opens the page at once and keeps it open:
the script records when the page first shows the build's progress, waits for the chat to open,
asks the question and times the answer on screen. Then `make run` is stopped and started again:
the later start, to the same answer. Baselines from the same run: `rag ingest`'s own time (from
its report line in the terminal output) and a bare Streamlit script's first paint.
`--multilingual both` times the first start twice, in two fresh clones, in one run: without the
multilingual vectors (RAG_EMBEDDING__MULTILINGUAL=false) and with them (the default), and
prints what they add.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from bench.ui_startup import bare_first_paint, print_result
from testkit.chroma_server import free_port
from testkit.streamlit_app import chromium, stop_group

ROOT = Path(__file__).resolve().parents[1]

QUESTION = "Which paper rewires molecular graphs using the Lennard-Jones potential?"
TIMEOUT_MS = 900_000
REPORT_WAIT_S = 300
INGEST_REPORT = re.compile(rb"papers: .*?; ([\d.]+) s\n")
INGEST_DONE = re.compile(rb"papers: .*?; [\d.]+ s\n|the index in .* is ready")


def start_make_run(
    clone: Path, port: int, log: IO[bytes], extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    venv = clone / ".bench-venv"  # a marker only: `make` sees the venv installed
    venv.mkdir(exist_ok=True)
    (venv / ".installed").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env |= {"PYTHONPATH": str(clone), "RAG_LLM__MODEL": "offline", **(extra_env or {})}
    bindir = str(Path(sys.executable).parent)
    command = ["make", "run", f"BIN={bindir}", f"VENV={venv}", f"APP_PORT={port}"]
    return subprocess.Popen(
        command, cwd=clone, env=env, stdout=log, stderr=log, start_new_session=True
    )


def time_to_answer(
    browser: Any, clone: Path, log_path: Path, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Start `make run`, keep loading the page until it answers; seconds from the start."""
    port = free_port()
    with log_path.open("wb") as log:
        started = time.perf_counter()
        proc = start_make_run(clone, port, log, extra_env)
        page = browser.new_page()
        result: dict[str, Any] = {}
        try:
            while True:  # until the server listens
                try:
                    page.goto(f"http://127.0.0.1:{port}", timeout=5000)
                    break
                except Exception:
                    if proc.poll() is not None:
                        raise SystemExit(f"make run exited; see {log_path}") from None
                    time.sleep(0.2)
            result["page_loaded_s"] = time.perf_counter() - started
            progress = page.get_by_test_id("stProgress")
            examples = page.get_by_text("Try one of these:")
            while not examples.count():
                if progress.count() and "build_progress_shown_s" not in result:
                    result["build_progress_shown_s"] = time.perf_counter() - started
                    result["build_progress_text"] = progress.first.inner_text()
                note_build(clone, result, started)
                time.sleep(0.2)
            result["chat_ready_s"] = time.perf_counter() - started
            box = page.get_by_test_id("stChatInputTextArea")
            box.fill(QUESTION)
            box.press("Enter")
            reply = page.get_by_test_id("stChatMessage").nth(1)
            reply.get_by_test_id("stFeedback").wait_for(timeout=TIMEOUT_MS)
            result["first_answer_s"] = time.perf_counter() - started
            shown = reply.inner_text()
            result["rebind_card_titled"] = "REBIND: Enhancing Ground-state" in shown
            result["openreview_link"] = reply.locator('a[href*="WNIEr5kydF"]').count() > 0
            # `rag ingest` prints its report (English and multilingual times) when it ends,
            # after the topic map: wait for it, so both come from this run.
            deadline = time.perf_counter() + REPORT_WAIT_S
            while time.perf_counter() < deadline and not INGEST_DONE.search(log_path.read_bytes()):
                time.sleep(0.5)
        finally:
            page.close()
            stop_group(proc, timeout=30)
    match = INGEST_REPORT.search(log_path.read_bytes())
    result["ingest_s"] = float(match.group(1)) if match else None
    match = re.search(
        rb"multilingual vectors: \d+ papers embedded now; ([\d.]+) s", log_path.read_bytes()
    )
    result["multilingual_s"] = float(match.group(1)) if match else None
    return result


def note_build(clone: Path, result: dict[str, Any], started: float) -> None:
    """When `rag ingest` recorded its build, and when it marked the index searchable (the
    chat may open from then: only the topic map is left), from its record beside the index."""
    try:
        record = json.loads((clone / ".rag" / "index.build.json").read_text())
    except (OSError, ValueError):
        return
    now = time.perf_counter() - started
    result.setdefault("build_recorded_s", now)
    if record.get("serving") is True:
        result.setdefault("searchable_s", now)


def fresh_clone(path: Path | None) -> Path:
    clone = path or Path(tempfile.mkdtemp(prefix="first-run-")) / "repo"
    if not clone.exists():
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    if (clone / ".rag").exists():
        raise SystemExit(f"{clone}/.rag exists: the first run needs a clone without an index")
    return clone


def rounded(prefix: str, values: dict[str, Any]) -> dict[str, Any]:
    return {f"{prefix}{k}": round(v, 2) if isinstance(v, float) else v for k, v in values.items()}


def compare(browser: Any) -> dict[str, Any]:
    """First start without, then with, the multilingual vectors, each in its own fresh clone."""
    without_clone, with_clone = fresh_clone(None), fresh_clone(None)
    off = {"RAG_EMBEDDING__MULTILINGUAL": "false"}
    without = time_to_answer(browser, without_clone, without_clone / "first-run.log", off)
    with_ = time_to_answer(browser, with_clone, with_clone / "first-run.log")
    later = time_to_answer(browser, with_clone, with_clone / "later-run.log")
    out = {
        "clones": [str(without_clone), str(with_clone)],
        **rounded("without_multilingual_first_", without),
        **rounded("with_multilingual_first_", with_),
        **rounded("with_multilingual_later_", later),
        "first_answer_with_over_without": round(
            with_["first_answer_s"] / without["first_answer_s"], 2
        ),
    }
    if with_["multilingual_s"] and with_["first_answer_s"]:
        out["multilingual_share_of_first_answer"] = round(
            with_["multilingual_s"] / with_["first_answer_s"], 3
        )
    if with_["ingest_s"] and without["ingest_s"]:
        out["english_ingest_with_over_without"] = round(with_["ingest_s"] / without["ingest_s"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clone", type=Path, help="a fresh clone (default: git clone to /tmp)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--multilingual",
        choices=["on", "off", "both"],
        default="on",
        help="build the multilingual vectors (on, the default), not (off), or time both",
    )
    args = parser.parse_args()
    if args.multilingual == "both" and args.clone:
        raise SystemExit("--multilingual both makes its own two clones; leave out --clone")
    load_before = os.getloadavg()[0]
    result: dict[str, Any] = {"cores": os.cpu_count()}
    with chromium() as browser:
        if args.multilingual == "both":
            result |= compare(browser)
        else:
            clone = fresh_clone(args.clone)
            extra = {"RAG_EMBEDDING__MULTILINGUAL": "false"} if args.multilingual == "off" else {}
            first = time_to_answer(browser, clone, clone / "first-run.log", extra)
            later = time_to_answer(browser, clone, clone / "later-run.log", extra)
            result |= {"clone": str(clone), **rounded("first_", first), **rounded("later_", later)}
            if first["ingest_s"]:
                result["first_answer_minus_ingest_s"] = round(
                    first["first_answer_s"] - first["ingest_s"], 2
                )
        bare = bare_first_paint(browser, dict(os.environ))
    later_s = result.get(
        "later_first_answer_s", result.get("with_multilingual_later_first_answer_s")
    )
    result |= {
        "load_average_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "bare_streamlit_first_paint_s": round(bare, 2),
        "later_answer_vs_bare_streamlit": round(later_s / bare, 2),
        "targets_s": {"first": 120, "later": 10},
    }
    print_result(result, args.json)


if __name__ == "__main__":
    main()
