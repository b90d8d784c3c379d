"""The index on a disk that says no: a read-only mount, and (below) a full disk.

Real mounts (a read-only bind mount, a small tmpfs) need root, as tests and CI run here;
where mounting is not allowed the test says so and is skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag.cli.main import main
from rag.settings import Settings

REBIND_QUESTION = "How does ReBIND use the Lennard-Jones potential for molecular conformations?"


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_ingest_into_a_read_only_index_says_so_in_one_line(
    read_only_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "ingest", "--index", str(read_only_index))
    assert code == 2 and out == ""
    assert err.startswith(f"error: cannot write to {read_only_index} (")
    assert "searching, asking and stats work on a read-only one" in err
    assert "--rebuild" not in err and err.count("\n") == 1


# A full disk ------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path, seed_settings: Settings) -> Iterator[Path]:
    """A 22 MB tmpfs holding a copy of the seed index: room for the reserve and little else."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount("-t", "tmpfs", "-o", "size=22M", "tmpfs", str(disk))
    try:
        shutil.copytree(seed_settings.store.index_dir, disk / "index")
        yield disk
    finally:
        umount(disk)


# Papers enough to fill the room left: with the shipped vectors and no Chroma documents, 200
# papers (the number before) fitted in it.
MORE = 800


@pytest.mark.slow  # three `rag` processes
def test_a_disk_that_fills_up_mid_ingest_leaves_an_index_that_opens(
    small_disk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers import CORPUS_JSONL

    corpus = tmp_path / "more.jsonl"
    lines = CORPUS_JSONL.read_text(encoding="utf-8").splitlines()[:MORE]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = str(small_disk / "index")
    code, out, err = run(capsys, "ingest", str(corpus), "--index", index)
    assert code == 2, err
    err = err.splitlines()[-1] + "\n"  # after the progress bar
    assert err.startswith(f"error: no space left on the disk of {index} while writing the index")
    assert "the index opens; free some space and run the same command again" in err
    assert err.count("\n") == 1 and "Traceback" not in err

    # The index opens at once, with nothing that was stored before lost: counted by a new
    # process, as the next command would (this one's Chroma client saw the write fail).
    kept = json.loads(rag("stats", "--index", index, "--json").stdout)["papers"]
    assert 38 <= kept < 38 + MORE
    code, out, err = run(capsys, "search", REBIND_QUESTION, "--index", index, "--json")
    assert code == 0, err
    assert json.loads(out)["results"][0]["title"] == "ReBIND"
    assert not (small_disk / "index" / ".space-reserve").exists()

    # Space freed, the same command, run again as a user would, finishes the job.
    mount("-o", "remount,size=200M", str(small_disk))
    rerun = rag("ingest", str(corpus), "--index", index, "--json")
    assert json.loads(rerun.stdout)["unchanged"] == kept - 38
    assert json.loads(rag("stats", "--index", index, "--json").stdout)["papers"] == 38 + MORE


def rag(*argv: str) -> subprocess.CompletedProcess[str]:
    """`rag ARGV` in a new process; it must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "rag.cli.main", *argv], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_an_ingest_without_room_to_start_changes_nothing(
    tmp_path: Path, seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    disk = tmp_path / "tiny"
    disk.mkdir()
    mount("-t", "tmpfs", "-o", "size=4M", "tmpfs", str(disk))
    try:
        shutil.copytree(seed_settings.store.index_dir, disk / "index")
        before = sorted(p.name for p in (disk / "index").rglob("*"))
        code, out, err = run(capsys, "ingest", "--index", str(disk / "index"))
        assert code == 2
        err = err.splitlines()[-1] + "\n"
        assert err.startswith(f"error: the disk of {disk / 'index'} has ")
        assert "needs at least 16 MB to write safely" in err
        assert sorted(p.name for p in (disk / "index").rglob("*")) == before
        code, out, err = run(capsys, "stats", "--index", str(disk / "index"), "--json")
        assert code == 0 and json.loads(out)["papers"] == 38
    finally:
        umount(disk)


def test_a_chunk_whose_paper_record_was_never_written_does_not_break_search(
    seed_settings: Settings,
    embeddings: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A disk that fills between an ingest's chunks and its paper records leaves chunks of a
    paper with no record: the search read them as a KeyError ("the index ... failed:
    'odjMSBSWRt'", in two fresh-clone CIs); they are passed over until an ingest writes it."""
    from rag.index.papers import PaperIndex
    from tests.helpers import copy_index

    settings = copy_index(seed_settings, tmp_path / "index")
    index = PaperIndex.open(settings, embeddings)
    got = index.papers.get(limit=2, include=["metadatas"])
    gone = next(
        i for i, m in zip(got["ids"], got["metadatas"], strict=True) if m["title"] != "ReBIND"
    )
    index.papers.delete(ids=[gone])
    assert index.chunks.get(where={"paper_id": gone}, include=[])["ids"]  # its chunks stay
    index.keyword_cache.drop()
    del index
    code, out, err = run(
        capsys, "search", REBIND_QUESTION, "--index", str(settings.store.index_dir), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["results"][0]["title"] == "ReBIND"
