"""Retrying a call that a busy server may refuse: one Retry-After parser, one retry loop.

    wait = retry_after(response.headers)             # seconds the server asked for, or None
    page = retrying(get_page, retries=3, retryable=is_busy, wait=wait_before)

Both the model calls (`rag.models.budget`, within an answer's time budget) and the OpenReview
fetch (`rag.corpus.openreview`) use them; each caller says which errors are worth another try,
how long to wait (usually the server's Retry-After, capped, else exponential backoff), and,
with a deadline, how much time is left.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The wait a server asked for, in seconds (>= 0), or None when it asked for none.

    `retry-after-ms` (milliseconds, as OpenAI's servers send) wins over `Retry-After`, which is
    seconds or an HTTP date; header names are matched in any case. Unreadable values are None.
    """
    if not headers:
        return None
    lower = {str(name).lower(): value for name, value in headers.items()}
    seconds: float | None = None
    try:
        if (ms := lower.get("retry-after-ms")) is not None:
            seconds = float(ms) / 1000
        elif (value := lower.get("retry-after")) is not None:
            value = str(value).strip()
            try:
                seconds = float(value)
            except ValueError:
                date = email.utils.parsedate_to_datetime(value)
                seconds = date.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None
    if seconds is None or seconds != seconds:  # NaN
        return None
    return max(seconds, 0.0)


def backoff(attempt: int, start: float, most: float) -> float:
    """Exponential backoff: `start` seconds before the first retry, doubling, at most `most`."""
    return float(min(start * 2**attempt, most))


def retrying(
    call: Callable[[], T],
    retries: int,
    retryable: Callable[[Exception], bool],
    wait: Callable[[Exception, int], float],
    time_left: Callable[[], float] | None = None,
    on_retry: Callable[[Exception, float], None] | None = None,
) -> T:
    """`call()`, tried up to `retries + 1` times.

    After a failure, the error is re-raised when no try is left, when `retryable(error)` says
    another would not help, or when the `wait(error, attempt)` before it would not end before
    `time_left()` runs out; otherwise `on_retry(error, seconds)` is told and the loop sleeps.
    """
    for attempt in range(retries + 1):
        try:
            return call()
        except Exception as error:
            if attempt >= retries or not retryable(error):
                raise
            seconds = wait(error, attempt)
            if time_left is not None and seconds >= time_left():
                raise
            if on_retry is not None:
                on_retry(error, seconds)
            time.sleep(seconds)
    raise AssertionError("unreachable: the last try returns or raises")
