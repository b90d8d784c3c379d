"""rag.common.retry: the one Retry-After parser and retry loop of the model calls and the fetch."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable

import httpx
import pytest

from rag.common.retry import backoff, retry_after, retrying


def test_retry_after_forms() -> None:
    assert retry_after(httpx.Headers({"Retry-After": "2"})) == 2.0
    assert retry_after({"retry-after": " 1.5 "}) == 1.5
    assert retry_after({"Retry-After-Ms": "1500", "Retry-After": "9"}) == 1.5  # ms wins
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (retry_after({"retry-after": soon}) or 0) <= 30
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # past
    assert retry_after({"retry-after": "86400"}) == 86400.0  # callers cap it
    for unreadable in ("soon", "nan", ""):
        assert retry_after({"retry-after": unreadable}) is None
    assert retry_after({}) is None and retry_after(None) is None


def test_backoff_doubles_up_to_its_ceiling() -> None:
    assert [backoff(a, 0.5, 3.0) for a in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


class Busy(Exception):
    pass


def flaky(failures: list[Exception]) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def call() -> str:
        calls.append(len(calls))
        if failures:
            raise failures.pop(0)
        return "done"

    return calls, call


def test_retrying_retries_what_is_retryable_and_reports_each_wait() -> None:
    calls, call = flaky([Busy(), Busy()])
    waits: list[tuple[str, float]] = []
    result = retrying(
        call,
        retries=2,
        retryable=lambda e: isinstance(e, Busy),
        wait=lambda e, attempt: 0.01 * (attempt + 1),
        on_retry=lambda e, s: waits.append((type(e).__name__, s)),
    )
    assert result == "done" and len(calls) == 3
    assert waits == [("Busy", 0.01), ("Busy", 0.02)]


def test_retrying_stops_when_no_try_is_left_or_the_error_is_final() -> None:
    calls, call = flaky([Busy(), Busy(), Busy()])
    with pytest.raises(Busy):
        retrying(call, 2, lambda e: True, lambda e, a: 0.0)
    assert len(calls) == 3
    calls, call = flaky([ValueError("final"), Busy()])
    with pytest.raises(ValueError, match="final"):
        retrying(call, 5, lambda e: isinstance(e, Busy), lambda e, a: 0.0)
    assert len(calls) == 1


def test_retrying_does_not_sleep_past_the_time_left() -> None:
    calls, call = flaky([Busy(), Busy()])
    started = time.monotonic()
    with pytest.raises(Busy):
        retrying(
            call,
            retries=3,
            retryable=lambda e: True,
            wait=lambda e, a: 10.0,
            time_left=lambda: 1.0,
        )
    assert len(calls) == 1 and time.monotonic() - started < 0.5
