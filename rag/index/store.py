"""Connecting to Chroma: the embedded folder or a server, its credentials, and clear errors.

Every failure of the store reaches the caller as a `StoreError` whose message says what to do.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag.errors import IndexMissingError, StoreError
from rag.settings import Settings

# Chroma's HNSW settings for every collection this project creates. ef_search is larger than
# any collection of a conference (its chunks: 5,260; its multilingual vectors: 3,716), so a
# search visits every vector: exact, and the same after every start. At ef 200 it was
# approximate (20 searches for 100 chunks missed 15 of the exact ones), and Chroma rebuilds the
# part of its graph not yet persisted from its log at each start, with threads, so a Chinese
# question's fifth source changed from one start to the next. A search of 5,260 chunks takes
# about 4 ms instead of 3.
EXACT_EF = 16384
HNSW = {"space": "cosine", "ef_search": EXACT_EF}
SEARCH = "exact"  # what `vectors.json` records of an index whose collections search so


def searched_exactly(collection: Any) -> Any:
    """`collection` with HNSW's ef_search, raised if an older index was made with less; a
    writer's step (Chroma reads it when it loads the collection, in the next process)."""
    hnsw = (collection.configuration or {}).get("hnsw") or {}
    if int(hnsw.get("ef_search") or 0) < EXACT_EF:
        collection.modify(configuration={"hnsw": {"ef_search": EXACT_EF}})
    return collection


def write_new_or_changed(
    collection: Any,
    ids: list[str],
    embeddings: Any,
    metadatas: list[dict[str, Any]],
    stored: Mapping[str, str],
) -> None:
    """`add` the records whose id is not `stored`, `upsert` the others: an upsert looks each
    id up first, which made a first ingest's paper writes 30% slower (2,123: 4.6 s, 3.5 s)."""
    for wanted in (False, True):
        rows = [i for i, pid in enumerate(ids) if (pid in stored) == wanted]
        if not rows:
            continue
        write = collection.upsert if wanted else collection.add
        write(
            ids=[ids[i] for i in rows],
            embeddings=embeddings[rows],
            metadatas=[metadatas[i] for i in rows],
        )


def make_client(settings: Settings, create: bool = False) -> Any:
    """A Chroma client: on disk under store.index_dir, or a server (store.mode = 'http')."""
    chromadb = import_chromadb()

    store = settings.store
    chroma_settings = chromadb.Settings(anonymized_telemetry=False, allow_reset=True)
    if store.mode == "http":
        try:
            client = chromadb.HttpClient(
                host=store.host,
                port=store.port,
                ssl=store.ssl,
                headers=server_headers(settings),
                settings=chroma_settings,
                tenant=store.tenant,
                database=store.database,
            )
            client.heartbeat()
            return client
        except StoreError:
            raise
        except Exception as e:
            if is_auth_error(e):
                raise StoreError(
                    f"the Chroma server at {server_url(settings)} refused the credentials "
                    f"({reason(e)})",
                    code="store_refused",
                    hint="chroma_credentials",
                    hint_args={"token": store.auth_token_env, "headers": store.headers_env},
                ) from None
            raise StoreError(
                f"cannot reach the Chroma server at {server_url(settings)} ({reason(e)})",
                code="store_unreachable",
                hint="start_chroma",
            ) from None
    path = store.index_dir / "chroma"
    check_not_a_file(store.index_dir)
    if not create and not (path / "chroma.sqlite3").exists():
        raise IndexMissingError(
            f"no index at {store.index_dir}",
            hint="build_index_at",
            hint_args={"index": store.index_dir},
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.R_OK | os.X_OK):
            raise PermissionError(f"permission denied: {path}")
        if not _writable(path):
            if create:
                raise StoreError(
                    f"the index at {store.index_dir} is read-only",
                    code="read_only",
                    hint="read_only_index",
                )
            # Chroma writes to its database even to read it; a private copy is searched.
            path = _read_only_copy(path)
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings)
    except StoreError:
        raise
    except Exception as e:
        raise StoreError(
            f"cannot open the index at {store.index_dir} ({reason(e)})", hint="check_or_rebuild"
        ) from None


def reopen_client(settings: Settings, client: Any) -> Any:
    """A fresh embedded client on the same folder, for a process that saw another one write.

    Chroma's embedded client keeps one system per folder and process (SharedSystemClient), and
    that system caches the HNSW segments it loaded: after `rag ingest` in another process adds
    papers, reads by id of the new ones fail ("Error executing plan: Internal error: Error
    finding id") until the process ends. The cached system is dropped from the cache, not
    stopped (clients still holding it keep working), so the next client loads the folder anew.
    A server (store.mode = 'http') has no such cache: the client is kept.
    """
    if settings.store.mode == "http":
        return client
    chromadb = import_chromadb()
    forget_system(str(getattr(client, "_identifier", "")))
    try:
        return chromadb.PersistentClient(
            path=client.get_settings().persist_directory, settings=client.get_settings()
        )
    except Exception as e:
        raise store_error(settings, e) from None


def forget_system(identifier: str) -> None:
    """Drop Chroma's cached system of a folder (its path is the identifier), so the next
    client on it loads the folder anew (also after a client failed to open it)."""
    import_chromadb()
    from chromadb.api.shared_system_client import SharedSystemClient

    with SharedSystemClient._refcount_lock:
        SharedSystemClient._identifier_to_system.pop(identifier, None)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)


def import_chromadb() -> Any:
    """chromadb, imported without `overrides` checking each overriding method's signature.

    chromadb marks about 160 methods `@override`, and the `overrides` library inspects frames
    and compares signatures for each when the class is created: a fifth of every cold
    command's time (cProfile of `rag search`), for a check that concerns chromadb's own code.
    During the import only, the decorator just marks the method, as `EnforceOverrides` expects.
    """
    import sys

    if "chromadb" in sys.modules:
        return sys.modules["chromadb"]
    import overrides

    def mark(method: Any = None, **_: Any) -> Any:
        def marked(function: Any) -> Any:
            function.__override__ = True
            return function

        return marked if method is None else marked(method)

    saved = overrides.override, overrides.overrides
    overrides.override = overrides.overrides = mark
    try:
        import chromadb
    finally:
        overrides.override, overrides.overrides = saved
    return chromadb


def _writable(path: Path) -> bool:
    """Whether Chroma can write its folder and database (a read-only mount says no, even to
    root)."""
    database = path / "chroma.sqlite3"
    return os.access(path, os.W_OK) and (not database.exists() or os.access(database, os.W_OK))


def _read_only_copy(path: Path) -> Path:
    """A private, writable copy of a read-only Chroma folder, removed when the process ends."""
    import atexit
    import shutil
    import tempfile

    copy = Path(tempfile.mkdtemp(prefix="rag-read-only-index-")) / "chroma"
    atexit.register(shutil.rmtree, copy.parent, ignore_errors=True)
    try:
        shutil.copytree(path, copy)
    except OSError as e:
        raise StoreError(
            f"the index at {path.parent} is read-only and cannot be copied to read it "
            f"({reason(e)})",
            code="read_only",
            hint="read_only_copy",
            hint_args={"temp": tempfile.gettempdir()},
        ) from None
    return copy


def check_not_a_file(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"{folder} is a file, not a folder", hint="not_a_folder")


def server_url(settings: Settings) -> str:
    scheme = "https" if settings.store.ssl else "http"
    return f"{scheme}://{settings.store.host}:{settings.store.port}"


def server_headers(settings: Settings) -> dict[str, str]:
    """Auth for the Chroma server, from the environment only (never from a file)."""
    from rag.common.redact import check_header

    headers: dict[str, str] = {}
    raw = os.environ.get(settings.store.headers_env)
    if raw:
        try:
            headers.update({str(k): str(v) for k, v in json.loads(raw).items()})
        except (ValueError, AttributeError):
            raise StoreError(f"{settings.store.headers_env} must be a JSON object") from None
    try:
        for name, value in headers.items():
            check_header(settings.store.headers_env, name, value)
        token = os.environ.get(settings.store.auth_token_env)
        if token:
            check_header(settings.store.auth_token_env, "Authorization", token)
            headers["Authorization"] = f"Bearer {token}"
    except ValueError as e:
        raise StoreError(str(e)) from None
    return headers


def describe_store(settings: Settings) -> str:
    """The store named for a message: the server's URL or the index folder."""
    if settings.store.mode == "http":
        return f"the Chroma server at {server_url(settings)}"
    return str(settings.store.index_dir)


def store_error(settings: Settings, error: Exception) -> StoreError:
    """A failed read or write of an open store, as a message that says what to check."""
    if settings.store.mode == "http":
        return StoreError(
            f"the Chroma server at {server_url(settings)} failed ({reason(error)})",
            code="store_unreachable",
            hint="check_chroma",
        )
    return StoreError(f"the index at {describe_store(settings)} failed: {reason(error)}")


def reason(error: Exception) -> str:
    """The first line of an error, short enough for a one-line message."""
    return (str(error).splitlines() or [type(error).__name__])[0][:200] or type(error).__name__


def is_not_found(error: Exception) -> bool:
    """A collection (or tenant, database) that does not exist."""
    import_chromadb()
    from chromadb.errors import NotFoundError

    if isinstance(error, NotFoundError):
        return True
    return _says(error, "notfound", "does not exist", "not found")


def is_auth_error(error: Exception) -> bool:
    """The server refused our credentials.

    Chroma's own error types decide. A reply that is not Chroma's (a proxy's) reaches us as a
    bare `Exception` with the body as its text; only words decide then, never a bare number,
    which would also match a port (4010, 8403) or an address in a "connection refused" line.
    """
    import_chromadb()
    from chromadb.errors import AuthorizationError, ChromaAuthError, ChromaError

    if isinstance(error, AuthorizationError | ChromaAuthError):
        return True
    if isinstance(error, ChromaError) or is_connection_error(error):
        return False
    return _says(error, "unauthorized", "forbidden", "authenticat", "authorization required")


def is_connection_error(error: Exception) -> bool:
    """The server could not be reached, or stopped answering."""
    import httpx

    if isinstance(error, httpx.TransportError | ConnectionError | TimeoutError):
        return True
    return _says(error, "connect", "timeout", "timed out", "refused", "unreachable")


def _says(error: Exception, *words: str) -> bool:
    text = f"{type(error).__name__} {error}".lower()
    return any(w in text for w in words)
