"""The app's safe server settings hold wherever it is started, and the page fetches nothing
from outside the app.

`cd /tmp && streamlit run /repo/ui/app.py` used to listen on all interfaces with usage
statistics on and full error details, since Streamlit read `.streamlit/config.toml` from the
working directory only. The settings now sit beside the script (ui/.streamlit/config.toml),
which Streamlit reads wherever it is started from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from rag.settings import Settings
from testkit.streamlit_app import APP, chromium, stop_group, streamlit

pytestmark = pytest.mark.slow

PROBE = """
import json, sys
from streamlit import config
config._main_script_path = sys.argv[1]
config.get_config_options(force_reparse=True)
names = ["server.address", "browser.gatherUsageStats", "client.showErrorDetails"]
print(json.dumps({n: config.get_option(n) for n in names}))
"""


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "STREAMLIT_"))}
    env.pop("OPENAI_API_KEY", None)
    env.update(HOME=str(home), **extra)
    return env


def test_streamlits_own_loader_reads_the_safe_settings_from_any_folder(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".streamlit").mkdir(parents=True)
    # Even a careless global config that exposes everything is overruled.
    (home / ".streamlit" / "config.toml").write_text(
        '[server]\naddress = "0.0.0.0"\n[browser]\ngatherUsageStats = true\n'
        '[client]\nshowErrorDetails = "full"\n'
    )
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(APP)],
        cwd=tmp_path,
        env=clean_env(home),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    options = json.loads(out.strip().splitlines()[-1])
    assert options["server.address"] == "127.0.0.1"
    assert options["browser.gatherUsageStats"] is False
    assert options["client.showErrorDetails"] in ("type", "none")


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on `port` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if int(hex_port, 16) == port and state == "0A":  # LISTEN
                found.add(address)
    return found


@pytest.fixture(scope="module")
def served_from_elsewhere(
    tmp_path_factory: pytest.TempPathFactory, seed_settings: Settings
) -> Iterator[Any]:
    """`streamlit run /abs/ui/app.py` from an unrelated folder, with no address given."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    env = clean_env(
        elsewhere,
        RAG_STORE__INDEX_DIR=str(seed_settings.store.index_dir),
        RAG_LLM__MODEL="offline",
    )
    with streamlit(env, cwd=elsewhere, address=None) as served:
        yield served


def test_started_from_another_folder_it_listens_on_loopback_only(
    served_from_elsewhere: Any,
) -> None:
    port = int(urlsplit(served_from_elsewhere.url).port or 0)
    addresses = listening_addresses(port)
    assert addresses == {"0100007F"}, addresses  # 127.0.0.1, nothing else (no 0.0.0.0, no ::)


def test_the_page_fetches_nothing_from_outside_the_app(served_from_elsewhere: Any) -> None:
    from playwright.sync_api import expect

    with chromium() as browser:
        page = browser.new_page()
        requested: list[str] = []
        page.on("request", lambda r: requested.append(r.url))
        page.goto(served_from_elsewhere.url)
        expect(page.get_by_test_id("stSidebar")).to_contain_text("38 papers", timeout=120_000)
        page.wait_for_timeout(3000)  # icons, fonts and beacons load after the first paint
    outside = [u for u in requested if urlsplit(u).hostname not in ("127.0.0.1", None)]
    outside = [u for u in outside if not u.startswith(("data:", "blob:"))]
    assert requested and not outside, outside


# Started through a symlink (issue 22, item 4) ----------------------------------------------

CARELESS = (
    '[server]\naddress = "0.0.0.0"\nheadless = true\n[browser]\ngatherUsageStats = true\n'
    '[client]\nshowErrorDetails = "full"\n'
)


def test_through_a_symlink_with_a_careless_config_it_refuses_to_serve(
    tmp_path: Path, seed_settings: Settings
) -> None:
    """`ln -s .../ui/app.py app.py; streamlit run app.py` skips ui/.streamlit/config.toml, so
    ~/.streamlit/config.toml's 0.0.0.0 applied: the first run of the script now ends the
    process with one line and exit 2 before drawing anything."""
    from playwright.sync_api import Error as PlaywrightError

    from testkit.chroma_server import free_port

    home, here = tmp_path / "home", tmp_path / "here"
    (home / ".streamlit").mkdir(parents=True)
    (home / ".streamlit" / "config.toml").write_text(CARELESS)
    here.mkdir()
    (here / "app.py").symlink_to(APP)
    env = clean_env(
        home, RAG_STORE__INDEX_DIR=str(seed_settings.store.index_dir), RAG_LLM__MODEL="offline"
    )
    port = free_port()
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port)]
    with (tmp_path / "stderr.log").open("wb") as err:
        proc = subprocess.Popen(
            command,
            cwd=here,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )
        try:
            url = f"http://127.0.0.1:{port}"
            for _ in range(300):
                if listening_addresses(port) or proc.poll() is not None:
                    break
                subprocess.run(["sleep", "0.1"], check=True)
            assert listening_addresses(port) == {"00000000"}  # the careless config applied
            with chromium() as browser:
                page = browser.new_page()
                try:
                    page.goto(url)
                    page.wait_for_timeout(1000)
                    shown = page.locator("body").inner_text(timeout=5000)
                except PlaywrightError:
                    shown = ""
            assert proc.wait(timeout=60) == 2
        finally:
            if proc.poll() is None:
                stop_group(proc)
    assert "papers" not in shown
    lines = (tmp_path / "stderr.log").read_text().splitlines()
    refusals = [line for line in lines if line.startswith("ui/app.py: refusing")]
    assert len(refusals) == 1 and "0.0.0.0" in refusals[0] and "--server.address" in refusals[0]
    assert "Traceback" not in "\n".join(lines)
    assert not listening_addresses(port)


def test_an_address_beyond_loopback_needs_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit import config

    from ui.serving import enforce_loopback, is_loopback, refused_address

    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "", "10.0.0.2", "example.org"]))
    config.get_config_options()
    monkeypatch.setattr(config, "_server_mode", "starlette-managed")  # a real server, not AppTest
    try:
        check_the_address_rules(config, refused_address, enforce_loopback)
    finally:
        config.get_config_options(force_reparse=True)  # the options as the files say again


def check_the_address_rules(config: Any, refused_address: Any, enforce_loopback: Any) -> None:
    for where, refused in [
        ("/home/u/.streamlit/config.toml", True),
        ("command-line argument or environment variable", False),  # --server.address
        ("environment variable", False),  # STREAMLIT_SERVER_ADDRESS
    ]:
        config._set_option("server.address", "0.0.0.0", where)
        assert (refused_address() is not None) is refused
    config._set_option("server.address", "", "/home/u/.streamlit/config.toml")
    assert "every interface" in (refused_address() or "")
    config._set_option("server.address", "127.0.0.1", "/home/u/.streamlit/config.toml")
    config._set_option("client.showErrorDetails", "full", "/home/u/.streamlit/config.toml")
    enforce_loopback()
    assert config.get_option("client.showErrorDetails") == "type"  # no traceback on the page


def test_the_one_command_serves_loopback_without_statistics_whatever_the_config(
    tmp_path: Path, seed_settings: Settings
) -> None:
    """Issue 32 (L2): `python -m ui` (what `make run` runs) passes the address and no usage
    statistics as flags, which outrank a careless ~/.streamlit/config.toml: before, such a
    config held the socket on 0.0.0.0 until the first visitor, whose browser then fetched
    Streamlit's metrics file."""
    from playwright.sync_api import expect

    from testkit.chroma_server import free_port
    from ui.__main__ import SAFE_FLAGS

    assert "$(BIN)/python -m ui --server.port" in Path("Makefile").read_text()
    assert SAFE_FLAGS[:4] == [
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
    ]
    home, here = tmp_path / "home", tmp_path / "here"
    (home / ".streamlit").mkdir(parents=True)
    (home / ".streamlit" / "config.toml").write_text(CARELESS)
    here.mkdir()
    env = clean_env(
        home, RAG_STORE__INDEX_DIR=str(seed_settings.store.index_dir), RAG_LLM__MODEL="offline"
    )
    port = free_port()
    command = [sys.executable, "-m", "ui", "--server.port", str(port)]
    proc = subprocess.Popen(
        command,
        cwd=here,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        for _ in range(600):
            if listening_addresses(port) or proc.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1 from the first moment
        with chromium() as browser:
            page = browser.new_page()
            requested: list[str] = []
            page.on("request", lambda r: requested.append(r.url))
            page.goto(f"http://127.0.0.1:{port}")
            expect(page.get_by_test_id("stSidebar")).to_contain_text("38 papers", timeout=120_000)
            page.wait_for_timeout(3000)  # the metrics file is fetched after the first paint
        assert proc.poll() is None  # serving, not refused
    finally:
        stop_group(proc)
    outside = [u for u in requested if urlsplit(u).hostname not in ("127.0.0.1", None)]
    assert requested and not [u for u in outside if not u.startswith(("data:", "blob:"))]
