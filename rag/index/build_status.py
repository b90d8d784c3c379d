"""How far an index build has got, in a small file beside the index, for other processes to read.

`rag ingest` (and the page's own "Build the index") record progress while they run; the page,
opened while `make run` is still building, reads it and says what is happening. The file stays
behind if the build dies, which marks the index as incomplete until a build finishes.

An ingest into an index that was complete (`serving`) leaves it open: readers go on answering
from it, and every paper in it is whole (its record is written after its chunks), so the page
keeps the chat running instead of waiting for the build.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rag.common.atomic import atomic_write
from rag.errors import StoreError
from rag.index.store import SEARCH
from rag.settings import Settings


@dataclass(frozen=True)
class BuildStatus:
    pid: int
    done: int
    total: int
    started: float
    updated: float
    serving: bool = False  # the index was complete when this build began: it stays usable

    @property
    def running(self) -> bool:
        """The building process is alive (a build that died leaves its file behind)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def eta_seconds(self) -> float | None:
        if not self.done or self.done >= self.total:
            return None
        rate = self.done / max(self.updated - self.started, 1e-6)
        return (self.total - self.done) / rate


def status_path(settings: Settings) -> Path:
    index_dir = settings.store.index_dir
    return index_dir.parent / f"{index_dir.name}.build.json"


def read_build_status(settings: Settings) -> BuildStatus | None:
    from rag.common.side_files import read_json

    try:
        data = read_json(status_path(settings), 1 << 16)  # bounded; nesting is a bad file
        fields = {k: data[k] for k in ("pid", "done", "total", "started", "updated")}
        # A pid of 0 or -1 would ask about a process group or every process (kill(2)).
        if not all(type(fields[k]) is int and fields[k] >= 0 for k in ("pid", "done", "total")):
            return None
        if fields["pid"] < 1 or not all(
            type(fields[k]) in (int, float) for k in ("started", "updated")
        ):
            return None
        return BuildStatus(**fields, serving=data.get("serving") is True)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def index_is_built(settings: Settings) -> bool:
    """An embedded index is there, of the vectors configured, and no build of it was left
    unfinished (cheap: files only, so `make run` starts at once on a built index)."""
    index_dir = settings.store.index_dir
    return (
        settings.store.mode == "embedded"
        and (index_dir / "chroma" / "chroma.sqlite3").is_file()
        and not status_path(settings).exists()
        and built_vectors(settings) == settings.embedding.precision
        and built_search(settings) == SEARCH
    )


def vectors_path(settings: Settings) -> Path:
    return settings.store.index_dir / "vectors.json"


def mark_built(settings: Settings, vectors: str) -> None:
    """Which vectors the finished index holds and how it is searched (an index from before
    this file, of int8 vectors when float32 ones are configured, or searched approximately,
    is brought up to date by `rag ingest --if-needed`)."""
    atomic_write(vectors_path(settings), json.dumps({"vectors": vectors, "search": SEARCH}))


def built_vectors(settings: Settings) -> str | None:
    return _built(settings, "vectors")


def built_search(settings: Settings) -> str | None:
    return _built(settings, "search")


def _built(settings: Settings, key: str) -> str | None:
    try:
        found = json.loads(vectors_path(settings).read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


class BuildRecord:
    """The progress callback of a build, which writes its record; `searchable()` once the index
    is whole, so readers use it while the build finishes what the chat does not need."""

    def __init__(
        self, path: Path, serving: bool, progress: Callable[[int, int], None] | None
    ) -> None:
        self.path, self.serving, self.progress = path, serving, progress
        self.started = time.time()
        self.done = self.total = 0
        self.reported = False

    def write(self) -> None:
        status = {"pid": os.getpid(), "done": self.done, "total": self.total}
        times = {"started": self.started, "updated": time.time()}
        atomic_write(self.path, json.dumps(status | times | {"serving": self.serving}))

    def __call__(self, papers: int, total: int) -> None:
        self.reported = True
        self.done += papers
        self.total = total
        self.write()
        if self.progress is not None:
            self.progress(papers, total)

    def searchable(self) -> None:
        self.serving = True
        self.write()


@contextmanager
def recording_build(
    settings: Settings,
    progress: Callable[[int, int], None] | None = None,
    keeps_index: bool = True,
) -> Iterator[BuildRecord]:
    """A progress callback that also records the build; the record goes when the build succeeds.

    `keeps_index` False (a rebuild drops the collections): readers must not use the index
    until the build calls `searchable()`.
    """
    path = status_path(settings)
    # Complete before this build's record exists, or a stopped build of a complete one resumed.
    previous = read_build_status(settings)
    serving = keeps_index and (
        index_is_built(settings) or (previous is not None and previous.serving)
    )
    record = BuildRecord(path, serving, progress)

    # Marked incomplete from the start (a build killed before its first batch leaves a partial
    # index too), but never over another build's record: the index lock may refuse this one.
    created = not path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if created:
            record.write()
    except OSError as e:  # the first write of a build: a read-only folder or mount shows here
        raise StoreError(
            f"cannot write in {path.parent} ({e.strerror}): the index "
            f"{settings.store.index_dir.name} and its build record go there",
            code="read_only",
            hint="writable_folder",
        ) from None
    try:
        yield record
    except BaseException:
        if created and not record.reported:
            path.unlink(missing_ok=True)  # failed before the ingest began: nothing to finish
        raise
    path.unlink(missing_ok=True)
