"""`rag fetch openreview`: against a local server answering like OpenReview's API v2.

The fixtures (testkit/data/openreview_notes.json) are notes in the API's documented format:
nine accepted papers (real bundled ones), two rejected, one withdrawn, one desk-rejected and a
malformed accepted note. Pages are small so every fetch takes several.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.corpus.openreview import fetch_venue, paper_from_note, progress_path
from rag.errors import FetchError
from testkit.openreview_server import Fault, OpenReviewServer, fixture_notes
from tests.helpers import make_settings, read_jsonl

VENUE = "ICLR.cc/2025/Conference"
NOTES = fixture_notes()
ACCEPTED = [
    n["id"]
    for n in NOTES
    if n["content"]["venueid"]["value"] == VENUE and n["id"] != "MalformedZZ1"
]
FAST = {"backoff": 0.01, "max_wait": 0.05}  # no test waits for the real backoff


def fetch(server: OpenReviewServer, out: Path, **kwargs: Any) -> Any:
    return fetch_venue(VENUE, out, api_url=server.base_url, **{**FAST, **kwargs})


def test_fetch_writes_exactly_the_accepted_papers_with_their_fields(tmp_path: Path) -> None:
    out = tmp_path / "iclr.jsonl"
    with OpenReviewServer(page_size=4) as server:
        report = fetch(server, out)
    assert len(ACCEPTED) == 9
    records = read_jsonl(out)
    assert [r["id"] for r in records] == ACCEPTED
    assert report.written == 9 and report.skipped == 1 and report.excluded == 0
    assert report.problems == ["note MalformedZZ1: no abstract"]
    # Pages of four through the 10 notes whose venueid is the venue's (the malformed one too).
    assert [(r.path, r.query["content.venueid"], r.offset) for r in server.requests] == [
        ("/notes", VENUE, 0),
        ("/notes", VENUE, 4),
        ("/notes", VENUE, 8),
    ]
    by_id = {n["id"]: n for n in NOTES}
    for record in records:
        content = by_id[record["id"]]["content"]
        assert record["title"] == content["title"]["value"]
        assert record["abstract"] == " ".join(content["abstract"]["value"].split())
        assert record["authors"] == content["authors"]["value"]  # in the paper's order
        assert record["authors_ordered"] is True
        assert record["keywords"] == content["keywords"]["value"]
        assert record["tldr"] == content["TLDR"]["value"]
        assert record["primary_area"] == content["primary_area"]["value"].replace("_", " ")
        tier = content["venue"]["value"].removeprefix("ICLR 2025 ")
        assert record["decision"] == f"Accept ({tier})"
        assert record["url"] == f"https://openreview.net/forum?id={record['id']}"
        assert record["pdf"] == "https://openreview.net" + content["pdf"]["value"]
        assert record["license"] == "CC BY 4.0"
    assert {r["decision"] for r in records} == {
        "Accept (Oral)",
        "Accept (Spotlight)",
        "Accept (Poster)",
    }
    assert not progress_path(out).exists() and not out.with_name("iclr.jsonl.part").exists()


def test_all_decisions_adds_rejected_and_withdrawn(tmp_path: Path) -> None:
    out = tmp_path / "all.jsonl"
    with OpenReviewServer(page_size=5) as server:
        report = fetch(server, out, all_decisions=True)
    decisions = {r["id"]: r["decision"] for r in read_jsonl(out)}
    assert report.written == len(decisions) == 13 and report.skipped == 1
    assert decisions["RejectedAAA1"] == decisions["RejectedAAA2"] == "Reject"
    assert decisions["WithdrawnBB1"] == "Withdrawn"
    assert decisions["DeskRejectC1"] == "Desk Reject"
    assert set(ACCEPTED) < set(decisions)
    assert {r.query.get("invitation") for r in server.requests} == {f"{VENUE}/-/Submission"}


@pytest.mark.slow
def test_a_429_is_retried_after_its_retry_after(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    with OpenReviewServer(page_size=4) as server:
        server.script(None, Fault(429, retry_after="1"))
        began = time.perf_counter()
        report = fetch(server, out, max_wait=5)
        took = time.perf_counter() - began
    assert [r["id"] for r in read_jsonl(out)] == ACCEPTED
    assert report.retries == 1 and took >= 1.0  # waited what the server asked, not 0.01 s
    assert [r.offset for r in server.requests] == [0, 4, 4, 8]


@pytest.mark.slow
def test_a_long_retry_after_is_capped(tmp_path: Path) -> None:
    with OpenReviewServer(page_size=4) as server:
        server.script(Fault(429, retry_after="3600"), Fault(503, retry_after="3600"))
        began = time.perf_counter()
        report = fetch(server, tmp_path / "a.jsonl", max_wait=0.2)
    assert report.retries == 2 and time.perf_counter() - began < 30


@pytest.mark.slow
def test_a_500_is_retried_and_a_persistent_one_is_one_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    with OpenReviewServer(page_size=4) as server:
        server.script(Fault(500), None, Fault(502))
        report = fetch(server, out)
        assert [r["id"] for r in read_jsonl(out)] == ACCEPTED and report.retries == 2

        out2 = tmp_path / "b.jsonl"
        server.script(None, *[Fault(500)] * 10)
        with pytest.raises(FetchError) as e:
            fetch(server, out2, retries=3)
    message = str(e.value)
    assert "HTTP 500 after 4 tries" in message and "offset 4" in message
    assert "re-run the same command to resume" in message and "\n" not in message
    assert not out2.exists()  # a partial fetch is never taken for a complete one
    assert json.loads(progress_path(out2).read_text())["offset"] == 4


@pytest.mark.slow
def test_a_cut_connection_resumes_where_it_stopped(tmp_path: Path) -> None:
    reference = tmp_path / "reference.jsonl"
    with OpenReviewServer(page_size=3) as server:
        fetch(server, reference)
    out = tmp_path / "cut.jsonl"
    with OpenReviewServer(page_size=3) as server:
        server.cut_from(3)  # the first two pages arrive, then every connection drops mid-reply
        with pytest.raises(FetchError, match="connection failed"):
            fetch(server, out, retries=2)
        part = out.with_name("cut.jsonl.part")
        assert not out.exists()
        got = read_jsonl(part)  # six notes in two pages, one of them the malformed one
        assert got == read_jsonl(reference)[:5]
        assert json.loads(progress_path(out).read_text())["offset"] == 6
        # The process died while writing: half a line is left behind. The re-run drops it.
        with part.open("a") as f:
            f.write('{"id": "half a li')
        server.reset_faults()
        first_run = len(server.requests)
        report = fetch(server, out)
        resumed = [r.offset for r in server.requests[first_run:]]
    assert report.resumed_from == 6 and resumed == [6, 9]
    assert out.read_bytes() == reference.read_bytes()
    assert not part.exists() and not progress_path(out).exists()


def test_malformed_notes_are_left_out_with_the_reason() -> None:
    venue = {"venueid": {"value": VENUE}}
    cases = {
        "no content": {"id": "x1"},
        "no title": {"id": "x2", "content": {**venue, "abstract": {"value": "text"}}},
        "no abstract": {"id": "x3", "content": {**venue, "title": {"value": "T"}, "abstract": {}}},
    }
    for why, note in cases.items():
        record, problem = paper_from_note(note, VENUE)
        assert record is None and problem == f"note {note['id']}: {why}"
    assert paper_from_note(["not", "a", "note"], VENUE) == (None, "note ?: no content")
    record, problem = paper_from_note(NOTES[0], VENUE, all_decisions=True)
    assert record is not None and record["id"] == NOTES[0]["id"] and problem == ""


@pytest.mark.parametrize(
    ("venue", "decision"),
    [
        ("ICLR 2025 Oral", "Accept (Oral)"),
        ("ICLR 2025 Spotlight", "Accept (Spotlight)"),
        ("NeurIPS 2024 poster", "Accept (Poster)"),
        ("ICLR 2025 Poster (Oral candidate)", "Accept"),  # no known tier, not an oral
        ("ICLR 2025 Oral? no: Poster", "Accept"),
        ("Oral ICLR 2025 Poster", "Accept"),
        ("ICLR 2025 Conference", "Accept"),
    ],
)
def test_only_an_exact_venue_names_the_tier(venue: str, decision: str) -> None:
    note = copy.deepcopy(next(n for n in NOTES if n["id"] == ACCEPTED[0]))
    note["content"]["venue"] = {"value": venue}
    record, problem = paper_from_note(note, VENUE)
    assert record is not None and problem == ""
    assert record["decision"] == decision


@pytest.mark.slow
def test_cli_fetch_then_ingest_and_a_refetch_changes_only_what_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, index = tmp_path / "venue.jsonl", tmp_path / "index"
    notes = fixture_notes()
    with OpenReviewServer(notes, page_size=4) as server:
        args = ["fetch", "openreview", VENUE, "--api-url", server.base_url, "--out", str(out)]
        assert main(args) == 0
        captured = capsys.readouterr()
        assert f"9 papers written to {out}" in captured.out
        assert "skipped 1 malformed notes: note MalformedZZ1: no abstract" in captured.out
        assert "10/10" in captured.err  # the progress bar reached the end
        assert main(["ingest", str(out), "--index", str(index), "--json"]) == 0
        first = json.loads(capsys.readouterr().out)
        assert first["added"] == 9

        # OpenReview changes: one abstract revised, one paper added, one TL;DR edited.
        accepted = [n for n in notes if n["id"] in ACCEPTED]
        accepted[0]["content"]["abstract"]["value"] += " We release our code."
        accepted[1]["content"]["TLDR"]["value"] = "A new TL;DR."
        extra = copy.deepcopy(accepted[2])
        extra["id"] = extra["forum"] = "NewPaper0001"
        extra["content"]["title"]["value"] = "A Paper Added Later"
        notes.append(extra)
        assert main([*args, "--ingest", "--index", str(index)]) == 0
    out_text = capsys.readouterr().out
    assert "10 papers written" in out_text
    assert "papers: 1 added, 2 updated, 7 unchanged" in out_text
    papers = {p.id: p for p in load_papers([out])}
    assert papers[accepted[0]["id"]].abstract.endswith("We release our code.")
    assert papers[accepted[1]["id"]].extra["tldr"] == "A new TL;DR."


@pytest.mark.slow
def test_the_fetched_file_goes_into_the_index_beside_the_bundle_format(
    tmp_path: Path, embeddings: Any
) -> None:
    """A fetched file and an older corpus file (no tldr/license/pdf fields) load together."""
    from rag.index.ingest import build_index

    out = tmp_path / "venue.jsonl"
    with OpenReviewServer(page_size=50) as server:
        fetch(server, out)
    older = tmp_path / "older.jsonl"
    older.write_text(json.dumps({"id": "old1", "title": "Old", "abstract": "An old format."}))
    report = build_index(make_settings(tmp_path / "index"), [out, older], embeddings=embeddings)
    assert report.added == 10


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["not a venue"], "expected a group id like ICLR.cc/2025/Conference"),
        ([VENUE, "--api-url", "ftp://x"], "--api-url 'ftp://x': expected http(s)://HOST"),
        (["Nowhere.cc/2025/Conference"], "no accepted papers for venue 'Nowhere.cc/2025/Con"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    with OpenReviewServer() as server:
        base = ["--out", str(tmp_path / "x.jsonl")]
        if "--api-url" not in argv:
            base += ["--api-url", server.base_url]
        assert main(["fetch", "openreview", *argv, *base]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0], err
    assert not (tmp_path / "x.jsonl").exists()


def test_an_out_that_is_a_folder_or_read_only_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked.jsonl"
    locked.write_text('{"id": "a", "abstract": "kept"}\n')
    locked.chmod(0o444)
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    cases = {tmp_path: "is a folder", locked: "is read-only", folder / "x.jsonl": "is read-only"}
    with OpenReviewServer() as server:
        for out, words in cases.items():
            argv = ["fetch", "openreview", VENUE, "--api-url", server.base_url, "--out", str(out)]
            assert main(argv) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and words in err[0], err
        assert server.requests == []  # refused before asking the API
    assert locked.read_text() == '{"id": "a", "abstract": "kept"}\n'
    folder.chmod(0o755)


def test_a_server_refusing_the_query_is_not_retried(tmp_path: Path) -> None:
    with OpenReviewServer() as server:
        server.script(Fault(403))
        with pytest.raises(FetchError, match="HTTP 403"):
            fetch(server, tmp_path / "x.jsonl")
        assert len(server.requests) == 1


def _special_outs(tmp_path: Path) -> dict[str, Path]:
    """--out paths that exist and are not regular files, all inside tmp_path."""
    import os
    import stat

    outs: dict[str, Path] = {}
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    outs["fifo"] = fifo
    if os.geteuid() == 0:  # a device node of our own (char 1,3 as /dev/null), never the real one
        node = tmp_path / "dev-copy"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        outs["device"] = node
        (tmp_path / "link-to-device").symlink_to(node)
        outs["symlink to a device"] = tmp_path / "link-to-device"
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    outs["dangling symlink"] = tmp_path / "dangling"
    return outs


def test_an_out_that_is_not_a_regular_file_is_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out` a device node, a FIFO or a symlink to one: refused, one line, nothing unlinked."""
    import stat

    outs = _special_outs(tmp_path)
    modes = {name: path.lstat().st_mode for name, path in outs.items()}
    with OpenReviewServer() as server:
        for name, out in outs.items():
            argv = ["fetch", "openreview", VENUE, "--api-url", server.base_url, "--out", str(out)]
            assert main(argv) == 2, name
            err = capsys.readouterr().err.strip().splitlines()
            why = "symbolic link" if "symlink" in name else "not a regular file"
            assert len(err) == 1 and why in err[0], (name, err)
            assert out.lstat().st_mode == modes[name], name  # still there, still what it was
        assert server.requests == []  # refused before asking the API
    if "device" in outs:
        assert stat.S_ISCHR(outs["device"].lstat().st_mode)
    assert not list(tmp_path.glob("*.part")) and not list(tmp_path.glob("*.progress.json"))


@pytest.mark.slow
def test_side_files_that_are_not_regular_files_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OUT.part or OUT.progress.json a FIFO or a device: the fetch would replace or unlink it."""
    import os

    for suffix in (".part", ".progress.json"):
        out = tmp_path / f"x{suffix.replace('.', '-')}.jsonl"
        side = out.with_name(out.name + suffix)
        os.mkfifo(side)
        with OpenReviewServer() as server:
            argv = ["fetch", "openreview", VENUE, "--api-url", server.base_url, "--out", str(out)]
            assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "not a regular file" in err[0], err
        assert side.exists() and not side.is_file() and not out.exists()


def test_an_existing_empty_out_is_kept_when_the_fetch_fails(tmp_path: Path) -> None:
    """An empty file the user made is not the program's to unlink (it used to be "only probed")."""
    out = tmp_path / "empty.jsonl"
    out.write_bytes(b"")
    with OpenReviewServer() as server:
        server.script(Fault(403))
        with pytest.raises(FetchError, match="HTTP 403"):
            fetch(server, out)
    assert out.exists() and out.read_bytes() == b""


@pytest.mark.slow
def test_an_out_symlink_to_the_process_stdout_is_refused(tmp_path: Path) -> None:
    """`--out` a symlink to /proc/self/fd/1 (a pipe here): one line, exit 2, nothing written."""
    import os
    import subprocess
    import sys

    link = tmp_path / "stdout-link"
    link.symlink_to("/proc/self/fd/1")
    with OpenReviewServer() as server:
        argv = ["fetch", "openreview", VENUE, "--api-url", server.base_url, "--out", str(link)]
        done = subprocess.run(
            [sys.executable, "-m", "rag.cli.main", *argv],
            capture_output=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        assert server.requests == []
    assert done.returncode == 2, done.stderr
    err = done.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "symbolic link" in err[0], err
    assert done.stdout == b"" and link.is_symlink()


def test_a_malformed_note_id_with_terminal_escapes_reaches_the_terminal_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = fixture_notes()
    hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[31mEvil\u202eZZ1\x9b1m"
    malformed = next(n for n in notes if n["id"] == "MalformedZZ1")
    malformed["id"] = malformed["forum"] = hostile
    out = tmp_path / "venue.jsonl"
    with OpenReviewServer(notes, page_size=50) as server:
        args = ["fetch", "openreview", VENUE, "--api-url", server.base_url, "--out", str(out)]
        assert main(args) == 0
    printed = capsys.readouterr().out
    assert "skipped 1 malformed notes: note EvilZZ1: no abstract" in printed, printed
    assert not any(c in printed for c in "\x1b\x07\x9b\u202e"), repr(printed)
