"""Every writer goes through rag.common.atomic: no write through a link, none into a file this
program did not make (issue 32: H1, M3, M6, L6, L7, and L4's fetch replies).

Each attack is on the test's own files under tmp_path, and a hostile OpenReview server on
127.0.0.1 (testkit.openreview_server).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import rag.corpus.openreview as openreview
from rag.common.atomic import UnsafeWriteError, atomic_write, open_own
from rag.corpus.openreview import fetch_venue, progress_path
from rag.errors import FetchError
from rag.index.disk_space import SpaceReserve
from rag.index.shipped_chunks import ChunkPlan
from testkit.openreview_server import Fault, OpenReviewServer, fixture_notes
from tests.helpers import ROOT, read_jsonl

VENUE = "ICLR.cc/2025/Conference"
FAST = {"backoff": 0.01, "max_wait": 0.05, "retries": 1}
ACCEPTED = [
    n
    for n in fixture_notes()
    if n["content"]["venueid"]["value"] == VENUE and n["id"] != "MalformedZZ1"
]
VICTIM = b"somebody else's file\n"


def fetch(server: OpenReviewServer, out: Path, **kwargs: Any) -> Any:
    return fetch_venue(VENUE, out, api_url=server.base_url, **{**FAST, **kwargs})


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_bytes(VICTIM)
    return path


# H1: `rag fetch --out` ----------------------------------------------------------------------


def test_an_out_symlink_to_a_regular_file_is_refused_before_any_request(tmp_path: Path) -> None:
    target = victim(tmp_path)
    out = tmp_path / "out.jsonl"
    out.symlink_to(target)
    with OpenReviewServer() as server:
        with pytest.raises(FetchError, match="symbolic link"):
            fetch(server, out)
        assert server.requests == []
    assert out.is_symlink() and target.read_bytes() == VICTIM
    assert not list(tmp_path.glob("out.jsonl.*"))


@pytest.mark.parametrize("out", ["/dev/stdout", "/dev/stderr", "/proc/self/fd/1", "/sys/x"])
def test_an_out_under_dev_proc_or_sys_is_refused_before_any_request(out: str) -> None:
    # The server refuses every page: a fetch that got as far as asking fails on HTTP 403 (and
    # never reaches the rename that would replace the system's /dev/stdout).
    with OpenReviewServer() as server:
        server.script(*[Fault(403)] * 3)
        with pytest.raises(FetchError, match=r"is (under /dev|under /proc|under /sys|a symbolic)"):
            fetch(server, Path(out))
        assert server.requests == []


def test_a_hard_linked_part_is_replaced_never_truncated(tmp_path: Path) -> None:
    """OUT.part a hard link to another file, and a progress file that says to resume at 0."""
    target = victim(tmp_path)
    out = tmp_path / "x.jsonl"
    part = out.with_name(out.name + ".part")
    os.link(target, part)
    with OpenReviewServer() as server:
        query = {"api_url": server.base_url, "query": {"content.venueid": VENUE}}
        progress_path(out).write_text(
            json.dumps(
                {**query, "offset": 0, "bytes": 0, "count": None, "skipped": 0, "excluded": 0}
            )
        )
        report = fetch(server, out)
    assert target.read_bytes() == VICTIM and os.stat(target).st_nlink == 1
    assert report.written == len(ACCEPTED) == len(read_jsonl(out))


def test_a_part_hard_linked_mid_fetch_is_refused_with_one_line(tmp_path: Path) -> None:
    target = victim(tmp_path)
    out = tmp_path / "x.jsonl"
    part = out.with_name(out.name + ".part")

    def relink(handler: Any, query: dict[str, str]) -> bool:
        if query.get("offset") == "2":  # after the first page is written: swap .part
            part.unlink()
            os.link(target, part)
        return False

    with OpenReviewServer(page_size=2) as server:
        server.hostile = relink
        with pytest.raises(FetchError, match="hard link"):
            fetch(server, out, page_size=2)
    assert target.read_bytes() == VICTIM


@pytest.mark.slow
def test_the_reported_command_leaves_the_stdout_symlink_and_writes_nothing(tmp_path: Path) -> None:
    """`ln -s /proc/self/fd/1 out; rag fetch ... --out out > x.txt`: exit 2, one line."""
    out, redirect = tmp_path / "out", tmp_path / "x.txt"
    out.symlink_to("/proc/self/fd/1")
    with OpenReviewServer() as server, redirect.open("wb") as stdout:
        argv = ["fetch", "openreview", VENUE, "--api-url", server.base_url, "--out", str(out)]
        done = subprocess.run(
            [sys.executable, "-m", "rag.cli.main", *argv],
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert server.requests == []
    err = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and "symbolic link" in err[0], err
    assert out.is_symlink() and redirect.read_bytes() == b""


# L6: a tampered progress file ----------------------------------------------------------------


def test_a_progress_file_past_the_end_of_part_never_grows_it(tmp_path: Path) -> None:
    """`bytes` 256 MiB past a 3-line .part: it used to be extended (sparse) and read whole."""
    out = tmp_path / "x.jsonl"
    part = out.with_name(out.name + ".part")
    lines = [json.dumps({"id": f"P{i}", "title": "t"}) + "\n" for i in range(3)]
    part.write_text("".join(lines))
    with OpenReviewServer() as server:
        query = {"api_url": server.base_url, "query": {"content.venueid": VENUE}}
        progress_path(out).write_text(
            json.dumps(
                {**query, "offset": 3, "bytes": 256 << 20, "count": 9, "skipped": 0, "excluded": 0}
            )
        )
        sizes: list[int] = []

        def watch(handler: Any, query: dict[str, str]) -> bool:
            sizes.append(part.stat().st_size)
            return False

        server.hostile = watch
        tracemalloc.start()
        try:
            report = fetch(server, out)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert max(sizes) < 1 << 20 and peak < 64 << 20
    assert report.resumed_from == 0 and report.written == len(ACCEPTED)


@pytest.mark.parametrize(
    "state",
    [
        {"offset": -5, "bytes": 0},
        {"offset": "3", "bytes": 0},
        {"offset": 0, "bytes": 1.5},
        {"offset": 0, "bytes": 0, "count": "many"},
    ],
)
def test_progress_values_of_the_wrong_type_or_range_start_over(
    tmp_path: Path, state: dict[str, Any]
) -> None:
    out = tmp_path / "x.jsonl"
    out.with_name(out.name + ".part").write_text("")
    with OpenReviewServer() as server:
        query = {"api_url": server.base_url, "query": {"content.venueid": VENUE}}
        full = {**query, "count": None, "skipped": 0, "excluded": 0, **state}
        progress_path(out).write_text(json.dumps(full))
        report = fetch(server, out)
    assert report.resumed_from == 0 and report.written == len(ACCEPTED)


def test_a_progress_file_nested_too_deeply_starts_over(tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    progress_path(out).write_text("[" * 200_000)
    with OpenReviewServer() as server:
        report = fetch(server, out)
    assert report.written == len(ACCEPTED)


# M3: every fetched field bounded, and the whole fetch ----------------------------------------


def hostile_note(i: int) -> dict[str, Any]:
    note = copy.deepcopy(ACCEPTED[0])
    note["id"] = note["forum"] = f"Huge{i:06d}"
    content = note["content"]
    content["authors"] = {"value": [f"Author {j} " + "x" * 300 for j in range(1000)]}
    content["keywords"] = {"value": [f"keyword {j}" for j in range(400)]}
    content["TLDR"] = {"value": "tldr " * 10_000}
    content["title"] = {"value": "Title " * 20_000}
    content["primary_area"] = {"value": "area_" * 2_000}
    content["venue"] = {"value": "ICLR 2025 Poster " * 1000}
    note["license"] = "CC " * 5000
    return note


def test_every_field_of_a_note_is_bounded(tmp_path: Path) -> None:
    with OpenReviewServer([hostile_note(i) for i in range(5)]) as server:
        report = fetch(server, tmp_path / "x.jsonl")
    records = read_jsonl(tmp_path / "x.jsonl")
    assert report.written == 5 and report.capped == 5
    for record in records:
        assert len(record["authors"]) == openreview.MAX_AUTHORS
        assert max(map(len, record["authors"])) <= openreview.MAX_AUTHOR_CHARS
        assert len(record["keywords"]) == openreview.MAX_KEYWORDS
        assert len(record["tldr"]) <= openreview.MAX_TLDR_CHARS
        assert len(record["title"]) <= openreview.MAX_TITLE_CHARS
        for key in ("primary_area", "venue", "license"):
            assert len(record[key]) <= openreview.MAX_FIELD_CHARS, key
        assert "_capped" not in record
    # The bound of a line: the abstract's 20,000 characters, then about 30 kB for the rest.
    assert max(len(line) for line in (tmp_path / "x.jsonl").read_bytes().splitlines()) < 60_000


def test_a_fetch_stops_at_its_byte_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rag.corpus.fetch_files.MAX_FETCH_BYTES", 400_000)
    monkeypatch.setattr(openreview, "MAX_NOTES", 400)

    def endless(handler: Any, query: dict[str, str]) -> bool:
        offset, notes = int(query["offset"]), []
        for i in range(offset, offset + 20):
            note = copy.deepcopy(ACCEPTED[0])
            note["id"] = note["forum"] = f"Long{i:06d}"
            note["content"]["abstract"] = {"value": "words " * 4000}  # 24 kB a line
            notes.append(note)
        handler.reply(200, json.dumps({"notes": notes, "count": 10**9}).encode())
        return True

    with OpenReviewServer() as server:
        server.hostile = endless
        report = fetch(server, tmp_path / "x.jsonl", page_size=20)
    size = (tmp_path / "x.jsonl").stat().st_size
    assert "bytes" in report.stopped and 400_000 <= size < 400_000 + 20 * 30_000
    assert report.written < 400


# L4: a reply nested too deeply, a lone surrogate ----------------------------------------------


def test_a_reply_nested_too_deeply_is_one_fetch_error(tmp_path: Path) -> None:
    def nested(handler: Any, query: dict[str, str]) -> bool:
        handler.reply(200, b'{"notes": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        return True

    with OpenReviewServer() as server:
        server.hostile = nested
        with pytest.raises(FetchError, match="is not"):
            fetch(server, tmp_path / "x.jsonl")


def test_an_error_reply_nested_too_deeply_is_one_fetch_error(tmp_path: Path) -> None:
    def nested(handler: Any, query: dict[str, str]) -> bool:
        handler.reply(403, b"[" * 100_000)
        return True

    with OpenReviewServer() as server:
        server.hostile = nested
        with pytest.raises(FetchError, match="HTTP 403"):
            fetch(server, tmp_path / "x.jsonl")


def test_a_lone_surrogate_in_a_note_is_written_as_a_replacement_character(tmp_path: Path) -> None:
    notes = copy.deepcopy(ACCEPTED[:2])
    notes[0]["content"]["title"] = {"value": "Broken \ud800 title"}
    notes[0]["content"]["authors"] = {"value": ["A \udfff B"]}
    with OpenReviewServer(notes) as server:
        report = fetch(server, tmp_path / "x.jsonl")
    records = read_jsonl(tmp_path / "x.jsonl")
    assert report.written == 2
    assert records[0]["title"] == "Broken \ufffd title" and records[0]["authors"] == ["A \ufffd B"]


# M6, L6, L7: the other writers ------------------------------------------------------------------


def test_the_space_reserve_never_writes_through_a_symlink(tmp_path: Path) -> None:
    target = victim(tmp_path)
    folder = tmp_path / "index"
    folder.mkdir()
    (folder / ".space-reserve").symlink_to(target)
    with SpaceReserve(folder, size=1 << 20):
        assert (folder / ".space-reserve").stat().st_size == 1 << 20
        assert not (folder / ".space-reserve").is_symlink()
    assert target.read_bytes() == VICTIM and not (folder / ".space-reserve").exists()


def test_the_space_reserve_never_fills_a_hard_linked_file(tmp_path: Path) -> None:
    target = victim(tmp_path)
    folder = tmp_path / "index"
    folder.mkdir()
    os.link(target, folder / ".space-reserve")
    with SpaceReserve(folder, size=1 << 20):
        pass
    assert target.read_bytes() == VICTIM


def test_a_chunk_plan_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    target = victim(tmp_path)
    path = tmp_path / "chunks.json.gz"
    path.symlink_to(target)
    with pytest.raises(UnsafeWriteError, match="symbolic link"):
        ChunkPlan({"format": 1}, {}).save(path)
    assert target.read_bytes() == VICTIM and path.is_symlink()


def test_atomic_write_refuses_a_symlink_and_replaces_a_hard_link(tmp_path: Path) -> None:
    target = victim(tmp_path)
    link = tmp_path / "state.json"
    link.symlink_to(target)
    with pytest.raises(UnsafeWriteError):
        atomic_write(link, "{}")
    hard = tmp_path / "hard.json"
    os.link(target, hard)
    atomic_write(hard, "{}")
    assert hard.read_text() == "{}" and target.read_bytes() == VICTIM
    for device in ("/dev/null", "/proc/self/fd/1", "/dev/shm/x"):
        with pytest.raises(UnsafeWriteError, match="under"):
            atomic_write(Path(device), "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.json", "state.json", "victim.txt"]


def test_open_own_refuses_links_and_devices(tmp_path: Path) -> None:
    target = victim(tmp_path)
    (tmp_path / "sym").symlink_to(target)
    os.link(target, tmp_path / "hard")
    os.mkfifo(tmp_path / "fifo")
    for name in ("sym", "hard", "fifo"):
        with pytest.raises(UnsafeWriteError), open_own(tmp_path / name, append=True) as f:
            f.write(b"x")
    assert target.read_bytes() == VICTIM


def test_the_feedback_log_is_never_written_through_a_link(tmp_path: Path) -> None:
    from ui.feedback import append_feedback, feedback_record
    from ui.render import Turn

    target = victim(tmp_path)
    for name, make in (("sym.jsonl", Path.symlink_to), ("hard.jsonl", Path.hardlink_to)):
        log = tmp_path / name
        make(log, target)
        with pytest.raises(UnsafeWriteError):
            append_feedback(log, feedback_record(Turn("q"), "s", "up"))
    assert target.read_bytes() == VICTIM


def test_one_rating_of_a_huge_answer_is_one_bounded_line(tmp_path: Path) -> None:
    from rag.answer.citations import Citation
    from ui.feedback import MAX_LINE_BYTES, MAX_LOG_BYTES, append_feedback, feedback_record
    from ui.render import Turn

    cited = Citation(1, "p", "t" * 10**6, "u", "Accept", "q" * 10**6)
    answer = _answer("\u4e2d" * ((19 << 20) // 3), [cited] * 100)
    turn = Turn("q" * (5 << 20), answer=answer)
    log = tmp_path / "feedback.jsonl"
    for _ in range(4):
        append_feedback(log, feedback_record(turn, "s" * 10**6, "down", comment="c" * 10**6))
    sizes = [len(line) for line in log.read_bytes().splitlines(keepends=True)]
    assert len(sizes) == 4 and max(sizes) <= MAX_LINE_BYTES
    assert sum(sizes) < MAX_LOG_BYTES // 50  # four ratings are not a fiftieth of the log


def _answer(text: str, citations: list[Any]) -> Any:
    from rag.answer.citations import CitedAnswer

    return CitedAnswer("q", "q", text, citations, [], abstained=False, model="m")
