"""The one way this program writes a file: never through a link, never into a file it did not make.

    atomic_write(path, json.dumps(state))        # text (UTF-8) or bytes, replaced in one rename
    with open_own(path, append=True) as f: ...   # append to a file this program created
    fd = create_new(path)                        # a new file of our own, or an error

Every writer (the fetch's output, `.part` and progress file, the ingest's space reserve, the
shipped vectors, chunk plan and map, the caches, the feedback log) comes through here:

- A new file is made with O_CREAT|O_EXCL|O_NOFOLLOW, so a planted symlink or an existing file
  (another program's, or a hard link to one) is never opened for writing.
- `atomic_write` writes such a file beside `path`, then renames it over `path`: a reader sees
  the old content or the new, never half; a file (or link) that was at `path` is replaced, not
  written into, so a hard link's other names keep their content.
- `open_own` opens an existing file only when it is a regular file with no other name (one
  link), not a symlink: the files this program appends to and then reopens.
- A target that is a symlink, not a regular file, or under /dev, /proc or /sys is refused
  with an `UnsafeWriteError` (one line; an `OSError`, so a best-effort cache writer skips it).
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from rag.errors import RagError

# Where no file of ours belongs: writing there replaces or feeds a device or the kernel.
SYSTEM_FOLDERS = ("/dev", "/proc", "/sys")
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeWriteError(RagError, OSError):
    """A path this program will not write: a symlink, a device, another file's hard link."""


def check_target(path: Path, what: str = "") -> None:
    """Refuse to replace `path` unless it is absent or a regular file (a symlink is refused,
    whatever it points at), outside the system's device and process folders."""
    path = Path(path)
    label = what or str(path)
    for shown in (os.path.abspath(path), os.path.join(os.path.realpath(path.parent), path.name)):
        for folder in SYSTEM_FOLDERS:
            if shown == folder or shown.startswith(folder + os.sep):
                raise UnsafeWriteError(
                    f"{label}: is under {folder}; give the name of a regular file elsewhere"
                )
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeWriteError(
            f"{label}: is a symbolic link; give the name of a new or regular file "
            "(nothing is written through a link)"
        )
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeWriteError(
            f"{label}: exists and is not a regular file (a device, pipe, socket or folder); "
            "give the name of a new or regular file"
        )


def create_new(path: Path, mode: int = 0o666) -> int:
    """A file descriptor of a file created now at `path` (open for writing); an error if
    anything, even a dangling symlink, is already there."""
    return os.open(path, _NEW, mode)


def atomic_write(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` (str is written as UTF-8) in one rename."""
    path = Path(path)
    check_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = create_new(tmp)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_own(path: Path, fd: int, what: str = "") -> os.stat_result:
    """The open file's status, when it is a regular file with no other name; else an error."""
    info = os.fstat(fd)
    label = what or str(path)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeWriteError(f"{label}: is not a regular file; move it away")
    if info.st_nlink != 1:
        raise UnsafeWriteError(
            f"{label}: has {info.st_nlink} names (a hard link to another file); "
            "nothing is written into it: move it away"
        )
    return info


@contextmanager
def open_own(path: Path, append: bool = False, create: bool = False) -> Iterator[BinaryIO]:
    """`path` opened to read and write (`append`: to append), never through a symlink, and only
    when it is a regular file with one link; `create` makes it (O_EXCL) when it is absent."""
    path = Path(path)
    check_target(path)
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    flags |= (os.O_WRONLY | os.O_APPEND) if append else os.O_RDWR
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if not create:
            raise
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:  # made meanwhile by another process of ours
            fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:  # a symlink planted after the check
            raise UnsafeWriteError(
                f"{path}: is a symbolic link; nothing is written through it"
            ) from None
        raise
    try:
        check_own(path, fd)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "ab" if append else "r+b") as f:
        yield f
