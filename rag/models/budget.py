"""One answer's time budget: the model calls, their retries and the stream share `llm.timeout`.

    budget = Budget(settings.llm.timeout, settings.llm.max_retries)
    reply = invoke(chat_model, messages, budget)          # or: for chunk in stream(...)

A per-read timeout is not a limit: a server that drips one token a second never trips it, and
a server's `Retry-After` multiplies the wait. Here each call runs in a worker thread that the
caller stops waiting for at the deadline, retries (429, 5xx, dropped connections) happen only
while time is left, a `Retry-After` is honoured up to `RETRY_AFTER_CAP`, and the HTTP client
that `rag.models.factory` gives OpenAI-compatible models ends any response still arriving at the
deadline, so an abandoned call does not drip on in the background.

A reply has a byte budget too, tied to `llm.max_tokens`: a server may ignore the limit and send
10 MB or stream forever. The text read is cut at `reply_bytes` (rag.answer.streaming), and the
HTTP client stops a response body past `body_bytes` (the JSON and event framing around the text
included) with `ReplyTooLong`.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2 as httpx  # the HTTP client the openai package uses

from rag.common import retry

T = TypeVar("T")
RETRY_AFTER_CAP = 5.0  # seconds: the most of a server's Retry-After that is honoured
BACKOFF_START, BACKOFF_MAX = 0.5, 8.0  # without Retry-After, as the OpenAI client backs off
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)
_BODY_BYTES: contextvars.ContextVar[int | None] = contextvars.ContextVar("body", default=None)
# A token is 1 to 4 bytes of UTF-8 text in practice; 16 leaves room for the longest ones.
REPLY_BYTES_PER_TOKEN = 16
# Streamed, each token comes in an event of about 250 bytes (ids, model name, JSON framing).
BODY_BYTES_PER_TOKEN = 1024
BODY_BYTES_FLOOR = 64 * 1024  # an error body, a short reply's framing


class BudgetExceeded(TimeoutError):
    """The answer did not finish within `llm.timeout` (everything included)."""


class ReplyTooLong(ValueError):
    """The server sent more than `llm.max_tokens` could make (`Budget.body_bytes`)."""


@dataclass
class Budget:
    seconds: float
    retries: int = 0
    started: float = field(default_factory=time.monotonic)
    max_tokens: int | None = None  # the reply's byte budgets follow from it

    @property
    def reply_bytes(self) -> int | None:
        """The most text of one reply that is read (UTF-8 bytes)."""
        return None if self.max_tokens is None else self.max_tokens * REPLY_BYTES_PER_TOKEN

    @property
    def body_bytes(self) -> int | None:
        """The most bytes of one HTTP response body that are read."""
        if self.max_tokens is None:
            return None
        return BODY_BYTES_FLOOR + self.max_tokens * BODY_BYTES_PER_TOKEN

    @property
    def deadline(self) -> float:
        return self.started + self.seconds

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def check(self) -> None:
        if time.monotonic() >= self.deadline:
            raise BudgetExceeded(f"no answer within {self.seconds:g} s")


def invoke(model: Any, messages: Any, budget: Budget) -> Any:
    """`model.invoke(messages)`, retried while time is left, never past the deadline."""
    return _retrying(budget, lambda: _within(budget, lambda: model.invoke(messages)))


def stream(model: Any, messages: Any, budget: Budget) -> Generator[Any, None, None]:
    """`model.stream(messages)` chunk by chunk; it may be retried until its first chunk."""

    def first_chunk() -> tuple[Any, Iterator[Any]]:
        chunks = _stream_within(budget, lambda: model.stream(messages))
        return next(chunks, None), chunks

    first, chunks = _retrying(budget, first_chunk)
    if first is None:
        return
    yield first
    yield from chunks


def _retrying(budget: Budget, call: Callable[[], T]) -> T:
    """`call()`, retried (429, 5xx, dropped connections) while a retry can start in time."""
    return retry.retrying(call, budget.retries, _retryable, _wait, time_left=budget.remaining)


def _wait(error: Exception, attempt: int) -> float:
    """The server's Retry-After (capped), else the OpenAI client's backoff."""
    asked = retry_after(error)
    return retry.backoff(attempt, BACKOFF_START, BACKOFF_MAX) if asked is None else asked


def _retryable(error: Exception) -> bool:
    try:
        import openai
    except ImportError:  # pragma: no cover - openai is a dependency
        return False
    if isinstance(error, openai.APITimeoutError) or too_long(error):
        return False  # the time is spent; the same server would send as much again
    response = getattr(error, "response", None)
    should = getattr(response, "headers", {}).get("x-should-retry")
    if should in ("true", "false"):  # the server's word, as the OpenAI client takes it
        return should == "true"
    if isinstance(error, openai.APIStatusError):
        return error.status_code in (408, 409, 429) or error.status_code >= 500
    return isinstance(error, openai.APIConnectionError)


def too_long(error: BaseException) -> bool:
    """Whether `error` (or what caused it: the OpenAI client wraps it) is `ReplyTooLong`."""
    seen: BaseException | None = error
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, ReplyTooLong):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def retry_after(error: Exception) -> float | None:
    """The server's Retry-After (or retry-after-ms) in seconds, capped at RETRY_AFTER_CAP."""
    seconds = retry.retry_after(getattr(getattr(error, "response", None), "headers", None))
    return None if seconds is None else min(seconds, RETRY_AFTER_CAP)


def _within(budget: Budget, call: Callable[[], T]) -> T:
    """Run `call` in a worker thread and stop waiting for it at the deadline."""
    budget.check()
    results: queue.Queue[tuple[bool, Any]] = queue.Queue()

    def work() -> None:
        try:
            results.put((True, call()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            results.put((False, e))

    _start(work, budget)
    try:
        ok, value = results.get(timeout=budget.remaining())
    except queue.Empty:
        raise BudgetExceeded(f"no answer within {budget.seconds:g} s") from None
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def _stream_within(budget: Budget, open_stream: Callable[[], Iterator[T]]) -> Iterator[T]:
    """The chunks of `open_stream()`, read in a worker thread, until the deadline."""
    budget.check()
    chunks: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            source = open_stream()
            try:
                for chunk in source:
                    chunks.put(("chunk", chunk))
                    if stop.is_set():
                        break
            finally:
                close = getattr(source, "close", None)
                if close is not None:
                    close()
            chunks.put(("end", None))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            chunks.put(("error", e))

    _start(work, budget)
    try:
        while True:
            try:
                kind, value = chunks.get(timeout=budget.remaining())
            except queue.Empty:
                raise BudgetExceeded(f"no answer within {budget.seconds:g} s") from None
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
            budget.check()
    finally:
        stop.set()


def _start(work: Callable[[], None], budget: Budget) -> None:
    """Start `work` in a daemon thread that knows the deadline and the body's byte budget
    (for `DeadlineTransport`)."""
    context = contextvars.copy_context()
    context.run(_DEADLINE.set, budget.deadline)
    context.run(_BODY_BYTES.set, budget.body_bytes)
    threading.Thread(target=context.run, args=(work,), daemon=True, name="llm-call").start()


class DeadlineTransport(httpx.BaseTransport):
    """An httpx transport that ends requests and responses at the current budget's deadline,
    and a response body past its byte budget (`ReplyTooLong`).

    Without a budget (no answer running), requests pass through unchanged.
    """

    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = _DEADLINE.get()
        if deadline is None:
            return self.inner.handle_request(request)
        left = deadline - time.monotonic()
        if left <= 0:
            raise httpx.ReadTimeout("the answer's time budget is spent", request=request)
        timeouts = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            name: min(timeouts.get(name) or left, left)
            for name in ("connect", "read", "write", "pool")
        }
        max_bytes = _BODY_BYTES.get()
        if max_bytes is not None:  # bytes counted are bytes read: no gzip bomb behind them
            request.headers["accept-encoding"] = "identity"
        response = self.inner.handle_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if max_bytes is not None and encoding != "identity":
            response.close()
            raise ReplyTooLong(f"the reply came compressed ({encoding}) though asked not to be")
        response.stream = _DeadlineStream(  # type: ignore[assignment]
            response.stream, deadline, request, max_bytes
        )
        return response

    def close(self) -> None:
        self.inner.close()


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(
        self, inner: Any, deadline: float, request: httpx.Request, max_bytes: int | None
    ) -> None:
        self.inner, self.deadline, self.request = inner, deadline, request
        self.max_bytes = max_bytes

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        for chunk in self.inner:
            if time.monotonic() >= self.deadline:
                raise httpx.ReadTimeout("the answer's time budget is spent", request=self.request)
            read += len(chunk)
            if self.max_bytes is not None and read > self.max_bytes:
                raise ReplyTooLong(f"the reply passed {self.max_bytes:,} bytes")
            yield chunk

    def close(self) -> None:
        self.inner.close()
