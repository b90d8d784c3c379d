"""The ingest lock: one writer at a time per index, taken before an embedded store is created.

A file lock beside the BM25 cache, so it works the same for the embedded store and a server
(for a server it keeps ingests on this machine apart; ingest from one place).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from rag.errors import StoreError
from rag.index.bm25 import keyword_dir
from rag.index.store import check_not_a_file, describe_store, reason
from rag.settings import Settings


def lock_path(settings: Settings) -> Path:
    folder = keyword_dir(settings)
    return folder.with_name(folder.name + ".lock")


@contextmanager
def ingest_lock(settings: Settings) -> Iterator[None]:
    """Hold the lock; a second writer waits `store.lock_timeout` seconds, then fails."""
    path = lock_path(settings)
    check_not_a_file(path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(
            f"cannot create the index folder {path.parent} ({reason(e)})", hint="index_folder"
        ) from None
    lock = FileLock(str(path), timeout=settings.store.lock_timeout)
    try:
        lock.acquire()
    except Timeout:
        raise StoreError(
            f"another `rag ingest` is writing to {describe_store(settings)} (lock {path})",
            code="index_busy",
            hint="wait_for_ingest",
        ) from None
    except OSError as e:  # a read-only folder (or mount), no space for the lock file
        raise StoreError(
            f"cannot write to {path.parent} ({reason(e)})", code="read_only", hint="read_only_lock"
        ) from None
    try:
        yield
    finally:
        lock.release()
