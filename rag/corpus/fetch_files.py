"""The files of `rag fetch`: `OUT`, `OUT.part` and `OUT.progress.json`, never through a link.

`OUT.part` receives the pages as they arrive and `OUT.progress.json` records how far the fetch
got; `OUT` appears only when the fetch is complete, by renaming `.part` over it. Every write
goes through rag.common.atomic, and the progress file is read as untrusted input: a value of
the wrong type or range, or a `.part` that is not the fetch's own file, starts the fetch over.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from rag.common.atomic import UnsafeWriteError, atomic_write, check_target, create_new, open_own
from rag.common.side_files import SideFileError, parse_json, read_json
from rag.errors import FetchError

# What one fetch writes at most (ICLR 2025's 11,700 submissions: about 40 MB).
MAX_FETCH_BYTES = 1 << 30
MAX_PROGRESS_BYTES = 1 << 16


def part_path(out: Path) -> Path:
    return out.with_name(out.name + ".part")


def progress_path(out: Path) -> Path:
    return out.with_name(out.name + ".progress.json")


def check_writable(out: Path) -> None:
    """Refuse an `out` the fetch cannot write or must not replace, before the first request.

    `out` itself is never created or unlinked here: it appears only at the end, by renaming
    `OUT.part` over it, so it must be absent or a regular file, not a symlink (to anything:
    `/proc/self/fd/1` resolves to the caller's redirect), and not under /dev, /proc or /sys
    (`--out /dev/stdout` would replace the system's). The side files the fetch writes,
    replaces and unlinks (`.part`, `.progress.json`) must be absent or regular too; a `.part`
    with another name (a hard link) is replaced, never written into (rag.common.atomic).
    """
    if out.is_dir() and not out.is_symlink():
        raise FetchError(f"--out {out}: is a folder; give a file name, e.g. {out}/papers.jsonl")
    refuse_special(out, out)
    if not out.parent.is_dir():
        raise FetchError(f"--out {out}: folder {out.parent} does not exist")
    for side in (part_path(out), progress_path(out)):
        refuse_special(out, side)
    # Mode bits, not only open(): root may write anything, but a read-only mark is a request.
    for path, what in ((out, "file"), (out.parent, "folder")):
        if path.exists() and not path.stat().st_mode & 0o200:
            raise FetchError(f"--out {out}: the {what} {path} is read-only")
    probe = out.with_name(f".{out.name}.{os.getpid()}.probe")
    try:
        if out.exists():
            os.close(os.open(out, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK))
        os.close(create_new(probe))
        probe.unlink()
    except OSError as e:
        raise FetchError(f"--out {out}: cannot write in {out.parent}: {e.strerror}") from None


def refuse_special(out: Path, path: Path) -> None:
    """A `path` that exists must be a regular file, not a link; none under /dev or /proc."""
    try:
        check_target(path, "--out" if path == out else f"--out {out}: {path}")
    except UnsafeWriteError as e:
        raise FetchError(str(e).replace("--out: ", f"--out {out}: ", 1)) from None


@contextmanager
def own_part(out: Path, part: Path, append: bool = False) -> Iterator[BinaryIO]:
    """`OUT.part`, opened only while it is the fetch's own regular file (rag.common.atomic)."""
    try:
        with open_own(part, append=append) as f:
            yield f
    except UnsafeWriteError as e:
        raise FetchError(f"--out {out}: {e}; re-run the same command to start over") from None


def resume_state(
    state_path: Path, part: Path, query: dict[str, Any]
) -> tuple[dict[str, Any], set[str]]:
    """The recorded progress of this same query and the ids written so far, else a fresh start.

    The progress file is untrusted too: a `bytes` past the end of `.part` (which would make a
    sparse file of that size) or past MAX_FETCH_BYTES, a `.part` that is not the fetch's own
    file (a hard link is never truncated), or a line that is not a record start over.
    """
    fresh = {**query, "offset": 0, "bytes": 0, "count": None, "skipped": 0, "excluded": 0}
    try:
        state = read_json(state_path, MAX_PROGRESS_BYTES)
        numbers = ("offset", "bytes", "skipped", "excluded")
        if (
            isinstance(state, dict)
            and all(state.get(k) == v for k, v in query.items())
            and all(type(state.get(k)) is int and state[k] >= 0 for k in numbers)
            and (state.get("count") is None or type(state.get("count")) is int)
            and state["bytes"] <= MAX_FETCH_BYTES
        ):
            with open_own(part) as f:
                if os.fstat(f.fileno()).st_size < state["bytes"]:
                    raise SideFileError("the progress file says more than .part holds")
                # A line half-written when the process died is cut off; its page comes again.
                f.truncate(state["bytes"])
                f.seek(0)
                seen = set()
                for line in f:
                    if line.strip():
                        record = parse_json(line)
                        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                            raise SideFileError("a line of .part that is not a paper")
                        seen.add(record["id"])
            return {**fresh, **state}, seen
    except (OSError, SideFileError):
        pass
    atomic_write(part, b"")  # a new file of our own, in place of whatever was there
    return fresh, set()


def write_json(path: Path, value: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(value))
