"""`rag fetch` against a hostile OpenReview server on 127.0.0.1: every fetch ends, bounded.

The same page forever, endless new notes, a gzip bomb, a page dripped byte by byte, a 10 MB
abstract, a page with more notes than asked for.
"""

from __future__ import annotations

import copy
import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest

import rag.corpus.bounded_http as bounded_http
import rag.corpus.openreview as openreview
from rag.corpus.openreview import fetch_venue
from rag.errors import FetchError
from testkit.openreview_server import OpenReviewServer, fixture_notes
from tests.helpers import read_jsonl

VENUE = "ICLR.cc/2025/Conference"
FAST = {"backoff": 0.01, "max_wait": 0.05, "retries": 1}
ACCEPTED = [
    n
    for n in fixture_notes()
    if n["content"]["venueid"]["value"] == VENUE and n["id"] != "MalformedZZ1"
]


def fetch(server: OpenReviewServer, out: Path, **kwargs: Any) -> Any:
    return fetch_venue(VENUE, out, api_url=server.base_url, **{**FAST, **kwargs})


def test_the_same_page_forever_stops_at_the_first_repeat(tmp_path: Path) -> None:
    def same_page(handler: Any, query: dict[str, str]) -> bool:
        handler.reply(200, json.dumps({"notes": ACCEPTED[:3], "count": None}).encode())
        return True

    with OpenReviewServer() as server:
        server.hostile = same_page
        report = fetch(server, tmp_path / "x.jsonl")
    assert len(server.requests) == 2  # the second page added no new note
    assert report.written == 3 and "same notes again" in report.stopped
    assert [r["id"] for r in read_jsonl(tmp_path / "x.jsonl")] == [n["id"] for n in ACCEPTED[:3]]


def test_endless_new_notes_stop_at_the_ceiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openreview, "MAX_NOTES", 50)

    def endless(handler: Any, query: dict[str, str]) -> bool:
        offset, limit = int(query["offset"]), min(int(query["limit"]), 20)
        notes = []
        for i in range(offset, offset + limit):
            note = copy.deepcopy(ACCEPTED[0])
            note["id"] = note["forum"] = f"Gen{i:08d}"
            notes.append(note)
        handler.reply(200, json.dumps({"notes": notes, "count": 10**12}).encode())
        return True

    with OpenReviewServer() as server:
        server.hostile = endless
        report = fetch(server, tmp_path / "x.jsonl")
    assert report.written == 60 and len(server.requests) == 3
    assert "50" in report.stopped


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_before_it_is_inflated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded_http, "MAX_PAGE_BYTES", 1 << 20)
    bomb = gzip.compress(b'{"notes": ["' + b"0" * (64 << 20) + b'"]}', compresslevel=9)
    assert len(bomb) < 200_000

    def gzip_bomb(handler: Any, query: dict[str, str]) -> bool:
        handler.reply(200, bomb, {"Content-Encoding": "gzip"})
        return True

    with OpenReviewServer() as server:
        server.hostile = gzip_bomb
        with pytest.raises(FetchError, match="more than 1,048,576 bytes"):
            fetch(server, tmp_path / "x.jsonl")
        assert len(server.requests) == 1  # not retried: it would be as big again


def test_a_page_bigger_than_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded_http, "MAX_PAGE_BYTES", 10_000)
    with OpenReviewServer() as server:
        with pytest.raises(FetchError, match="more than 10,000 bytes"):
            fetch(server, tmp_path / "x.jsonl")


@pytest.mark.slow
def test_a_dripped_page_hits_the_page_deadline(tmp_path: Path) -> None:
    def drip(handler: Any, query: dict[str, str]) -> bool:
        body = json.dumps({"notes": ACCEPTED, "count": len(ACCEPTED)}).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        try:
            for i in range(0, len(body), 2):
                handler.wfile.write(body[i : i + 2])
                handler.wfile.flush()
                time.sleep(0.05)
        except OSError:  # the client gave up
            pass
        return True

    with OpenReviewServer() as server:
        server.hostile = drip
        started = time.monotonic()
        with pytest.raises(FetchError, match="ReadTimeout"):
            fetch(server, tmp_path / "x.jsonl", page_deadline=1.0, timeout=5.0)
        assert time.monotonic() - started < 10  # each read came in time; the page did not


def test_a_10_mb_abstract_is_cut_and_counted(tmp_path: Path) -> None:
    notes = fixture_notes()
    huge = next(n for n in notes if n["id"] == ACCEPTED[0]["id"])
    huge["content"]["abstract"]["value"] = "word " * 2_000_000
    with OpenReviewServer(notes, page_size=50) as server:
        report = fetch(server, tmp_path / "x.jsonl")
    records = {r["id"]: r for r in read_jsonl(tmp_path / "x.jsonl")}
    assert len(records[huge["id"]]["abstract"]) <= openreview.MAX_ABSTRACT_CHARS
    assert report.truncated == 1 and report.written == 9


def test_a_page_with_more_notes_than_asked_loses_none(tmp_path: Path) -> None:
    """A server that ignores `limit` (sends 2.5x as many): the extra notes are asked again
    with the next page, so every note arrives once (the offset advances by what was asked)."""
    many = []
    for i in range(25):
        note = copy.deepcopy(ACCEPTED[i % len(ACCEPTED)])
        note["id"] = note["forum"] = f"Many{i:04d}"
        many.append(note)

    def overfull(handler: Any, query: dict[str, str]) -> bool:
        offset, limit = int(query["offset"]), int(query["limit"])
        page = many[offset : offset + limit * 5 // 2]
        handler.reply(200, json.dumps({"notes": page, "count": len(many)}).encode())
        return True

    with OpenReviewServer() as server:
        server.hostile = overfull
        report = fetch(server, tmp_path / "x.jsonl", page_size=4)
    assert report.written == 25
    assert [r["id"] for r in read_jsonl(tmp_path / "x.jsonl")] == [n["id"] for n in many]


def test_the_cli_says_when_it_stopped_early_and_what_it_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag.cli.main import main

    notes = fixture_notes()
    next(n for n in notes if n["id"] == ACCEPTED[0]["id"])["content"]["abstract"]["value"] = (
        "word " * 10_000
    )

    def same_page(handler: Any, query: dict[str, str]) -> bool:
        handler.reply(200, json.dumps({"notes": notes[:4], "count": None}).encode())
        return True

    with OpenReviewServer() as server:
        server.hostile = same_page
        out = tmp_path / "x.jsonl"
        argv = ["fetch", "openreview", VENUE, "--api-url", server.base_url, "--out", str(out)]
        assert main(argv) == 0
    captured = capsys.readouterr()
    assert "cut 1 abstracts to 20,000 characters" in captured.out
    assert "warning: the server sent the same notes again at offset 4" in captured.err


@pytest.mark.slow
def test_a_10_mb_abstract_in_a_corpus_file_is_cut_when_loaded_and_counted(
    tmp_path: Path, embeddings: Any
) -> None:
    from rag.corpus.loaders import MAX_ABSTRACT_CHARS, load_papers
    from rag.index.ingest import build_index
    from tests.helpers import make_settings

    corpus = tmp_path / "huge.jsonl"
    records = [
        {"id": "huge1", "title": "Huge", "abstract": "graph " * 2_000_000},
        {"id": "small1", "title": "Small", "abstract": "A short abstract about graphs."},
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    papers = {p.id: p for p in load_papers([corpus])}
    assert len(papers["huge1"].abstract) <= MAX_ABSTRACT_CHARS
    assert papers["huge1"].abstract.startswith("graph graph") and papers["huge1"].extra == {
        "abstract_truncated": True
    }
    assert papers["small1"].extra == {}
    started = time.monotonic()
    report = build_index(make_settings(tmp_path / "index"), [corpus], embeddings=embeddings)
    assert report.added == 2 and report.truncated == 1
    assert time.monotonic() - started < 120
