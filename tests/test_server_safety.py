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
from testkit.streamlit_app import APP, chromium, streamlit

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
