"""The index on a disk that says no: a read-only mount, and (below) a full disk.

Real mounts (a read-only bind mount, a small tmpfs) need root, as tests and CI run here;
where mounting is not allowed the test says so and is skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.cli import main
from rag.settings import Settings

REBIND_QUESTION = "How does ReBIND predict ground-state molecular conformations?"


def mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here ({done.stderr.strip()}); needs root")


def umount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], check=False)


@pytest.fixture
def read_only_index(tmp_path: Path, seed_settings: Settings) -> Iterator[Path]:
    """A copy of the seed index, seen through a read-only bind mount (read-only even to root)."""
    source = tmp_path / "index"
    shutil.copytree(seed_settings.store.index_dir, source)
    target = tmp_path / "read-only"
    target.mkdir()
    mount("--bind", str(source), str(target))
    try:
        mount("-o", "remount,ro,bind", str(target))
        with pytest.raises(OSError):
            (target / "probe").write_text("x")
        yield target
    finally:
        umount(target)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_read_only_index_can_be_searched_asked_and_counted(
    read_only_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(read_only_index)
    code, out, err = run(capsys, "search", REBIND_QUESTION, "--index", index, "--json")
    assert code == 0, err
    assert json.loads(out)["results"][0]["title"] == "ReBIND"
    code, out, err = run(capsys, "stats", "--index", index, "--json")
    assert code == 0, err
    assert json.loads(out)["papers"] == 38
    code, out, err = run(capsys, "ask", REBIND_QUESTION, "--index", index, "--config", "offline")
    assert code == 0, err
    assert "Lennard-Jones" in out and "[1] ReBIND" in out


def test_ingest_into_a_read_only_index_says_so_in_one_line(
    read_only_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "ingest", "--index", str(read_only_index))
    assert code == 2 and out == ""
    assert err.startswith(f"error: cannot write to {read_only_index} (")
    assert "searching, asking and stats work on a read-only one" in err
    assert "--rebuild" not in err and err.count("\n") == 1
