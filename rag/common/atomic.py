"""Write a file so that a reader sees the old content or the new, never half of either.

    atomic_write(path, json.dumps(state))        # text (UTF-8) or bytes

The content goes to a hidden file beside `path` (same folder, so same file system; a unique
name, so concurrent writers do not share it), which is then renamed over `path`. If writing
fails, the partial file is removed and the error raised; `path` is untouched.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def atomic_write(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` (str is written as UTF-8) in one rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
