"""A local HTTP server that answers like OpenReview's API v2 `GET /notes`, for offline tests.

- `content.venueid=ID` selects notes whose `content.venueid.value` is ID (the accepted papers of
  a venue); `invitation=ID` selects notes whose `invitations` hold ID (every submission).
- `limit` / `offset` page through them (the server caps a page at `page_size`, as the real one
  caps at 1000); the reply is `{"notes": [...], "count": N}`.
- Faults are scripted per request: `Fault(429, retry_after=1)`, `Fault(500)`, `Fault("cut")`
  (headers and half the body, then the connection closes); `cut_from(n)` cuts every request
  from the n-th on, until `reset_faults()`.
- `hostile`: a function `(handler, query) -> bool` that writes its own reply (the same page
  forever, endless notes, a gzip bomb, a dripped body...; tests/test_fetch_hostile.py).

Every request is recorded (path and query). Only the standard library is used.

    with OpenReviewServer(notes, page_size=4) as server:
        server.script(Fault(429, retry_after=0))
        fetch_venue("ICLR.cc/2025/Conference", out, api_url=server.base_url)
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from testkit.local_server import LocalServer

NOTES_FILE = Path(__file__).resolve().parent / "data" / "openreview_notes.json"


def fixture_notes() -> list[dict[str, Any]]:
    return list(json.loads(NOTES_FILE.read_text(encoding="utf-8"))["notes"])


@dataclass(frozen=True)
class Fault:
    kind: int | str  # an HTTP status, or "cut"
    retry_after: str | None = None


@dataclass(frozen=True)
class Request:
    path: str
    query: dict[str, str]

    @property
    def offset(self) -> int:
        return int(self.query.get("offset", 0))


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        owner = self.server.owner
        fault = owner._next_fault(Request(url.path, query))
        if owner.hostile is not None and owner.hostile(self, query):
            return
        if url.path != "/notes":
            return self._json(404, {"name": "NotFoundError", "message": f"{url.path} not found"})
        if isinstance(fault, Fault) and fault.kind != "cut":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            message = {"name": "RateLimitError" if fault.kind == 429 else "Error"}
            return self._json(int(fault.kind), message, headers)
        try:
            limit = min(int(query.get("limit", 1000)), owner.page_size)
            offset = int(query.get("offset", 0))
        except ValueError:
            return self._json(400, {"name": "ValidationError", "message": "limit/offset"})
        if "content.venueid" in query:
            want = query["content.venueid"]
            found = [n for n in owner.notes if _value(n, "venueid") == want]
        elif "invitation" in query:
            found = [n for n in owner.notes if query["invitation"] in n.get("invitations", [])]
        else:
            return self._json(400, {"name": "ValidationError", "message": "no filter given"})
        body = {"notes": found[offset : offset + limit], "count": len(found)}
        if fault is not None:  # a cut: half the body, then the connection drops
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self._json(200, body)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self.reply(status, json.dumps(payload).encode(), headers)

    def reply(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        """`data` as the JSON body, with `headers` beside (a hostile hook's raw reply too)."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


def _value(note: dict[str, Any], key: str) -> Any:
    item = note.get("content", {}).get(key) if isinstance(note.get("content"), dict) else None
    return item.get("value") if isinstance(item, dict) else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: OpenReviewServer


class OpenReviewServer(LocalServer):
    def __init__(self, notes: list[dict[str, Any]] | None = None, page_size: int = 1000) -> None:
        self.notes = fixture_notes() if notes is None else notes
        self.page_size = page_size
        self.requests: list[Request] = []
        self._faults: deque[Fault | None] = deque()
        self._cut_from: int | None = None
        self._lock = threading.Lock()
        self._server: _Server | None = None
        # A hostile reply: called with the handler and the query; True when it answered.
        self.hostile: Callable[[_Handler, dict[str, str]], bool] | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def script(self, *faults: Fault | None) -> None:
        """Faults for the next requests in order (None: answer normally)."""
        with self._lock:
            self._faults.extend(faults)

    def cut_from(self, request_number: int) -> None:
        """Drop the connection of every request from the n-th (1-based) on."""
        self._cut_from = request_number

    def reset_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._cut_from = None

    def _next_fault(self, request: Request) -> Fault | None:
        with self._lock:
            self.requests.append(request)
            if self._cut_from is not None and len(self.requests) >= self._cut_from:
                return Fault("cut")
            return self._faults.popleft() if self._faults else None

    def start(self) -> OpenReviewServer:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
