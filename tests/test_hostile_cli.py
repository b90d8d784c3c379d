"""Hostile input the `rag` command itself reads: question files, flags, arguments, folders.

Each case is one line on stderr and exit 2, and nothing is read that cannot end (a FIFO, a
device); FIFOs and device links live in tmp_path only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

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
