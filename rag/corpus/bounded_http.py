"""HTTP replies read whole within a size and a time bound, for a server that may be hostile.

A gzip bomb, an endless body or one dripped a byte at a time ends as an error instead of
filling memory or never ending (the OpenReview fetch, rag.corpus.openreview).
"""

from __future__ import annotations

import time
import zlib

import httpx

from rag.errors import FetchError

MAX_PAGE_BYTES = 64 << 20  # per reply, compressed and inflated


class BoundedTransport(httpx.HTTPTransport):
    """Every reply read whole here, within MAX_PAGE_BYTES (compressed and inflated) and
    `deadline` seconds in all: a gzip bomb, an endless body or one dripped a byte at a time
    (each read within `timeout`) ends as an error instead of filling memory or never ending.
    Only gzip and deflate are asked for (_HEADERS), and inflated here with a bound.
    """

    def __init__(self, deadline: float) -> None:
        super().__init__()
        self.deadline = deadline

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        started = time.monotonic()
        response = super().handle_request(request)
        limit = MAX_PAGE_BYTES
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        declared = response.headers.get("Content-Length", "")
        body = bytearray()
        try:
            if encoding not in ("identity", "gzip", "deflate"):
                raise FetchError(f"{_where(request)}: a reply in {encoding!r}, not gzip")
            if declared.isdigit() and int(declared) > limit:
                raise _too_big(request, limit)
            inflate = zlib.decompressobj(47) if encoding != "identity" else None  # gzip or zlib
            raw = 0
            for chunk in response.iter_raw():
                raw += len(chunk)
                if raw > limit:
                    raise _too_big(request, limit)
                if inflate is None:
                    body += chunk
                else:
                    body += inflate.decompress(chunk, limit + 1 - len(body))
                    if inflate.unconsumed_tail:
                        raise _too_big(request, limit)
                if len(body) > limit:
                    raise _too_big(request, limit)
                if time.monotonic() - started > self.deadline:
                    raise httpx.ReadTimeout(
                        f"the reply took longer than {self.deadline:g} s", request=request
                    )
        except zlib.error:
            raise httpx.DecodingError("a reply that does not inflate", request=request) from None
        finally:
            response.close()
        dropped = ("content-encoding", "content-length", "transfer-encoding")
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in dropped]
        return httpx.Response(
            response.status_code, headers=headers, content=bytes(body), request=request
        )


def _where(request: httpx.Request) -> str:
    return str(request.url.copy_with(query=None))


def _too_big(request: httpx.Request, limit: int) -> FetchError:
    return FetchError(
        f"{_where(request)}: a reply of more than {limit:,} bytes "
        "(a page of 1,000 notes is a few MB); the server is not answering like OpenReview"
    )
