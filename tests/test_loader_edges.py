"""Loader edges a careless operator or a hostile corpus reaches: pipes, devices, invisible text.

Each gives one `LoadError` naming the file (and the line where there is one), never a hang,
a MemoryError or a paper that shows nothing.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.errors import LoadError


def load_error(path: Path, seconds: float = 20.0) -> LoadError:
    """The LoadError that loading `path` raises, failing (not hanging) if it blocks."""
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(load_papers([path]))
        except BaseException as e:  # noqa: BLE001 - the test inspects whatever came out
            outcome.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"loading {path} still blocks after {seconds} s"
    assert isinstance(outcome[0], LoadError), outcome[0]
    return outcome[0]


def test_a_named_pipe_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "papers.jsonl"
    os.mkfifo(fifo)
    try:
        error = load_error(fifo)
    finally:
        # Unblock a reader that a regression left waiting, so no thread hangs on.
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        os.close(fd)
    assert str(error) == f"{fifo}: not a regular file (a named pipe)"


def test_a_named_pipe_in_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "a", "abstract": "One."}) + "\n")
    os.mkfifo(tmp_path / "b.csv")
    try:
        error = load_error(tmp_path)
    finally:
        os.close(os.open(tmp_path / "b.csv", os.O_RDWR | os.O_NONBLOCK))
    assert error.path == str(tmp_path / "b.csv")
    assert "not a regular file (a named pipe)" in str(error)


def test_a_symlink_to_dev_zero_is_a_device_not_papers(tmp_path: Path) -> None:
    link = tmp_path / "papers.txt"
    link.symlink_to("/dev/zero")
    assert str(load_error(link)) == f"{link}: not a regular file (a character device)"


@pytest.mark.parametrize(
    ("suffix", "data", "line"),
    [
        (".jsonl", json.dumps({"id": "z", "abstract": "\u200b\u200c\u200d\ufeff\u2060"}), 1),
        (".csv", "id,abstract\nok,Fine.\nz,\u200b\u200b\u00ad\n", 3),
        (".txt", "header\n\nFine abstract.\n\n\u200b \u200d\n", 5),
    ],
    ids=["jsonl", "csv", "txt"],
)
def test_an_abstract_of_zero_width_characters_is_refused(
    tmp_path: Path, suffix: str, data: str, line: int
) -> None:
    path = tmp_path / f"papers{suffix}"
    path.write_text(data + "\n", encoding="utf-8")
    with pytest.raises(LoadError) as e:
        load_papers([path])
    assert str(e.value) == f"{path}, line {line}: the abstract has only invisible characters"


def test_an_invisible_title_falls_back_to_a_label(tmp_path: Path) -> None:
    path = tmp_path / "papers.jsonl"
    record = {"id": "t", "title": "\u200b\u2060", "abstract": "We propose FooNet for graphs."}
    path.write_text(json.dumps(record) + "\n")
    assert load_papers([path])[0].title == "FooNet"


def test_an_unterminated_csv_quote_is_reported_where_it_opens(tmp_path: Path) -> None:
    path = tmp_path / "papers.csv"
    path.write_text('id,title,abstract\na,A,"Fine."\nb,"Broken title,Text\nc,C,More text.\n')
    with pytest.raises(LoadError) as e:
        load_papers([path])
    assert str(e.value) == (
        f"{path}, line 3: not valid CSV: a quoted field opened here is never closed"
    )


def test_a_huge_csv_field_is_reported_on_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "papers.csv"
    rows = ["id,abstract", "a,Fine.", "b,Also fine.", "c," + "x" * 200_000, "d,Last."]
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(LoadError) as e:
        load_papers([path])
    assert e.value.line == 4
    assert "not valid CSV: a field longer than 131,072 characters" in str(e.value)


def test_rag_ingest_on_a_pipe_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "papers.jsonl"
    os.mkfifo(fifo)
    code = main(["ingest", str(fifo), "--index", str(tmp_path / "index")])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"error: {fifo}: not a regular file (a named pipe)\n"
    assert not (tmp_path / "index" / "chroma").exists()
