"""Reading the files beside the code and the index, which may be truncated, garbage or hostile.

    data = read_json(path, max_bytes=64 << 20, gz=True)   # or a SideFileError saying why
    arrays = read_npz(path, {"key": 1 << 16, "vectors": 256 << 20})

Shipped data (vectors, chunk plans, the topic map) and caches (BM25, names, the map, the
fetch's progress) are read through here: a regular file only (a FIFO or a symlink to
/dev/zero is refused before reading), at most `max_bytes` read, gzip and zip members inflated
only up to their bound, JSON nesting bounded (a RecursionError is a bad file, not a crash),
an .npz member's declared shape checked against its bytes before an array is made, and no
pickles. Every failure is a `SideFileError` with a one-line reason, so a caller recomputes
with a warning or refuses with one line; `warn` prints such a warning once per process.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import sys
import threading
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import RagError


class SideFileError(RagError, ValueError):
    """A side file that cannot be used; the message says why (one line)."""


def read_bytes(path: Path, max_bytes: int) -> bytes:
    """The whole file, when it is a regular file of at most `max_bytes`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise SideFileError(f"{path}: {e.strerror or e}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SideFileError(f"{path}: not a regular file")
        if info.st_size > max_bytes:
            raise SideFileError(f"{path}: {info.st_size:,} bytes, more than {max_bytes:,}")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise SideFileError(f"{path}: more than {max_bytes:,} bytes")
    return data


def gunzip(data: bytes, max_bytes: int, where: object = "") -> bytes:
    """`data` (one gzip member) inflated, at most `max_bytes` of it."""
    inflate = zlib.decompressobj(31)
    try:
        out = inflate.decompress(data, max_bytes + 1)
    except zlib.error as e:
        raise SideFileError(f"{where}: not gzip ({e})") from None
    if len(out) > max_bytes or inflate.unconsumed_tail:
        raise SideFileError(f"{where}: inflates to more than {max_bytes:,} bytes")
    if not inflate.eof:
        raise SideFileError(f"{where}: a truncated gzip file")
    return out


def parse_json(text: str | bytes, where: object = "") -> Any:
    """JSON, with too deep a nesting and bad UTF-8 errors like any other bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise SideFileError(f"{where}: JSON nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        raise SideFileError(f"{where}: not JSON ({str(e).splitlines()[0][:120]})") from None


def read_json(path: Path, max_bytes: int, gz: bool = False) -> Any:
    """The JSON value of `path` (gzip-compressed if `gz`), within `max_bytes` read and inflated."""
    data = read_bytes(path, max_bytes)
    return parse_json(gunzip(data, max_bytes, path) if gz else data, path)


def without_surrogates(text: str) -> str:
    """Lone surrogates ("\\ud800", valid in JSON) as U+FFFD: no UTF-8 output can carry them."""
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(value: Any) -> bool:
    """Whether a string in `value` (nested lists and dicts) holds a lone surrogate ("\\ud800"),
    which JSON allows and no UTF-8 output can carry."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(has_surrogates(k) or has_surrogates(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_surrogates(v) for v in value)
    return False


def read_npz(
    path: Path, members: dict[str, int], data: bytes | None = None
) -> dict[str, np.ndarray]:
    """The named arrays of an .npz file, each within its byte bound; no pickles, no member
    inflated past its declared size, no array whose header promises more than its bytes."""
    if data is None:
        data = read_bytes(path, sum(members.values()) + (1 << 20))
    arrays = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for name, limit in members.items():
                try:
                    info = archive.getinfo(f"{name}.npy")
                except KeyError:
                    raise SideFileError(f"{path}: no {name!r} array") from None
                if info.file_size > limit:
                    raise SideFileError(
                        f"{path}: {name!r} inflates to {info.file_size:,} bytes, "
                        f"more than {limit:,}"
                    )
                with archive.open(info) as member:
                    raw = member.read(limit + 1)
                arrays[name] = _array(raw, f"{path}: {name!r}")
    except SideFileError:
        raise
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        ValueError,
        NotImplementedError,
    ) as e:
        raise SideFileError(f"{path}: not a readable .npz file ({type(e).__name__})") from None
    return arrays


def _array(raw: bytes, where: str) -> np.ndarray:
    f = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(f)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read_header(f)
    except (ValueError, SyntaxError, TypeError) as e:
        raise SideFileError(f"{where}: not an array ({e})") from None
    if dtype.hasobject or fortran:
        raise SideFileError(f"{where}: an array of objects, or in Fortran order")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    body = raw[f.tell() :]
    if count * dtype.itemsize != len(body):
        raise SideFileError(
            f"{where}: its header says {shape} ({count * dtype.itemsize:,} bytes), "
            f"the file holds {len(body):,}"
        )
    return np.frombuffer(body, dtype=dtype).reshape(shape).copy()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_warned: set[str] = set()
_warn_lock = threading.Lock()


def warn(message: str) -> None:
    """Print `warning: message` to stderr, once per process for the same message."""
    with _warn_lock:
        if message in _warned:
            return
        _warned.add(message)
    print(f"warning: {' '.join(message.split())}", file=sys.stderr)
