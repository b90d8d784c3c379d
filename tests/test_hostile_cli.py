"""Hostile input the `rag` command itself reads: question files, flags, arguments, folders.

Each case is one line on stderr and exit 2, and nothing is read that cannot end (a FIFO, a
device); FIFOs and device links live in tmp_path only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag.cli.main import main


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A named pipe; a writer waits on it so that a reader which opens it gets EOF, not a hang."""
    path = tmp_path / "questions.fifo"
    os.mkfifo(path)

    def writer() -> None:
        with open(path, "wb"):
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    yield path
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer go if nobody read
    thread.join(5)
    os.close(fd)


def _argv(command: str, path: Path, index: Path) -> list[str]:
    flag = {"search": "--batch", "ask": "--batch", "conversation": "--conversation"}.get(command)
    if command == "eval":
        return ["eval", "--questions", str(path), "--index", str(index), "--no-baselines"]
    name = "ask" if command == "conversation" else command
    return [name, "--index", str(index), str(flag), str(path)]


COMMANDS = ["search", "ask", "conversation", "eval"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_question_file_that_is_a_fifo_is_refused(
    command: str, fifo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv(command, fifo, tmp_path / "index")) == 2
    line = one_error_line(capsys)
    assert str(fifo) in line and "not a regular file (a named pipe)" in line, line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_question_file_linked_to_dev_zero_is_refused_before_reading(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "questions.txt"
    link.symlink_to("/dev/zero")  # only read, never written or unlinked
    assert main(_argv(command, link, tmp_path / "index")) == 2
    line = one_error_line(capsys)
    assert "not a regular file (a character device)" in line, line


def test_a_question_file_over_the_size_limit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rag.corpus.loaders as loaders

    monkeypatch.setattr(loaders, "MAX_FILE_BYTES", 100)
    big = tmp_path / "big.txt"
    big.write_text("What is new in diffusion models?\n" * 10)
    assert main(["search", "--index", str(tmp_path / "index"), "--batch", str(big)]) == 2
    assert "bytes is too big (the limit is 100)" in one_error_line(capsys)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://127.0.0.1:99999", "port 99999 is not in 1..65535"),
        ("http://127.0.0.1:abc", "port 'abc' is not a number"),
        ("http://127.0.0.1:0", "port 0 is not in 1..65535"),
        ("http://127.0.0.1:-1", "is not a number"),
    ],
)
def test_a_chroma_url_with_a_bad_port_is_one_line_and_exit_2(
    url: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "what is new in diffusion?", "--chroma-url", url]) == 2
    line = one_error_line(capsys)
    assert f"--chroma-url {url!r}" in line and words in line, line


def test_a_chroma_url_with_a_port_is_used_as_given() -> None:
    from rag.cli.main import build_parser, load_settings

    args = build_parser().parse_args(["stats", "--chroma-url", "https://db.example:9443"])
    store = load_settings(args).store
    assert (store.mode, store.host, store.port, store.ssl) == ("http", "db.example", 9443, True)
    args = build_parser().parse_args(["stats", "--chroma-url", "http://db.example"])
    assert load_settings(args).store.port == 8000


@pytest.mark.slow
def test_a_question_argument_that_is_not_utf8_is_one_line_and_exit_2(seed_settings: Any) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    index = str(seed_settings.store.index_dir).encode()
    for argv in (
        [b"search", b"diffusion \xff models", b"--index", index],
        [b"ask", b"\xfe\xff?", b"--index", index, b"--config", b"offline"],
    ):
        done = subprocess.run(
            [sys.executable.encode(), b"-m", b"rag.cli.main", *argv],
            capture_output=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(root), "LC_ALL": "C.UTF-8"},
        )
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        assert done.returncode == 2, err
        assert len(err) == 1 and err[0].startswith("error: ") and "not UTF-8" in err[0], err


def test_an_index_in_a_read_only_folder_is_one_line_naming_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build record beside the index is the first write: EROFS there (a read-only mount,
    simulated: root may write anywhere else) is one line naming the folder and what to do."""
    import errno

    from rag.settings import SEED_FILES

    folder = tmp_path / "ro"
    folder.mkdir()

    import rag.common.atomic as atomic

    create_new = atomic.create_new

    def read_only(path: Path, mode: int = 0o666) -> int:  # every file is made here
        if Path(path).parent == folder:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return create_new(path, mode)

    monkeypatch.setattr(atomic, "create_new", read_only)
    index = folder / "idx"
    assert main(["ingest", str(SEED_FILES[0]), "--index", str(index)]) == 2
    line = one_error_line(capsys)
    assert f"cannot write in {folder}" in line and "Read-only file system" in line, line
    assert "--index" in line and ".tmp" not in line, line
    assert not list(folder.iterdir())
