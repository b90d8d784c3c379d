"""The feedback log: one JSON line per rating; the last one per (session, turn) counts.

    .rag/feedback.jsonl   {"session": "...", "turn": "...", "rating": "down",
                           "reasons": ["Wrong paper"], "comment": "...", "question": ..., ...}

The log is append-only: a changed rating is a new line for the same session and turn, and
`latest_feedback` (what a reader uses) keeps the last one. Lines are ASCII-escaped JSON, so a
U+2028 in a question cannot split a line for a reader that splits on it. Each session may write
`RATE_LIMIT` lines per `RATE_WINDOW` seconds, the whole process `PROCESS_RATE_LIMIT` (a client
opening new sessions gets no more), and the file stops growing at `MAX_LOG_BYTES`, whichever
processes write it; more is refused, not queued.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


class FeedbackRefused(RagError):
    """A rating not written: over a rate limit, or the log is full."""


def feedback_record(
    turn: Turn,
    session: str,
    rating: str | None,
    reasons: Iterable[str] = (),
    comment: str = "",
) -> dict[str, Any]:
    """One line of the log; `rating` None withdraws an earlier rating of the turn."""
    answer = turn.answer
    return {
        "session": session,
        "turn": turn.id,
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
        "rating": rating,
        "reasons": [r for r in reasons if r in REASONS],
        "comment": " ".join(comment.split())[:MAX_COMMENT],
        "question": turn.question,
        "answer": answer.answer if answer else None,
        "model": answer.model if answer else None,
        "abstained": answer.abstained if answer else None,
        "tiers": turn.tiers,
        "k": turn.k,
        "citations": [
            {"n": c.n, "paper_id": c.paper_id, "title": c.title, "url": c.url, "quote": c.quote}
            for c in (answer.citations if answer else [])
        ],
        "sources": [s.paper.id for s in answer.sources] if answer else [],
    }


def feedback_line(record: dict[str, Any]) -> str:
    """The record as one line of ASCII (every non-ASCII character \\u-escaped)."""
    return json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n"


def append_feedback(path: Path, record: dict[str, Any], max_bytes: int = MAX_LOG_BYTES) -> None:
    """Append one line, in one write (concurrent sessions append whole lines), unless the log
    would pass `max_bytes`: a per-file cap, so no number of sessions or processes fills a disk."""
    line = feedback_line(record)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="ascii") as f:
        if f.tell() + len(line) > max_bytes:
            raise FeedbackRefused(f"the feedback log {path.name} is full ({max_bytes:,} bytes)")
        f.write(line)


def latest_feedback(path: Path) -> list[dict[str, Any]]:
    """The ratings that count: the last line for each (session, turn), in order of that line.

    Lines that are not JSON objects (a torn write) are skipped; old lines without ids each
    count on their own. A turn whose last line withdrew the rating (`rating` null) is left out.
    """
    latest: dict[tuple[Any, Any], tuple[int, dict[str, Any]]] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    for number, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        session, turn = record.get("session"), record.get("turn")
        key = (session, turn) if session and turn else ("", number)
        latest[key] = (number, record)
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
