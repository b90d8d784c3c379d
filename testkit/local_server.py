"""The test servers' one context-manager shape: start on enter, stop on exit."""

from __future__ import annotations

from types import TracebackType
from typing import Any


class LocalServer:
    """Base of the loopback servers the tests start (Chroma, OpenAI, OpenReview)."""

    def start(self) -> Any:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
