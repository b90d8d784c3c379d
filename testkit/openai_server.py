"""A local HTTP server that speaks the OpenAI API protocol, for offline tests.

It implements just enough of the API for the real ``openai`` client and
LangChain's ``ChatOpenAI`` / ``OpenAIEmbeddings`` to talk to it over real HTTP:

- ``POST /v1/chat/completions`` (plain JSON and server-sent-event streaming,
  including ``stream_options.include_usage``),
- ``POST /v1/embeddings`` (deterministic hashed bag-of-words vectors, float or
  base64 encoding),
- ``GET /v1/models``.

Chat replies are scripted and every request is recorded::

    from testkit.openai_server import OpenAIServer, Reply

    with OpenAIServer() as srv:
        srv.script("first answer", Reply(status=429), lambda req: "echo")
        client = openai.OpenAI(base_url=srv.base_url, api_key="test")
        ...
        assert srv.requests[0].model == "gpt-test"

Only the standard library is used, so the server has no effect on what the
project depends on.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import re
import socket
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from testkit.local_server import LocalServer

__all__ = [
    "EMBEDDING_DIM",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "ReplySpec",
    "fake_embedding",
]

EMBEDDING_DIM = 64


@dataclass
class Reply:
    """One scripted answer to a chat completion request.

    For an error ``status`` (anything but 200), ``content`` is used as the
    error message.
    """

    content: str = ""
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: str | None = None
    close_connection: bool = False
    finish_reason: str = "stop"
    # A slow server: seconds between streamed pieces (or, without streaming, between bytes of
    # the body); `endless` keeps dripping until the client hangs up or the server stops.
    drip: float = 0.0
    endless: bool = False


ReplySpec = str | Reply | Callable[[dict[str, Any]], "str | Reply"]


@dataclass
class RecordedRequest:
    """A request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def _body(self) -> dict[str, Any]:
        return self.json if isinstance(self.json, dict) else {}

    @property
    def model(self) -> str | None:
        return self._body.get("model")

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self._body.get("messages") or []

    @property
    def stream(self) -> bool:
        return bool(self._body.get("stream"))

    @property
    def prompt_text(self) -> str:
        return "\n".join(_content_text(m.get("content")) for m in self.messages)


def _content_text(content: Any) -> str:
    """Text of a message's content, which may be a string or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _count_tokens(text: str) -> int:
    return len(text.split())


def fake_embedding(text_or_tokens: str | Iterable[int], dim: int = EMBEDDING_DIM) -> list[float]:
    """Deterministic L2-normalised hashed bag-of-words vector.

    Texts sharing words get similar vectors, so retrieval over them behaves
    sensibly. Token ids are treated as words. Input without any word maps to
    the first unit vector rather than to zeros, because a zero vector makes
    cosine similarity undefined in vector stores.
    """
    if isinstance(text_or_tokens, str):
        words = re.findall(r"\w+", text_or_tokens.lower())
    else:
        words = [str(token) for token in text_or_tokens]
    vector = [0.0] * dim
    for word in words:
        digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vector[digest % dim] += 1.0 if (digest >> 32) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        return [1.0] + [0.0] * (dim - 1)
    return [x / norm for x in vector]


def _error_body(status: int, message: str) -> dict[str, Any]:
    error_type, code = {
        400: ("invalid_request_error", None),
        401: ("invalid_request_error", "invalid_api_key"),
        403: ("permission_error", None),
        404: ("invalid_request_error", "not_found"),
        429: ("requests", "rate_limit_exceeded"),
    }.get(status, ("server_error", None) if status >= 500 else ("invalid_request_error", None))
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _split_deltas(content: str) -> list[str]:
    """Split content into word-sized pieces that concatenate back to it exactly."""
    return re.findall(r"\s*\S+\s*", content) or ([content] if content else [])


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: OpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeouts, dropped connections) are expected in tests.
        pass


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 gives keep-alive like the real API; streams use chunked encoding.
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        self.server.owner._track(self.connection, add=False)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        owner = self.server.owner
        path = urlsplit(self.path).path.rstrip("/")
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=self.command,
            path=path,
            headers={k.lower(): v for k, v in self.headers.items()},
            json=body,
        )
        owner._record(request)

        auth_error = owner._check_auth(request.headers.get("authorization"))
        if auth_error:
            self._send_json(401, _error_body(401, auth_error))
            return
        if raw and body is None:
            self._send_json(
                400, _error_body(400, "We could not parse the JSON body of your request.")
            )
            return

        if self.command == "POST" and path == "/v1/chat/completions":
            self._chat(request)
        elif self.command == "POST" and path == "/v1/embeddings":
            self._embeddings(request)
        elif self.command == "GET" and path == "/v1/models":
            self._send_json(200, owner._models_body())
        else:
            self._send_json(404, _error_body(404, f"Unknown route: {self.command} {path}"))

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _chat(self, request: RecordedRequest) -> None:
        owner = self.server.owner
        try:
            reply = owner._next_reply(request.json)
        except Exception as exc:
            # Don't let the client retry: the test's reply callable is broken.
            message = f"reply callable raised {type(exc).__name__}: {exc}"
            self._send_json(500, _error_body(500, message), {"x-should-retry": "false"})
            return

        if reply.delay and owner._stopping.wait(reply.delay):
            self.close_connection = True
            return
        if reply.close_connection:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.raw_body is not None:
            content_type = "text/event-stream" if request.stream else "application/json"
            self._send(
                reply.status,
                reply.raw_body.encode(),
                {"content-type": content_type, **reply.headers},
            )
            return
        if reply.status != 200:
            message = reply.content or f"Simulated error with status {reply.status}."
            self._send_json(reply.status, _error_body(reply.status, message), reply.headers)
            return

        model = request.model or "unknown"
        usage = {
            "prompt_tokens": _count_tokens(request.prompt_text),
            "completion_tokens": _count_tokens(reply.content),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if request.stream:
            include_usage = bool((request.json.get("stream_options") or {}).get("include_usage"))
            self._stream_chat(model, reply, usage if include_usage else None)
            return
        if reply.drip:
            self._drip_json(reply)
            return
        completion = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": usage,
        }
        self._send_json(200, completion, reply.headers)

    def _stream_chat(self, model: str, reply: Reply, usage: dict[str, int] | None) -> None:
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
            base = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": choices,
            }
            # With include_usage the real API sends "usage": null on every content chunk.
            if usage is not None:
                base["usage"] = None
            return {**base, **extra}

        def choice(delta: dict[str, Any], finish_reason: str | None = None) -> list[dict[str, Any]]:
            return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]

        events = [chunk(choice({"role": "assistant", "content": ""}))]
        events += [chunk(choice({"content": piece})) for piece in _split_deltas(reply.content)]
        events.append(chunk(choice({}, reply.finish_reason)))
        if usage is not None:
            events.append(chunk([], usage=usage))

        self.send_response(200)
        for name, value in {
            "content-type": "text/event-stream",
            "cache-control": "no-cache",
            **reply.headers,
        }.items():
            self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        self.end_headers()
        stopping = self.server.owner._stopping
        for n, event in enumerate(events):
            if reply.drip and n and stopping.wait(reply.drip):
                return
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
        while reply.endless:
            if stopping.wait(reply.drip or 0.2):
                return
            self._write_chunk(
                f"data: {json.dumps(chunk(choice({'content': 'more '})))}\n\n".encode()
            )
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _drip_json(self, reply: Reply) -> None:
        """A completion whose body arrives a few bytes at a time (or, endless, never ends)."""
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        stopping = self.server.owner._stopping
        body = json.dumps(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": "drip",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": reply.finish_reason,
                    }
                ],
            }
        ).encode()
        pieces: Iterable[bytes] = (
            itertools.repeat(b" ")
            if reply.endless
            else [body[i : i + 8] for i in range(0, len(body), 8)]
        )
        for piece in pieces:  # leading spaces are valid JSON, so an endless drip stays "valid"
            self._write_chunk(piece)
            if stopping.wait(reply.drip):
                return
        self.wfile.write(b"0\r\n\r\n")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _embeddings(self, request: RecordedRequest) -> None:
        body = request.json or {}
        items = _embedding_inputs(body.get("input"))
        if not items:
            self._send_json(
                400,
                _error_body(
                    400, "'input' must be a non-empty string, list of strings or token lists."
                ),
            )
            return
        dim = int(body.get("dimensions") or EMBEDDING_DIM)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, item in enumerate(items):
            vector = fake_embedding(item, dim)
            encoded: list[float] | str = (
                base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode() if as_base64 else vector
            )
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(_count_tokens(item) if isinstance(item, str) else len(item) for item in items)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or "unknown",
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(
            status,
            json.dumps(payload).encode(),
            {"content-type": "application/json", **(headers or {})},
        )

    def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        self.end_headers()
        self.wfile.write(data)


def _embedding_inputs(value: Any) -> list[str | list[int]]:
    """Normalise the ``input`` field: a string, token list, or a list of either."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        return []
    if all(isinstance(v, int) for v in value):
        return [value]
    if all(
        isinstance(v, str) or (isinstance(v, list) and all(isinstance(t, int) for t in v))
        for v in value
    ):
        return value
    return []


class OpenAIServer(LocalServer):
    """OpenAI-compatible HTTP server on 127.0.0.1 with a port chosen by the OS.

    Use as a context manager, or call ``start()`` and ``stop()``.
    """

    def __init__(self, default_reply: ReplySpec = "OK", required_key: str | None = None) -> None:
        self.default_reply: ReplySpec = default_reply
        self.required_key: str | None = required_key
        self.models: list[str] = ["gpt-test", "text-embedding-test"]
        self._lock = threading.Lock()
        self._replies: deque[ReplySpec] = deque()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("OpenAIServer is not running")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def script(self, *replies: ReplySpec) -> None:
        """Queue replies, consumed one per chat completion request, in order."""
        with self._lock:
            self._replies.extend(replies)

    def reset(self) -> None:
        """Forget queued replies and recorded requests."""
        with self._lock:
            self._replies.clear()
            self._requests.clear()

    def start(self) -> OpenAIServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        # A short poll interval keeps shutdown() fast; the default 0.5 s adds up across tests.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="openai-test-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        # Wake delayed replies and unblock keep-alive connections so handler threads end now.
        self._stopping.set()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _check_auth(self, header: str | None) -> str | None:
        """Return an error message if the Authorization header is unacceptable."""
        scheme, _, key = (header or "").partition(" ")
        key = key.strip()
        if scheme != "Bearer" or not key:
            return "You didn't provide an API key. Send it as 'Authorization: Bearer YOUR_KEY'."
        if self.required_key is not None and key != self.required_key:
            return f"Incorrect API key provided: {key}."
        return None

    def _next_reply(self, request_json: Any) -> Reply:
        with self._lock:
            spec = self._replies.popleft() if self._replies else self.default_reply
        if callable(spec) and not isinstance(spec, Reply):
            spec = spec(request_json)
        if isinstance(spec, str):
            return Reply(content=spec)
        if isinstance(spec, Reply):
            return spec
        raise TypeError(f"reply must be str, Reply or callable, got {type(spec).__name__}")

    def _models_body(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "openai-test-server"}
                for m in self.models
            ],
        }
