"""The SHA-256 of each file `rag vectors build` ships, checked before the file is used.

    data/iclr2025/SHA256SUMS      # `sha256sum -c SHA256SUMS` checks it too

The shipped vectors, chunk plan and topic map are read at every first ingest and Map view. A
truncated, swapped or edited one (shuffled rows keep every shape and value valid) is caught by
its sum; on a mismatch the caller computes what the file would have given, with a one-line
warning. `rag vectors build` (and `map`, `chunks`) writes the sums after writing the files;
`rag vectors sums` writes them for the files as they are.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag.common.atomic import atomic_write
from rag.common.side_files import SideFileError, read_bytes, sha256
from rag.settings import BUNDLED_CORPUS

SUMS_NAME = "SHA256SUMS"
# What `rag vectors build` writes: the files the sums cover.
SHIPPED = re.compile(r"(vectors-[\w.\-]+\.npz|chunks\.json\.gz|topicmap\.json\.gz)")
_LINE = re.compile(r"([0-9a-f]{64}) [ *](\S+)")


def sums_file(folder: Path = BUNDLED_CORPUS) -> Path:
    return folder / SUMS_NAME


def recorded_sums(folder: Path) -> dict[str, str]:
    """File name -> SHA-256 as the sums file records them (empty when it is missing or bad)."""
    try:
        text = read_bytes(sums_file(folder), 1 << 16).decode("ascii")
    except (SideFileError, UnicodeDecodeError):
        return {}
    found = {}
    for line in text.splitlines():
        m = _LINE.fullmatch(line.strip())
        if m:
            found[m.group(2)] = m.group(1)
    return found


def read_shipped(path: Path, max_bytes: int) -> bytes:
    """The shipped file's bytes, when their SHA-256 is the one recorded; else a SideFileError."""
    data = read_bytes(path, max_bytes)
    expected = recorded_sums(path.parent).get(path.name)
    if expected is None:
        raise SideFileError(f"{path}: no SHA-256 for it in {sums_file(path.parent)}")
    if sha256(data) != expected:
        raise SideFileError(
            f"{path}: its SHA-256 is not the one in {sums_file(path.parent)} "
            "(a changed, truncated or damaged file)"
        )
    return data


def write_sums(folder: Path = BUNDLED_CORPUS) -> Path:
    """Record the SHA-256 of every shipped file now in `folder`."""
    lines = [
        f"{sha256(path.read_bytes())}  {path.name}\n"
        for path in sorted(folder.iterdir())
        if SHIPPED.fullmatch(path.name) and path.is_file() and not path.is_symlink()
    ]
    path = sums_file(folder)
    atomic_write(path, "".join(lines))
    return path
