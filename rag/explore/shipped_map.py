"""The topic map shipped with the bundled corpus: the first Map view computes nothing.

A map is deterministic for a given set of paper vectors, texts, method and seed, so it is
keyed by a digest of exactly those (the vectors rounded to float16, each paper's content hash,
the layout method, the seed, the map format and the calibration's layout weight). An index
built from the shipped vectors (`rag.index.shipped`) has these paper vectors bit for bit; any
other index (another corpus, model, or `embedding.bundled_vectors = false`) misses the key and
its map is computed as before. `rag vectors build` writes the file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag.index.vectors import PaperVectors
from rag.settings import BUNDLED_CORPUS

if TYPE_CHECKING:
    from rag.explore.topicmap import TopicMap

MAP_FILE = BUNDLED_CORPUS / "topicmap.json.gz"


def map_key(corpus: PaperVectors, method: str, seed: int, layout_weight: float) -> str:
    from rag.explore.topicmap import FORMAT

    digest = hashlib.sha256()
    digest.update(json.dumps([FORMAT, method, seed, float(layout_weight)]).encode())
    for paper in corpus.papers:
        digest.update(f"{paper.id}\0{paper.content_hash}\0".encode())
    digest.update(np.ascontiguousarray(corpus.vectors, dtype=np.float16).tobytes())
    return digest.hexdigest()


MAX_MAP_BYTES = 64 << 20  # read and inflated (the bundled corpus's: 42 kB, 0.3 MB)


def read_shipped_map(key: str, path: Path = MAP_FILE) -> TopicMap | None:
    """The shipped map if it was made for `key`, else None (with a one-line warning when the
    file is damaged: its SHA-256, its gzip or its content)."""
    from rag.common.side_files import SideFileError, gunzip, parse_json, warn
    from rag.explore.topicmap import TopicMap
    from rag.index.shipped_manifest import read_shipped

    if not path.exists():
        return None
    try:
        data = parse_json(gunzip(read_shipped(path, MAX_MAP_BYTES), MAX_MAP_BYTES, path), path)
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        return TopicMap.from_file(data)
    except SideFileError as e:
        problem = str(e) if str(e).startswith(str(path)) else f"{path}: {e}"
        warn(f"{problem}; the map is computed instead (`rag vectors map` rewrites it)")
        return None


def write_shipped_map(topic_map: TopicMap, key: str, path: Path = MAP_FILE) -> None:
    from rag.common.atomic import atomic_write

    data = topic_map.to_file() | {"key": key, "generation": ""}
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    atomic_write(path, gzip.compress(text.encode("utf-8"), mtime=0))
