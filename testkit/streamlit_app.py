"""The chat app served by a real `streamlit run` on loopback, and Debian's Chromium to drive it.

Shared by the browser tests and bench (bench.ui_startup, bench.first_run).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from testkit.chroma_server import free_port

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "ui" / "app.py"
CHROMIUM = "/usr/bin/chromium"  # Debian's package, installed by `make browser`
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class Served:
    url: str
    pid: int
    started: float  # time.perf_counter() just before `streamlit run` was started
    healthy_after: float  # seconds until /_stcore/health answered


@contextmanager
def streamlit(
    env: dict[str, str],
    script: Path = APP,
    log: IO[bytes] | None = None,
    timeout: float = 90.0,
    cwd: Path = ROOT,
    address: str | None = "127.0.0.1",
) -> Iterator[Served]:
    """Run `streamlit run script` on a free port until the block ends.

    `address=None` passes no address, so the app's own config decides where it listens.
    """
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port)]
    command += ["--server.headless", "true"]
    if address is not None:
        command += ["--server.address", address]
    output = log or subprocess.DEVNULL
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=output, stderr=output, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, timeout)
        yield Served(url, proc.pid, started, time.perf_counter() - started)
    finally:
        stop_group(proc)


@contextmanager
def offline_app(index: Path, folder: Path, **env: str) -> Iterator[str]:
    """The page's URL, offline, over `index`: the caller's RAG_* settings and key left out, the
    feedback log and the server's log in `folder`, `env` on top."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    clean.pop("OPENAI_API_KEY", None)
    clean.update(
        RAG_STORE__INDEX_DIR=str(index),
        RAG_LLM__MODEL="offline",
        RAG_UI__FEEDBACK_PATH=str(folder / "feedback.jsonl"),
        **env,
    )
    with (folder / "streamlit.log").open("wb") as log, streamlit(clean, log=log) as served:
        yield served.url


def stop_group(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """End `proc` and its children (its own session): SIGTERM, then SIGKILL after `timeout`."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.read() == b"ok":
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"streamlit did not answer {url}/_stcore/health within {timeout:.0f} s")


@contextmanager
def chromium() -> Iterator[Any]:
    """Headless Debian Chromium through Playwright (no browser is downloaded)."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_app(browser: Any, url: str, ready: str, height: int = 1600) -> tuple[Any, list[str]]:
    """A new page on the app at `url`, once its sidebar shows `ready`; and the messages of the
    dialogs it opens (dismissed: a test expects none)."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": height}, accept_downloads=True)
    dialogs: list[str] = []

    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.goto(url)
    expect(page.get_by_test_id("stSidebar")).to_contain_text(ready, timeout=120_000)
    return page, dialogs


def ask_in_page(page: Any, question: str) -> None:
    """Type `question` into the chat box and send it."""
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(question)
    box.press("Enter")


def ask_turn(page: Any, question: str, turn: int, timeout_ms: int = 120_000) -> Any:
    """Send `question`; the reply of chat turn `turn` (from 0) once its feedback widget is
    drawn."""
    from playwright.sync_api import expect

    ask_in_page(page, question)
    reply = page.get_by_test_id("stChatMessage").nth(2 * turn + 1)
    expect(reply.get_by_test_id("stFeedback")).to_be_visible(timeout=timeout_ms)
    return reply


def open_chat(
    browser: Any,
    url: str,
    size: tuple[int, int] = (1280, 800),
    touch: bool = False,
    timeout_ms: int = 120_000,
) -> Any:
    """A new browser context of `size` (a touch screen with `touch`) on the app, once its chat
    box is shown (on a phone the sidebar is folded away) and the first run has ended."""
    from playwright.sync_api import expect

    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height}, has_touch=touch)
    page = context.new_page()
    page.goto(url)
    expect(page.get_by_test_id("stChatInputTextArea")).to_be_visible(timeout=timeout_ms)
    wait_idle(page, timeout_ms=timeout_ms)
    return page


def ask_settled(page: Any, question: str, turn: int, timeout_ms: int = 120_000) -> Any:
    """`ask_turn`, then the page's rerun let finish (a click during it lands on an element
    about to be replaced)."""
    reply = ask_turn(page, question, turn, timeout_ms)
    wait_idle(page, timeout_ms=timeout_ms)
    return reply


def wait_idle(page: Any, settle_ms: int = 300, timeout_ms: int = 120_000) -> None:
    """Wait until Streamlit's running indicator is gone, then `settle_ms` for the last redraw:
    a click during a rerun lands on an element about to be replaced."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms
    )
    page.wait_for_timeout(settle_ms)


def tap_until_open(
    page: Any,
    k: int,
    opened: Callable[[int], None],
    tap: Callable[[float, float], None] | None = None,
    tries: int = 3,
) -> None:
    """Tap (click) the k-th cited marker of the map until `opened(timeout_ms)` passes (it
    raises AssertionError otherwise, as Playwright's `expect` does), at most `tries` times.
    Each tap waits for the page to be idle and finds the marker where it is drawn then; a tap
    Plotly loses while a rerun redraws the chart (seen under load) is tapped again, as a
    person would, and a map that is no longer shown is brought back with the Map button. The
    last try waits longest and its failure is the test's, with what the page showed."""
    for attempt in range(1, tries + 1):
        wait_idle(page, settle_ms=500)
        last = attempt == tries
        try:
            x, y = steady_cited_point(page, k, timeout_ms=120_000 if last else 30_000)
        except AssertionError as gone:
            if last:
                raise
            print(f"tap {attempt}: {gone}; back to the Map view")
            back = page.locator('button[kind^="segmented_control"]', has_text="Map")
            if back.count():  # else the map is still shown, only redrawn: the next try waits
                back.first.click(timeout=30_000)
            continue
        # Plotly's click selects the point its last hover found, and a hover is computed at
        # most every 50 ms: a click at once after a move (or a tap while the mouse rests on
        # another point) selected the point under the old mouse position. A person's pointer
        # rests on the point before the click; a phone has no pointer, so it leaves the chart.
        page.mouse.move(*((0, 0) if tap else (x, y)))
        page.wait_for_timeout(300)
        (tap or page.mouse.click)(x, y)
        try:
            opened(120_000 if last else 30_000)
            return
        except AssertionError as missed:
            print(f"tap {attempt} at ({x:.0f}, {y:.0f}) missed; the page: {map_state(page)}")
            if last:
                raise AssertionError(
                    f"{missed}\ntapped at ({x:.0f}, {y:.0f}); the page: {map_state(page)}"
                ) from missed


def steady_cited_point(page: Any, k: int, timeout_ms: int, reads: int = 10) -> tuple[float, float]:
    """The k-th cited marker's middle once the map is in the middle of the screen and has
    stopped moving (two reads 250 ms apart agree): a chat page that scrolls itself, or a card
    drawn above the map, moved the map between reading the point and tapping it."""
    page.evaluate(
        """() => { const charts = document.querySelectorAll('.st-key-map-box .js-plotly-plot');
                   const gd = charts[charts.length - 1];
                   if (gd) gd.scrollIntoView({block: 'center'}); }"""
    )
    point = cited_point(page, k, timeout_ms)
    for _ in range(reads):
        page.wait_for_timeout(250)
        again = cited_point(page, k, timeout_ms)
        if abs(again[0] - point[0]) <= 1 and abs(again[1] - point[1]) <= 1:
            break
        point = again
    return point


# What the map part of the page shows: the active view, each chart's traces and size, any
# exception Streamlit drew. Read when a tap went wrong, to say why.
MAP_STATE = """() => ({
    views: Array.from(document.querySelectorAll('button[kind^="segmented_control"]'))
        .map(b => b.getAttribute('kind').endsWith('Active') ? `[${b.innerText.trim()}]`
                                                            : b.innerText.trim()),
    charts: Array.from(document.querySelectorAll('.st-key-map-box .js-plotly-plot')).map(gd => {
        const r = gd.getBoundingClientRect();
        return {traces: (gd.data || []).map(t => t.name), box: [r.x, r.y, r.width, r.height]};
    }),
    errors: Array.from(document.querySelectorAll('[data-testid="stException"]'))
        .map(e => e.innerText.slice(0, 300)),
    scroll: window.scrollY,
    open: (() => {  // the paper whose card is open, and where its marker is drawn
        const a = document.querySelector("[class*='st-key-paper-card-map'] a[href*='forum?id=']");
        const id = a ? a.href.split('id=')[1] : null;
        const charts = document.querySelectorAll('.st-key-map-box .js-plotly-plot');
        const gd = charts[charts.length - 1];
        const at = [];
        if (id && gd) (gd.data || []).forEach((t, i) => {
            const j = Array.from(t.customdata || []).map(String).indexOf(id);
            const dot = j < 0 ? null : gd.querySelectorAll('.scatterlayer .trace')[i]
                ?.querySelectorAll('.point')[j];
            if (!dot) return;
            const r = dot.getBoundingClientRect();
            at.push([t.name, Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]);
        });
        return {id, at};
    })(),
})"""


def map_state(page: Any) -> Any:
    try:
        return page.evaluate(MAP_STATE)
    except Exception as failed:  # the page itself is gone
        return repr(failed)


def cited_point(page: Any, k: int = 0, timeout_ms: int = 120_000) -> tuple[float, float]:
    """The middle of the k-th cited marker of the map as drawn now (its SVG element, not the axes'
    arithmetic: a redraw or a scroll between reading the axes and tapping moved the tap off
    the point under load in CI). A rerun replaces the chart, and for a moment the old and the
    new one can both be in the page: the point is read from the last chart drawn with it.
    AssertionError, saying what the page shows, when no such chart comes."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        point = page.wait_for_function(
            """(k) => {
                const charts = document.querySelectorAll('.st-key-map-box .js-plotly-plot');
                for (const gd of Array.from(charts).reverse()) {
                    const i = (gd.data || []).findIndex(t => t.name === 'cited');
                    const trace = i < 0 ? null : gd.querySelectorAll('.scatterlayer .trace')[i];
                    const dot = trace ? trace.querySelectorAll('.point')[k] : null;
                    const r = dot ? dot.getBoundingClientRect() : null;
                    if (r && r.width > 0) return [r.left + r.width / 2, r.top + r.height / 2];
                }
                return null;
            }""",
            arg=k,
            timeout=timeout_ms,
        ).json_value()
    except PlaywrightTimeout as late:
        raise AssertionError(
            f"no map with cited marker {k} after {timeout_ms} ms: {map_state(page)}"
        ) from late
    return float(point[0]), float(point[1])
