"""rag.common.atomic: the one write-then-rename of the fetch's progress, the build status and
the topic map cache."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rag.common.atomic import atomic_write


def test_atomic_write_replaces_the_file_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.json"
    atomic_write(path, '{"offset": 4, "title": "Große Modelle"}')
    assert path.read_text(encoding="utf-8") == '{"offset": 4, "title": "Große Modelle"}'
    atomic_write(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert [p.name for p in path.parent.iterdir()] == ["state.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_partial_one(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    atomic_write(path, "old")
    with pytest.raises(UnicodeEncodeError):
        atomic_write(path, "half \ud800 written")  # a lone surrogate cannot be UTF-8
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_readers_never_see_half_a_file(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    versions = ["a" * 400_000, "b" * 400_000]
    atomic_write(path, versions[0])
    seen: set[str] = set()
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.add(path.read_text())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(60):
            atomic_write(path, versions[i % 2])
    finally:
        done.set()
        reader.join()
    assert seen <= set(versions)
