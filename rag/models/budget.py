"""One answer's time budget: the model calls, their retries and the stream share `llm.timeout`.

    budget = Budget(settings.llm.timeout, settings.llm.max_retries)
    reply = invoke(chat_model, messages, budget)          # or: for chunk in stream(...)

A per-read timeout is not a limit: a server that drips one token a second never trips it, and
a server's `Retry-After` multiplies the wait. Here each call runs in a worker thread that the
caller stops waiting for at the deadline, retries (429, 5xx, dropped connections) happen only
while time is left, a `Retry-After` is honoured up to `RETRY_AFTER_CAP`, and the HTTP client
that `rag.models.factory` gives OpenAI-compatible models ends any response still arriving at the
deadline, so an abandoned call does not drip on in the background.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2 as httpx  # the HTTP client the openai package uses

from rag.common import retry

T = TypeVar("T")
RETRY_AFTER_CAP = 5.0  # seconds: the most of a server's Retry-After that is honoured
BACKOFF_START, BACKOFF_MAX = 0.5, 8.0  # without Retry-After, as the OpenAI client backs off
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


class BudgetExceeded(TimeoutError):
    """The answer did not finish within `llm.timeout` (everything included)."""


@dataclass
class Budget:
    seconds: float
    retries: int = 0
    started: float = field(default_factory=time.monotonic)

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


def stream(model: Any, messages: Any, budget: Budget) -> Iterator[Any]:
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
    if isinstance(error, openai.APITimeoutError):
        return False  # the time is spent
    response = getattr(error, "response", None)
    should = getattr(response, "headers", {}).get("x-should-retry")
    if should in ("true", "false"):  # the server's word, as the OpenAI client takes it
        return should == "true"
    if isinstance(error, openai.APIStatusError):
        return error.status_code in (408, 409, 429) or error.status_code >= 500
    return isinstance(error, openai.APIConnectionError)


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
    """Start `work` in a daemon thread that knows the deadline (for `DeadlineTransport`)."""
    context = contextvars.copy_context()
    context.run(_DEADLINE.set, budget.deadline)
    threading.Thread(target=context.run, args=(work,), daemon=True, name="llm-call").start()


class DeadlineTransport(httpx.BaseTransport):
    """An httpx transport that ends requests and responses at the current budget's deadline.

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
        response = self.inner.handle_request(request)
        response.stream = _DeadlineStream(response.stream, deadline, request)  # type: ignore[arg-type]
        return response

    def close(self) -> None:
        self.inner.close()


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, deadline: float, request: httpx.Request) -> None:
        self.inner, self.deadline, self.request = inner, deadline, request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if time.monotonic() >= self.deadline:
                raise httpx.ReadTimeout("the answer's time budget is spent", request=self.request)
            yield chunk

    def close(self) -> None:
        self.inner.close()
