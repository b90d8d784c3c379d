"""Fetch a venue's papers from OpenReview's public API v2 into the project's JSONL format.

    rag fetch openreview ICLR.cc/2025/Conference --out iclr2025-full.jsonl [--ingest]

Accepted papers are the notes whose `content.venueid` is the venue id; `--all-decisions` asks
for every note of the venue's submission invitation instead (rejected and withdrawn included).
Pages are written to `OUT.part` as they arrive, and `OUT.progress.json` records how far the
fetch got, so re-running the same command after a dropped connection resumes there; `OUT`
itself appears only when the fetch is complete (an atomic rename); those files, never written
through a link, are rag.corpus.fetch_files'. Every field of a note has a bound (MAX_*_CHARS).

A small HTTP client rather than openreview-py: its `get_all_notes` returns the whole venue at
the end (no progress to record or resume from) and retries neither 429 nor Retry-After.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from rag.common import retry
from rag.common.side_files import SideFileError, parse_json, without_surrogates
from rag.corpus import fetch_files
from rag.corpus.bounded_http import BoundedTransport
from rag.corpus.fetch_files import (
    check_writable,
    own_part,
    part_path,
    progress_path,
    refuse_special,
    resume_state,
    write_json,
)
from rag.corpus.loaders import MAX_ABSTRACT_CHARS, cap_abstract
from rag.errors import FetchError
from rag.types import TIERS
from rag.venue import VENUE

DEFAULT_API_URL = "https://api2.openreview.net"
SITE = "https://openreview.net"
PAGE_SIZE = 1000  # the API's maximum
# Bounds against a server that never ends: ICLR 2025 had about 11,700 submissions; a page of
# 1,000 notes is 3-5 MB of JSON. Abstracts are cut to MAX_ABSTRACT_CHARS (rag.corpus.loaders).
MAX_NOTES = 200_000  # the offset past which a fetch stops
# Each field's bound: a note's longer lists and texts are cut, and counted
# (`FetchReport.capped`); what a fetch writes is bounded by fetch_files.MAX_FETCH_BYTES.
MAX_TITLE_CHARS = 1_000
MAX_AUTHORS, MAX_AUTHOR_CHARS = 100, 200
MAX_KEYWORDS, MAX_KEYWORD_CHARS = 30, 100
MAX_TLDR_CHARS = 1_000
MAX_FIELD_CHARS = 200  # venue, venue id, primary area, licence
MAX_ID_CHARS = 100
PAGE_DEADLINE = 300.0  # seconds for one whole reply (`timeout` is per read)
RETRIES = 6
MAX_WAIT = 60.0  # seconds: a longer Retry-After is capped
# An accepted paper's venue as OpenReview writes it: "ICLR 2025 Oral", "NeurIPS 2024 poster".
_TIER_VENUE = re.compile(r"[A-Za-z][\w.\-]* \d{4} (oral|spotlight|poster)", re.IGNORECASE)
_VENUE_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)+$")


@dataclass
class FetchReport:
    out: Path
    written: int = 0
    skipped: int = 0
    excluded: int = 0  # notes that are not accepted papers (never with --all-decisions)
    requests: int = 0
    retries: int = 0
    resumed_from: int = 0
    seconds: float = 0.0
    truncated: int = 0  # abstracts cut to MAX_ABSTRACT_CHARS
    capped: int = 0  # papers with another field cut to its bound (authors, keywords, TL;DR...)
    stopped: str = ""  # why the fetch stopped before the server said it was complete
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "out": str(self.out)}


def fetch_venue(
    venue_id: str,
    out: Path,
    api_url: str = DEFAULT_API_URL,
    all_decisions: bool = False,
    progress: Callable[[int, int], None] | None = None,
    retries: int = RETRIES,
    backoff: float = 1.0,
    max_wait: float = MAX_WAIT,
    timeout: float = 60.0,
    page_deadline: float = PAGE_DEADLINE,
    page_size: int = PAGE_SIZE,
) -> FetchReport:
    """Write the venue's papers to `out` (JSONL); resume an interrupted fetch of the same query."""
    check_venue_id(venue_id)
    api_url = check_api_url(api_url)
    out = Path(out)
    query = (
        {"invitation": f"{venue_id}/-/Submission"}
        if all_decisions
        else {"content.venueid": venue_id}
    )
    state_path, part = progress_path(out), part_path(out)
    check_writable(out)
    state, seen = resume_state(state_path, part, {"api_url": api_url, "query": query})
    report = FetchReport(out=out, resumed_from=state["offset"])
    report.skipped, report.excluded = state["skipped"], state["excluded"]
    started = time.perf_counter()
    fetched = set(seen)  # every note id of this fetch: a page with none new is a repeat
    transport = BoundedTransport(page_deadline)
    with httpx.Client(
        base_url=api_url, timeout=timeout, headers=_HEADERS, transport=transport
    ) as client:
        while True:
            params = {**query, "limit": page_size, "offset": state["offset"]}
            page = _get_notes(client, params, retries, backoff, max_wait, report)
            # A page with more notes than asked for: the rest come again with the next page.
            notes, count = page["notes"][:page_size], page.get("count")
            if isinstance(count, int):
                state["count"] = count
            if not notes:
                break
            ids = {_note_id(n) for n in notes}
            if not ids - fetched:
                report.stopped = (
                    f"the server sent the same notes again at offset {state['offset']}; "
                    "stopped there"
                )
                break
            fetched |= ids
            lines = []
            for note in notes:
                record, problem = paper_from_note(note, venue_id, all_decisions)
                if record is not None and record.pop("_capped", False):
                    report.capped += 1
                if record is not None and problem:  # kept, its abstract cut
                    report.truncated += 1
                    problem = ""
                if problem == "excluded":
                    report.excluded += 1
                elif record is None:
                    report.skipped += 1
                    report.problems.append(problem)
                elif record["id"] not in seen:
                    seen.add(record["id"])
                    lines.append(json.dumps(record, ensure_ascii=False) + "\n")
            with own_part(out, part, append=True) as f:
                f.write("".join(lines).encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
                state["bytes"] = os.fstat(f.fileno()).st_size
            state["offset"] += len(notes)
            state["skipped"], state["excluded"] = report.skipped, report.excluded
            write_json(state_path, state)
            if progress:
                progress(len(notes), int(state.get("count") or state["offset"]))
            if state.get("count") is not None and state["offset"] >= state["count"]:
                break
            if state["bytes"] >= fetch_files.MAX_FETCH_BYTES:
                report.stopped = (
                    f"more than {fetch_files.MAX_FETCH_BYTES:,} bytes written (the server says "
                    f"{state.get('count')} notes); stopped there"
                )
                break
            if state["offset"] >= MAX_NOTES:
                report.stopped = (
                    f"more than {MAX_NOTES:,} notes (the server says {state.get('count')}); "
                    "stopped there"
                )
                break
    if not seen:
        part.unlink(missing_ok=True)
        state_path.unlink(missing_ok=True)
        what = "all submissions" if all_decisions else "accepted papers"
        raise FetchError(
            f"{api_url}: no {what} for venue {venue_id!r} "
            f"(check the id, e.g. {VENUE.openreview_id})"
        )
    refuse_special(out, out)  # nothing but a regular file is replaced, never a link
    os.replace(part, out)
    state_path.unlink(missing_ok=True)
    report.written = len(seen)
    report.seconds = time.perf_counter() - started
    return report


_HEADERS = {
    "Accept": "application/json",
    "Accept-Encoding": "gzip, deflate",  # what BoundedTransport inflates (with a bound)
    "User-Agent": "iclr-rag (rag fetch)",
}


def check_venue_id(venue_id: str) -> None:
    if not _VENUE_ID.match(venue_id or ""):
        raise FetchError(f"venue id {venue_id!r}: expected a group id like {VENUE.openreview_id}")


def check_api_url(api_url: str) -> str:
    url = httpx.URL(api_url) if "://" in (api_url or "") else None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise FetchError(f"--api-url {api_url!r}: expected http(s)://HOST[:PORT]")
    return str(api_url).rstrip("/")


class _Retryable(Exception):
    """A failed try worth repeating; `problem` says what went wrong."""

    def __init__(self, problem: str, response: httpx.Response | None = None) -> None:
        super().__init__(problem)
        self.problem, self.response = problem, response


def _get_notes(
    client: httpx.Client,
    params: dict[str, Any],
    retries: int,
    backoff: float,
    max_wait: float,
    report: FetchReport,
) -> dict[str, Any]:
    """One page; 429, 5xx and dropped connections are retried with backoff (Retry-After wins)."""
    where = f"{client.base_url}/notes (offset {params['offset']})"

    def get() -> dict[str, Any]:
        report.requests += 1
        try:
            response = client.get("/notes", params=params)
        except httpx.TransportError as e:
            raise _Retryable(f"connection failed ({type(e).__name__})") from None
        if response.status_code == 200:
            try:
                page = parse_json(response.content, where)
            except SideFileError:  # not JSON, or nested too deeply
                page = None
            if isinstance(page, dict) and isinstance(page.get("notes"), list):
                return page
            raise _Retryable("the reply is not {'notes': [...]}")
        if response.status_code == 429 or response.status_code >= 500:
            raise _Retryable(f"HTTP {response.status_code}", response)
        raise FetchError(f"{where}: HTTP {response.status_code}: {_message(response)}")

    def wait(error: Exception, attempt: int) -> float:
        response = getattr(error, "response", None)
        asked = retry.retry_after(response.headers) if response is not None else None
        return min(retry.backoff(attempt, backoff, max_wait) if asked is None else asked, max_wait)

    def counted(error: Exception, seconds: float) -> None:
        report.retries += 1

    try:
        return retry.retrying(
            get, retries, lambda e: isinstance(e, _Retryable), wait, on_retry=counted
        )
    except _Retryable as e:
        raise FetchError(
            f"{where}: {e.problem} after {retries + 1} tries; "
            "re-run the same command to resume from here"
        ) from None


def _message(response: httpx.Response) -> str:
    try:
        body = parse_json(response.content[:65536])
        text = body.get("message") or body.get("name") or response.reason_phrase
    except (ValueError, AttributeError):
        text = response.reason_phrase
    return " ".join(_clean(str(text))[:1000].split())[:200]


def paper_from_note(
    note: Any, venue_id: str, all_decisions: bool = False
) -> tuple[dict[str, Any] | None, str]:
    """The project's record for an API v2 note, or None and why it was left out."""
    if not isinstance(note, dict) or not isinstance(note.get("content"), dict):
        return None, f"note {_note_id(note)}: no content"
    content = note["content"]

    def value(key: str) -> Any:
        item = content.get(key)
        return item.get("value") if isinstance(item, dict) else None

    venueid = value("venueid")
    if not all_decisions and venueid != venue_id:
        return None, "excluded"
    pid = note.get("forum") or note.get("id")
    title, abstract = value("title"), value("abstract")
    if not isinstance(pid, str) or not pid.strip() or len(pid) > MAX_ID_CHARS:
        return None, f"note {_note_id(note)}: no id"
    pid = _clean(pid)
    for key, text in (("title", title), ("abstract", abstract)):
        if not isinstance(text, str) or not text.strip():
            return None, f"note {pid}: no {key}"
    abstract, cut = cap_abstract(" ".join(_clean(abstract).split()))
    capped = Capped()
    venue = capped.text(value("venue"), MAX_FIELD_CHARS)
    pdf = value("pdf")
    record: dict[str, Any] = {
        "id": pid,
        "title": capped.text(title, MAX_TITLE_CHARS),
        "abstract": abstract,
        "authors": capped.texts(value("authors"), MAX_AUTHORS, MAX_AUTHOR_CHARS),
        "keywords": capped.texts(value("keywords"), MAX_KEYWORDS, MAX_KEYWORD_CHARS),
        "decision": decision(venue, venueid, venue_id),
        "url": f"{SITE}/forum?id={pid}",
        "pdf": f"{SITE}{_clean(pdf)}"
        if isinstance(pdf, str) and pdf.startswith("/") and len(pdf) <= MAX_FIELD_CHARS
        else "",
        "tldr": capped.text(value("TLDR") or value("TL;DR"), MAX_TLDR_CHARS),
        "primary_area": capped.text(value("primary_area"), MAX_FIELD_CHARS).replace("_", " "),
        "license": capped.text(note.get("license"), MAX_FIELD_CHARS),
        "venue": venue,
        "venueid": capped.text(venueid, MAX_FIELD_CHARS),
        "authors_ordered": True,
        "source": f"openreview api v2: {venue_id}",
    }
    if capped.count:
        record["_capped"] = True
    return record, f"note {pid}: abstract cut to {MAX_ABSTRACT_CHARS:,} characters" if cut else ""


class Capped:
    """A note's texts and lists, each cut to its bound, counting the cuts."""

    def __init__(self) -> None:
        self.count = 0

    def text(self, value: Any, limit: int) -> str:
        text = _text(value[: limit * 4] if isinstance(value, str) else value)
        if len(text) > limit:
            self.count += 1
            cut = text[:limit]
            return cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
        return text

    def texts(self, value: Any, items: int, limit: int) -> list[str]:
        found = _texts(value, items + 1)
        if len(found) > items:
            self.count += 1
        return [self.text(v, limit) for v in found[:items]]


def decision(venue: str, venueid: Any, venue_id: str) -> str:
    """`Accept (Oral)` and the like, from the venue string ("ICLR 2025 Oral")."""
    if venueid == venue_id:
        # Only a venue of exactly that shape names a tier ("ICLR 2025 Poster (Oral candidate)"
        # is an accepted paper of no known tier, not an oral).
        match = _TIER_VENUE.fullmatch(" ".join(venue.split()))
        tier = next((t for t in TIERS if match and t.lower() == match.group(1).lower()), "")
        return f"Accept ({tier})" if tier else "Accept"
    lowered = f"{venue} {venueid}".lower()
    if "withdrawn" in lowered:
        return "Withdrawn"
    if "desk" in lowered and "reject" in lowered:
        return "Desk Reject"
    return "Reject"


def _texts(value: Any, most: int) -> list[str]:
    """The first `most` non-blank strings of a list (or comma-separated string)."""
    if isinstance(value, str):
        value = value.split(",", most * 4)
    if not isinstance(value, list):
        return []
    found = []
    for v in value:
        if isinstance(v, str) and v.strip():
            found.append(v)
            if len(found) >= most:
                break
    return found


def _text(value: Any) -> str:
    return " ".join(_clean(value).split()) if isinstance(value, str) else ""


def _clean(text: str) -> str:
    """Lone surrogates ("\\ud800" in the JSON) as U+FFFD: no UTF-8 file can hold them."""
    return without_surrogates(text)


def _note_id(note: Any) -> str:
    return str(note.get("id", "?")) if isinstance(note, dict) else "?"


def default_out(venue_id: str) -> Path:
    """ICLR.cc/2025/Conference -> iclr.cc-2025-conference.jsonl"""
    return Path(re.sub(r"[^a-z0-9.]+", "-", venue_id.lower()).strip("-") + ".jsonl")
