"""The feedback log: one JSON line per rating; the last one per (session, turn) counts.

    .rag/feedback.jsonl   {"session": "...", "turn": "...", "rating": "down",
                           "reasons": ["Wrong paper"], "comment": "...", "question": ..., ...}

The log is append-only: a changed rating is a new line for the same session and turn, and
`latest_feedback` (what a reader uses) keeps the last one. Lines are ASCII-escaped JSON, so a
U+2028 in a question cannot split a line for a reader that splits on it. Each session may write
`RATE_LIMIT` lines per `RATE_WINDOW` seconds, the whole process `PROCESS_RATE_LIMIT` (a client
opening new sessions gets no more), and the file stops growing at `MAX_LOG_BYTES`, whichever
processes write it; more is refused, not queued. A line is at most `MAX_LINE_BYTES` (each field
cut to its bound), appended only to a regular file of ours, never through a link
(rag.common.atomic).
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag import open_own, parse_json
from rag.errors import RagError
from ui.render import Turn

REASONS = [
    "Wrong paper",
    "Missed a paper",
    "Quote does not support it",
    "Not what I asked",
    "Hard to read",
]
RATE_LIMIT = 20
RATE_WINDOW = 600.0  # seconds
MAX_COMMENT = 1000  # characters kept of a comment
PROCESS_RATE_LIMIT = 200  # lines per RATE_WINDOW from all sessions of one app process
MAX_LOG_BYTES = 20 * 1024 * 1024  # the log is not written past this size (about 10,000 lines)
# One line's bounds: a rating of a 10 MB model reply logs 8,000 characters of it.
MAX_LINE_BYTES = 64 * 1024
MAX_QUESTION = 2000
MAX_ANSWER = 8000
MAX_QUOTE = 600
MAX_TITLE = 500
MAX_ID = 200
MAX_CITATIONS = 30


class FeedbackRefused(RagError):
    """A rating not written: over a rate limit, or the log is full."""


def feedback_record(
    turn: Turn,
    session: str,
    rating: str | None,
    reasons: Iterable[str] = (),
    comment: str = "",
) -> dict[str, Any]:
    """One line of the log; `rating` None withdraws an earlier rating of the turn. Every field
    is cut to its bound (`_cut`), so one line stays under MAX_LINE_BYTES."""
    answer = turn.answer
    citations = (answer.citations if answer else [])[:MAX_CITATIONS]
    return {
        "session": _cut(session, MAX_ID),
        "turn": _cut(turn.id, MAX_ID),
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "rating": rating,
        "reasons": [r for r in reasons if r in REASONS],
        "comment": _cut(" ".join(comment.split()), MAX_COMMENT),
        "question": _cut(turn.question, MAX_QUESTION),
        "answer": _cut(answer.answer, MAX_ANSWER) if answer else None,
        "model": _cut(answer.model, MAX_ID) if answer else None,
        "abstained": answer.abstained if answer else None,
        "tiers": [_cut(t, MAX_ID) for t in list(turn.tiers or [])[:MAX_CITATIONS]],
        "k": turn.k,
        "citations": [
            {
                "n": c.n,
                "paper_id": _cut(c.paper_id, MAX_ID),
                "title": _cut(c.title, MAX_TITLE),
                "url": _cut(c.url, MAX_TITLE),
                "quote": _cut(c.quote, MAX_QUOTE),
            }
            for c in citations
        ],
        "sources": [_cut(s.paper.id, MAX_ID) for s in answer.sources[:MAX_CITATIONS]]
        if answer
        else [],
    }


def _cut(text: Any, limit: int) -> Any:
    """`text` cut to `limit` characters (an ellipsis says so); anything else as it is."""
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return text[: limit - 1] + "\u2026"


def feedback_line(record: dict[str, Any]) -> str:
    """The record as one line of ASCII (every non-ASCII character \\u-escaped), at most
    MAX_LINE_BYTES: a record still longer (non-ASCII text escapes to 6 bytes a character)
    loses its answer and quotes first, and is refused if that is not enough."""
    line = json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n"
    if len(line) > MAX_LINE_BYTES:
        shorter = record | {
            "answer": _cut(record.get("answer"), 500),
            "citations": [
                c | {"quote": _cut(c.get("quote"), 100)} for c in record.get("citations", [])
            ],
        }
        line = json.dumps(shorter, ensure_ascii=True, separators=(",", ":")) + "\n"
    if len(line) > MAX_LINE_BYTES:
        raise FeedbackRefused(f"the rating is too long to log ({len(line):,} bytes)")
    return line


def append_feedback(path: Path, record: dict[str, Any], max_bytes: int = MAX_LOG_BYTES) -> None:
    """Append one line, in one write (concurrent sessions append whole lines), unless the log
    would pass `max_bytes`: a per-file cap, so no number of sessions or processes fills a disk.
    The log is only ever a regular file of ours: a symlink or a hard link in its place is
    refused (rag.common.atomic), never written through."""
    line = feedback_line(record).encode("ascii")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_own(path, append=True, create=True) as f:
        if os.fstat(f.fileno()).st_size + len(line) > max_bytes:
            raise FeedbackRefused(f"the feedback log {path.name} is full ({max_bytes:,} bytes)")
        f.write(line)


def latest_feedback(path: Path) -> list[dict[str, Any]]:
    """The ratings that count: the last line for each (session, turn), in order of that line.

    Lines that are not JSON objects (a torn write, a planted line nested too deeply) are
    skipped; old lines without ids each count on their own. A turn whose last line withdrew the
    rating (`rating` null) is left out. At most twice MAX_LOG_BYTES of the log is read.
    """
    latest: dict[tuple[Any, Any], tuple[int, dict[str, Any]]] = {}
    try:
        with path.open("rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return []
            data = f.read(2 * MAX_LOG_BYTES)
    except FileNotFoundError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines):
        try:
            record = parse_json(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        session, turn = record.get("session"), record.get("turn")
        key = (session, turn) if session and turn else ("", number)
        try:
            latest[key] = (number, record)
        except TypeError:  # an id that is a list or an object
            continue
    ordered = sorted(latest.values(), key=lambda item: item[0])
    return [record for _, record in ordered if record.get("rating") is not None]


@dataclass
class RateLimit:
    """At most `limit` events per `window` seconds (one per session, kept in its state, and
    one per process, shared by its sessions' threads)."""

    limit: int = RATE_LIMIT
    window: float = RATE_WINDOW
    times: deque[float] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def allow(self, now: float) -> bool:
        """Whether an event at `now` is allowed; an allowed one is counted."""
        with self._lock:
            while self.times and now - self.times[0] >= self.window:
                self.times.popleft()
            if len(self.times) >= self.limit:
                return False
            self.times.append(now)
            return True
