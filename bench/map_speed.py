"""Time the first Map view and "Show on map" in headless Chromium, for this checkout and a
baseline revision, in one run (issue 23 asks for under 2 s each).

    .venv/bin/python -m bench.map_speed --index DIR                  # baseline: main
    .venv/bin/python -m bench.map_speed --index DIR --baseline REV --size 390x844
    .venv/bin/python -m bench.map_speed --index DIR --baseline none  # this checkout only
    .venv/bin/python -m bench.map_speed --index DIR --baseline lead --runs 3 --load 2

For each checkout: `streamlit run ui/app.py` offline over the index (a full 2,123-paper one
shows the real cost), wait for the chat, click Map and time until the plot has its data and is
drawn; back to Chat, ask one question, click "Show on map" under the answer and time until the
"cited" trace is drawn. Also printed: when the browser fetched Streamlit's Plotly chunk
(PlotlyChart.*.js, 4.7 MB) relative to the click (none: it was loaded before), since running
that chunk, not building the figure (0.01 s) or the server's run (about 2 s), was most of a
first Map view. And when the map was drawn after each click: twice means Streamlit remounted
the drawn map (a run that changes what wraps the page does that), which doubles the browser's
work. `--runs N` alternates the checkouts N times. The baseline is checked out with
`git worktree add --detach` into a temporary directory and removed after. The load average
is printed: the machine is shared. `--load N` keeps N busy processes running meanwhile
(bench.ui_startup's), for a load average of about N on top of what else runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.ui_startup import busy
from testkit.streamlit_app import chromium, streamlit

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How do sparse attention methods speed up long-context LLM inference?"
TIMEOUT_MS = 300_000
# The map's chart, not the hidden one-point chart that preloads Plotly at the end of the chat.
MAP = (
    "[...document.querySelectorAll('.js-plotly-plot')].find(e => !e.closest('.st-key-map-preload'))"
)
CHUNKS_SINCE_CLICK = """() => performance.getEntriesByType('resource')
    .filter(e => e.startTime >= window.__click && e.name.includes('PlotlyChart'))
    .map(e => [e.startTime - window.__click, e.responseEnd - window.__click])"""


# Every time a map chart (a new element, or its first points) is drawn after the click: Streamlit
# remounted the whole page, and with it the drawn map, when a run changed what wraps the page.
WATCH_DRAWS = f"""() => {{
    window.__click = performance.now();
    window.__draws = [];
    const watch = window.__watch = (window.__watch || 0) + 1;  // an earlier click's poll stops
    let last = null;
    const poll = () => {{
        if (watch !== window.__watch) return;
        const gd = {MAP};
        if (gd && gd !== last && gd.querySelector('.scatterlayer .point, canvas')) {{
            last = gd;
            window.__draws.push(performance.now() - window.__click);
        }}
        if (performance.now() - window.__click < 60000) requestAnimationFrame(poll);
    }};
    requestAnimationFrame(poll);
}}"""
SETTLE_S = 4.0  # how long after the first draw a second one is looked for


def click_timed(page: Any, locator: Any) -> float:
    page.evaluate(WATCH_DRAWS)
    locator.click()
    return time.perf_counter()


def draws(page: Any) -> list[float]:
    """Seconds after the click at which a map was drawn (a second one: drawn again)."""
    time.sleep(SETTLE_S)
    return [ms / 1000 for ms in page.evaluate("() => window.__draws")]


def measure(root: Path, index: Path, width: int, height: int, log: Path) -> dict[str, Any]:
    """Seconds for the first Map view and for "Show on map" with `root`'s ui/app.py."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.pop("OPENAI_API_KEY", None)
    with tempfile.TemporaryDirectory() as tmp:
        env.update(
            RAG_STORE__INDEX_DIR=str(index),
            RAG_LLM__MODEL="offline",
            PYTHONPATH=str(root),
            RAG_UI__FEEDBACK_PATH=str(Path(tmp) / "feedback.jsonl"),
        )
        script = root / "ui" / "app.py"
        with log.open("wb") as out, streamlit(env, script=script, log=out, cwd=root) as served:
            with chromium() as browser:
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(served.url)
                page.get_by_text("Try one of these").wait_for(timeout=TIMEOUT_MS)
                time.sleep(3)  # what a reader takes to look at the page
                views = page.get_by_test_id("stButtonGroup")
                start = click_timed(page, views.get_by_text("Map", exact=True))
                page.wait_for_function(
                    f"() => ({MAP})?.data?.length >= 1",
                    timeout=TIMEOUT_MS,
                )
                page.wait_for_function(f"() => ({MAP})?.querySelector('.scatterlayer, canvas')")
                first_map = time.perf_counter() - start
                chunk = page.evaluate(CHUNKS_SINCE_CLICK)
                first_draws = draws(page)
                views.get_by_text("Chat", exact=True).click()
                page.get_by_text("Try one of these").wait_for(timeout=TIMEOUT_MS)
                box = page.get_by_test_id("stChatInputTextArea")
                box.fill(QUESTION)
                box.press("Enter")
                reply = page.get_by_test_id("stChatMessage").nth(1)
                reply.get_by_test_id("stFeedback").wait_for(timeout=TIMEOUT_MS)
                time.sleep(1)
                start = click_timed(page, reply.get_by_role("button", name="Show on map"))
                page.wait_for_function(
                    f"() => (({MAP})?.data || []).some(t => t.name === 'cited')",
                    timeout=TIMEOUT_MS,
                )
                show = time.perf_counter() - start
                show_draws = draws(page)
    return {
        "first_map": first_map,
        "show_on_map": show,
        "chunk_after_click": chunk,
        "draws": (first_draws, show_draws),
    }


def baseline_checkout(rev: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), rev],
        check=True,
        capture_output=True,
    )
    return into


def run_all(
    roots: dict[str, Path], index: Path, size: tuple[int, int], logs: Path, runs: int
) -> None:
    """`runs` alternating rounds over the checkouts: each run's figures, then the medians."""
    width, height = size
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
    for name, root in [item for _ in range(runs) for item in roots.items()]:
        got = measure(root, index, width, height, logs / f"{len(name)}.log")
        seen[name].append((got["first_map"], got["show_on_map"]))
        fetched = got["chunk_after_click"]
        chunk = ", ".join(f"{a / 1000:.1f}-{b / 1000:.1f} s" for a, b in fetched)
        drawn = "; ".join(", ".join(f"{t:.2f}" for t in times) or "-" for times in got["draws"])
        print(
            f"{name}: first Map view {got['first_map']:.2f} s, Show on map "
            f"{got['show_on_map']:.2f} s at {width}x{height} (map drawn at {drawn} s "
            f"after each click; Plotly chunk fetched after the click: "
            f"{chunk or 'no, loaded before'}); load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    if runs > 1:
        for name, rows in seen.items():
            first, show = (statistics.median(column) for column in zip(*rows, strict=True))
            median = f"first Map view {first:.2f} s, Show on map {show:.2f} s"
            print(f"{name}, median of {runs}: {median}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="an index directory")
    parser.add_argument("--baseline", default="main", help="a git revision, or none")
    parser.add_argument("--size", default="1280x800", help="the viewport, WIDTHxHEIGHT")
    parser.add_argument("--runs", type=int, default=1, help="rounds over the checkouts")
    parser.add_argument("--load", type=int, default=0, help="busy processes during the runs")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    index = args.index.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"current": ROOT}
        if args.baseline != "none":
            roots = {f"baseline {args.baseline}": baseline_checkout(args.baseline, Path(tmp) / "b")}
            roots["current"] = ROOT
        try:
            with busy(args.load):
                run_all(roots, index, (width, height), Path(tmp), args.runs)
        finally:
            if args.baseline != "none":
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(Path(tmp) / "b")],
                    check=False,
                )


if __name__ == "__main__":
    main()
