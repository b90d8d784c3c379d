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
    person would. The last try waits longest and its failure is the test's."""
    for attempt in range(1, tries + 1):
        wait_idle(page, settle_ms=500)
        x, y = cited_point(page, k)
        (tap or page.mouse.click)(x, y)
        try:
            opened(30_000 if attempt < tries else 120_000)
            return
        except AssertionError:
            if attempt == tries:
                raise


def cited_point(page: Any, k: int = 0) -> tuple[float, float]:
    """The middle of the k-th cited marker of the map as drawn now (its SVG element, not the axes'
    arithmetic: a redraw or a scroll between reading the axes and tapping moved the tap off
    the point under load in CI). A rerun replaces the chart: wait until one is drawn."""
    page.wait_for_function(
        """() => {
            const gd = document.querySelector('.st-key-map-box .js-plotly-plot');
            return !!(gd && gd.data && gd.data.some(t => t.name === 'cited'));
        }""",
        timeout=120_000,
    )
    return tuple(
        page.evaluate(
            """(k) => {
                const gd = document.querySelector('.st-key-map-box .js-plotly-plot');
                const i = gd.data.findIndex(t => t.name === 'cited');
                const trace = gd.querySelectorAll('.scatterlayer .trace')[i];
                const r = trace.querySelectorAll('.point')[k].getBoundingClientRect();
                return [r.left + r.width / 2, r.top + r.height / 2];
            }""",
            k,
        )
    )
