"""Room to write: a reserve held while an ingest writes, given back if the disk fills up.

Chroma logs each write, then folds the log into its segments, also when the index is next
read. On a full disk the fold fails, and until space is freed the index cannot even be
opened. So an ingest into the embedded store first sets aside `RESERVE_BYTES` (and refuses to
start without them); when a write fails for lack of space, the reserve is freed, Chroma
finishes what it logged, and the index opens with every paper stored before the failure.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from types import TracebackType

from rag.common.atomic import create_new
from rag.errors import StoreError

RESERVE_BYTES = 16 << 20
_FULL = (errno.ENOSPC, errno.EDQUOT)
_FULL_WORDS = ("no space left", "disk is full", "disk full", "quota exceeded")


class SpaceReserve:
    """A file of `RESERVE_BYTES` in `folder` while the block runs."""

    def __init__(self, folder: Path, size: int = RESERVE_BYTES) -> None:
        self.folder = folder
        self.path = folder / ".space-reserve"
        self.size = size

    def __enter__(self) -> SpaceReserve:
        try:
            # A reserve left by a killed ingest, or a link planted in its place, is unlinked
            # (never written through); the new one is created here (rag.common.atomic).
            self.path.unlink(missing_ok=True)
            with os.fdopen(create_new(self.path), "wb") as f:
                os.posix_fallocate(f.fileno(), 0, self.size)
        except OSError as e:
            self.release()
            if e.errno in _FULL:
                free = shutil.disk_usage(self.folder).free
                raise StoreError(
                    f"the disk of {self.folder} has {free / 2**20:.1f} MB free: an ingest "
                    f"needs at least {self.size / 2**20:.0f} MB to write safely",
                    code="disk_full",
                    hint="free_disk",
                ) from None
            raise
        return self

    def release(self) -> None:
        self.path.unlink(missing_ok=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def is_disk_full(error: BaseException, folder: Path) -> bool:
    """Whether `error` (or what caused it) is a full disk, or came when `folder`'s disk was."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _FULL:
            return True
        if any(word in str(seen).lower() for word in _FULL_WORDS):
            return True
        seen = seen.__cause__ or seen.__context__
    try:
        # Chroma's own errors ("Failed to apply logs to the metadata segment") do not say why.
        return shutil.disk_usage(folder).free < 1 << 20
    except OSError:
        return False
