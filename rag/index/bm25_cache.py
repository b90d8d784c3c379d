"""The BM25 index's life: kept in memory, saved beside the store, rebuilt when the store changes.

Every ingest that changes something gives the chunks collection a new *generation* id. A
reader compares it with the cached index's on each search, so a re-ingest by another process
or host shows up at its next search; an unchanged index is read back from disk, not rebuilt.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from filelock import FileLock, Timeout

from rag.index.bm25 import KeywordIndex
from rag.settings import Settings

if TYPE_CHECKING:
    from rag.index.papers import PaperIndex
    from rag.types import Paper

T = TypeVar("T")


def keyword_dir(settings: Settings) -> Path:
    """Where the BM25 index of this store lives (beside the embedded index, or per server)."""
    store = settings.store
    if store.mode == "http":
        name = f"keyword-{store.host}-{store.port}-{store.collection}"
        if (store.tenant, store.database) != ("default_tenant", "default_database"):
            name += f"-{store.tenant}-{store.database}"
        return store.index_dir / name.replace(":", "_").replace("/", "_")
    return store.index_dir / "keyword"


class KeywordCache:
    """The BM25 index of one store, in memory and in `directory`."""

    def __init__(self, directory: Path, lock_path: Path) -> None:
        self.directory = directory
        self.lock_path = lock_path
        self._index: KeywordIndex | None = None
        # Sessions of one UI process share this object; one of them rebuilds BM25 at a time.
        self._lock = threading.Lock()

    def saved(self) -> KeywordIndex | None:
        """The index saved on disk, or None when there is none or it cannot be read."""
        return KeywordIndex.load(self.directory)

    def save(self, index: KeywordIndex) -> None:
        index.save(self.directory)
        self._index = index

    def saved_extra(self, name: str, generation: str, version: int) -> Any:
        """What `save_extra` kept for `generation` (derived from the same index, such as the
        name index of rag.retrieval.names), or None when it is missing, stale or unreadable."""
        from rag.common.side_files import SideFileError, read_json
        from rag.index.bm25 import MAX_CACHE_BYTES

        path = self.directory / f"{name}.json"
        if not path.exists():
            return None
        try:
            data = read_json(path, MAX_CACHE_BYTES)
        except SideFileError:
            return None
        if not isinstance(data, dict):
            return None
        if data.get("generation") != generation or data.get("version") != version:
            return None
        return data.get("value")

    def save_extra(self, name: str, generation: str, version: int, value: Any) -> None:
        """Keep `value` (JSON) beside the BM25 index; it goes when the index is rebuilt. Best
        effort: a folder swapped by another process's rebuild just means no cache."""
        from rag.common.atomic import atomic_write

        record = {"generation": generation, "version": version, "value": value}
        with suppress(OSError):  # a read-only folder, a link planted in the cache's place
            atomic_write(self.directory / f"{name}.json", json.dumps(record))

    def drop(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        self._index = None

    def current(
        self,
        generation: str,
        rebuild: Callable[[], KeywordIndex],
        build: Callable[[], KeywordIndex],
        fits: Callable[[KeywordIndex], bool] = lambda index: True,
    ) -> KeywordIndex:
        """The index of `generation`: from memory, else from disk, else rebuilt.

        `rebuild` makes and saves a new index (under the ingest lock); when an ingest holds
        that lock, `build` makes one in memory only, so a search never waits for a writer.
        `fits` checks a saved index against the store (a reordered or rewritten cache).
        """
        with self._lock:
            if self._index is None or self._index.generation != generation:
                loaded = self.saved()
                if loaded is not None and loaded.generation == generation and not fits(loaded):
                    from rag.common.side_files import warn

                    warn(
                        f"the keyword index in {self.directory} does not match the store; "
                        "it is rebuilt"
                    )
                    loaded = None
                if loaded is None or loaded.generation != generation:
                    loaded = self._rebuild(rebuild, build)
                self._index = loaded
            return self._index

    def _rebuild(
        self, rebuild: Callable[[], KeywordIndex], build: Callable[[], KeywordIndex]
    ) -> KeywordIndex:
        try:
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.lock_path), timeout=0):
                return rebuild()
        except (Timeout, OSError):
            # An ingest holds the lock (or the folder is read-only): never wait or fail a
            # search for it; build this one in memory and let the writer save its own.
            return build()


class SavedPerGeneration(Generic[T]):
    """An index derived from the store's papers (names, authors, titles): built once per index
    generation and saved beside the BM25 index (`KeywordCache.save_extra`), so a new process
    reads it back instead of reading every paper from the store and building it again.

    `load` turns what was saved into the index, or None when it is not of the saved shape;
    `dump` is what is saved.
    """

    def __init__(
        self,
        index: PaperIndex,
        name: str,
        version: int,
        build: Callable[[list[Paper], KeywordIndex], T],
        load: Callable[[Any], T | None],
        dump: Callable[[T], Any],
    ) -> None:
        self.index = index
        self.name, self.version = name, version
        self.build, self.load, self.dump = build, load, dump
        self._built: tuple[str, T] | None = None

    def current(self, keyword: KeywordIndex | None = None) -> T:
        keyword = keyword or self.index.keyword_index()
        if self._built is not None and self._built[0] == keyword.generation:
            return self._built[1]
        cache = self.index.keyword_cache
        saved = self.load(cache.saved_extra(self.name, keyword.generation, self.version))
        if saved is None:  # none saved for this generation, or not of the saved shape
            return self.rebuild(keyword)
        self._built = (keyword.generation, saved)
        return saved

    def rebuild(self, keyword: KeywordIndex | None = None) -> T:
        """Built from the store's papers for this generation and saved (also when a saved one
        turned out not to match the store)."""
        keyword = keyword or self.index.keyword_index()
        value = self.build(self.index.all_papers(), keyword)
        self._built = (keyword.generation, value)
        self.index.keyword_cache.save_extra(
            self.name, keyword.generation, self.version, self.dump(value)
        )
        return value
