"""A 2-D topic map of the indexed papers: a t-SNE layout of the paper vectors, k-means topics
on that layout labelled by c-TF-IDF (`rag.explore.labels`), cached beside the index once per
index generation.

    topic_map = load_topic_map(index, progress=lambda stage, share: ...)
    topic_map.as_json()   # the `rag map --json` object

The layout method was chosen by measurement (bench/topic_map.py: openTSNE against UMAP, both
with a fixed seed, trustworthiness at k = 10 and time); the map is recomputed only when the
index generation changes, i.e. when an ingest added or changed papers.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rag.common.atomic import atomic_write
from rag.common.similarity import unit_rows
from rag.explore.labels import distinct_labels, topic_terms
from rag.index.vectors import PaperVectors, read_paper_vectors
from rag.retrieval.calibration import MINILM, Calibration, calibration_for

if TYPE_CHECKING:
    from rag.index.papers import PaperIndex
    from rag.settings import Settings

Method = Literal["tsne", "umap"]
Progress = Callable[[str, float], None]  # (what is being done, share of the whole done 0..1)

SEED = 20250424  # ICLR 2025 opened on April 24
FORMAT = 2  # 2: topics are clusters of the layout
MAX_TOPICS = 60


@dataclass(frozen=True)
class Topic:
    id: int
    label: str
    size: int
    terms: tuple[str, ...] = ()


@dataclass
class TopicMap:
    """One point per paper (`paper_ids[i]` at `xy[i]`, in topic `topics[i]`) and the topics."""

    paper_ids: list[str]
    xy: np.ndarray  # (n, 2) float32, scaled to [-1, 1] on the longer side
    topics: np.ndarray  # (n,) int
    topic_list: list[Topic]
    generation: str = ""
    method: str = "tsne"
    seconds: float = 0.0
    _position: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._position = {pid: i for i, pid in enumerate(self.paper_ids)}

    def __len__(self) -> int:
        return len(self.paper_ids)

    def position(self, paper_id: str) -> int | None:
        return self._position.get(paper_id)

    def topic_of(self, paper_id: str) -> Topic | None:
        i = self._position.get(paper_id)
        return None if i is None else self.topic_list[int(self.topics[i])]

    def as_json(self) -> dict[str, Any]:
        """The `rag map --json` object."""
        return {
            "papers": [
                {
                    "paper_id": pid,
                    "x": round(float(x), 5),
                    "y": round(float(y), 5),
                    "topic": int(t),
                }
                for pid, (x, y), t in zip(self.paper_ids, self.xy, self.topics, strict=True)
            ],
            "topics": [{"id": t.id, "label": t.label, "size": t.size} for t in self.topic_list],
        }

    def to_file(self) -> dict[str, Any]:
        return self.as_json() | {
            "format": FORMAT,
            "generation": self.generation,
            "method": self.method,
            "seconds": round(self.seconds, 2),
            "topic_terms": [list(t.terms) for t in self.topic_list],
        }

    @classmethod
    def from_file(cls, data: Any) -> TopicMap:
        """The map a file holds (the cache, the shipped map); a SideFileError (a ValueError)
        when it is not one: every topic id a paper has must name a topic of the list."""
        from rag.common.side_files import SideFileError

        try:
            papers, topics = data["papers"], data["topics"]
            terms = data.get("topic_terms") or [[] for _ in topics]
            topic_list = [
                Topic(int(t["id"]), str(t["label"]), int(t["size"]), tuple(map(str, ts)))
                for t, ts in zip(topics, terms, strict=True)
            ]
            paper_ids = [str(p["paper_id"]) for p in papers]
            xy = np.array([[p["x"], p["y"]] for p in papers], dtype=np.float32).reshape(-1, 2)
            ids = np.array([p["topic"] for p in papers], dtype=np.int64)
            if any(type(p["topic"]) is not int for p in papers):
                raise ValueError("a topic id that is not an integer")
            generation = str(data.get("generation", ""))
            method, seconds = str(data.get("method", "")), float(data.get("seconds", 0.0))
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
            raise SideFileError(f"not a topic map ({type(e).__name__}: {e})"[:200]) from None
        if [t.id for t in topic_list] != list(range(len(topic_list))):
            raise SideFileError("not a topic map: topics not numbered 0, 1, 2, ...")
        if len(ids) and (ids.min() < 0 or ids.max() >= len(topic_list)):
            raise SideFileError(
                f"not a topic map: a paper in a topic outside 0..{len(topic_list) - 1}"
            )
        if not np.isfinite(xy).all() or len(set(paper_ids)) != len(paper_ids):
            raise SideFileError("not a topic map: a point that is not finite, or a paper twice")
        return cls(paper_ids, xy, ids, topic_list, generation, method, seconds)


# Computing ----------------------------------------------------------------------------------


def compute_topic_map(
    paper_ids: Sequence[str],
    vectors: np.ndarray,
    texts: Sequence[str],
    *,
    method: Method = "tsne",
    n_topics: int | None = None,
    seed: int = SEED,
    progress: Progress | None = None,
    calibration: Calibration = MINILM,
) -> TopicMap:
    """Layout, topics and labels for papers with these unit `vectors` and title+abstract `texts`.

    `calibration` gives the weight of the layout beside the vectors in clustering topics.
    """
    started = time.perf_counter()
    report = progress or (lambda stage, share: None)
    vectors = unit_rows(np.asarray(vectors, dtype=np.float32))
    n = len(paper_ids)
    if not (len(vectors) == len(texts) == n):
        raise ValueError(f"{n} ids, {len(vectors)} vectors and {len(texts)} texts: must match")
    report("laying out the map", 0.0)
    xy = layout(vectors, method, seed, lambda share: report("laying out the map", 0.85 * share))
    report("clustering topics", 0.85)
    features = np.hstack([vectors, calibration.layout_weight * xy])
    topics = cluster_topics(features, n_topics or default_topic_count(n), seed)
    report("labelling topics", 0.9)
    labels = topic_terms(texts, topics)
    topic_list = [
        Topic(t, label, int((topics == t).sum()), terms)
        for t, (label, terms) in enumerate(distinct_labels(labels))
    ]
    report("done", 1.0)
    return TopicMap(
        list(paper_ids),
        xy,
        topics,
        topic_list,
        method=method,
        seconds=time.perf_counter() - started,
    )


def default_topic_count(n: int) -> int:
    """sqrt(n / 2), at most 60: 33 topics for the 2,143 papers, 4 for the 38 seeds."""
    if n < 4:
        return 1
    return max(2, min(MAX_TOPICS, round(math.sqrt(n / 2))))


def cluster_topics(points: np.ndarray, k: int, seed: int = SEED) -> np.ndarray:
    """k-means, topics numbered by size (topic 0 is the largest).

    `compute_topic_map` clusters the unit vectors with the layout beside them (weighted by
    Calibration.layout_weight): topics become regions of the map, and agree better with the
    vectors too.
    On the 2,143 papers a paper's nearest paper by vector shares its topic 82% of the time
    (68% when clustering the vectors alone, 85% the layout alone), 87% of its 10 nearest
    points on the map do (60%, 88%), and the labels' terms occur in at least 44% of each
    topic's papers (median 79%; the layout alone: 35%, 73%).
    """
    from sklearn.cluster import KMeans

    n = len(points)
    k = max(1, min(k, n))
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    labels = KMeans(n_clusters=k, n_init=1, random_state=seed).fit_predict(points)
    sizes = np.bincount(labels, minlength=k)
    order = sorted(range(k), key=lambda t: (-sizes[t], t))  # topic 0 is the largest
    rename = np.empty(k, dtype=np.int64)
    rename[order] = np.arange(k)
    return rename[labels]


def layout(
    vectors: np.ndarray,
    method: Method = "tsne",
    seed: int = SEED,
    progress: Callable[[float], None] | None = None,
) -> np.ndarray:
    """2-D coordinates for the vectors (cosine neighbourhoods kept), scaled into [-1, 1]."""
    n = len(vectors)
    if n < 5:  # too few points for a neighbour graph: a line is honest enough
        xy = np.column_stack([np.linspace(-1, 1, n), np.zeros(n)]) if n > 1 else np.zeros((n, 2))
        return xy.astype(np.float32)
    if method == "tsne":
        xy = _tsne(vectors, seed, progress)
    elif method == "umap":
        xy = _umap(vectors, seed)
    else:
        raise ValueError(f"unknown layout method {method!r}: use 'tsne' or 'umap'")
    xy = xy - xy.mean(axis=0)
    scale = float(np.abs(xy).max()) or 1.0
    return (xy / scale).astype(np.float32)


def _tsne(vectors: np.ndarray, seed: int, progress: Callable[[float], None] | None) -> np.ndarray:
    from openTSNE import TSNE

    # Half openTSNE's default iterations (250 + 500): trustworthiness at k = 10 is the same
    # (0.95 on the 2,143 papers) in half the time (bench/topic_map.py).
    early, main = 125, 250
    total = early + main
    done = [0]

    def tick(iteration: int, error: float, embedding: Any) -> bool:
        done[0] += 25
        if progress:
            progress(min(done[0] / total, 1.0))
        return False

    tsne = TSNE(
        n_components=2,
        perplexity=min(30.0, max(2.0, (len(vectors) - 1) / 3)),
        metric="cosine",
        n_jobs=min(2, os.cpu_count() or 1),
        random_state=seed,
        callbacks=tick,
        callbacks_every_iters=25,
        early_exaggeration_iter=early,
        n_iter=main,
        verbose=False,
    )
    return np.asarray(tsne.fit(vectors), dtype=np.float64)


def _umap(vectors: np.ndarray, seed: int) -> np.ndarray:
    try:
        import umap
    except ImportError:
        raise ValueError("the UMAP layout needs `pip install umap-learn`") from None
    reducer = umap.UMAP(
        n_components=2,
        n_neighbors=min(15, len(vectors) - 1),
        min_dist=0.1,
        metric="cosine",
        random_state=seed,
    )
    return np.asarray(reducer.fit_transform(vectors), dtype=np.float64)


def trustworthiness(vectors: np.ndarray, xy: np.ndarray, k: int = 10) -> float:
    """scikit-learn's trustworthiness of the layout against the cosine neighbourhoods."""
    from sklearn.manifold import trustworthiness as score

    return float(score(unit_rows(vectors), xy, n_neighbors=k, metric="cosine"))


# The corpus and the cache ----------------------------------------------------------------


def map_path(settings: Settings) -> Path:
    """The cached map beside the index; per server, like the BM25 cache."""
    from rag.index.bm25 import keyword_dir

    folder = keyword_dir(settings)
    return folder.with_name(folder.name.replace("keyword", "topicmap", 1) + ".json")


MAX_MAP_BYTES = 256 << 20  # a cached map (2,123 papers: 0.3 MB)


def read_cached_map(path: Path, generation: str) -> TopicMap | None:
    """The cached map if it belongs to `generation` and is a valid map, else None."""
    from rag.common.side_files import SideFileError, read_json

    if not path.exists():
        return None
    try:
        data = read_json(path, MAX_MAP_BYTES)
        if not isinstance(data, dict):
            return None
        if data.get("format") != FORMAT or data.get("generation") != generation:
            return None
        return TopicMap.from_file(data)
    except SideFileError:
        return None


def write_cached_map(path: Path, topic_map: TopicMap) -> None:
    """Write beside, then rename, so a reader never sees half a file."""
    atomic_write(path, json.dumps(topic_map.to_file(), ensure_ascii=False))


_compute_lock = threading.Lock()  # sessions of one UI process compute a map once, not each


def load_topic_map(
    index: PaperIndex,
    *,
    progress: Progress | None = None,
    method: Method = "tsne",
    corpus: PaperVectors | None = None,
) -> TopicMap:
    """The map of the index as it is now: from the cache, or computed and cached."""
    generation = index.current_generation()
    path = map_path(index.settings)
    cached = read_cached_map(path, generation)
    # A cache of another index (copied, or rewritten) holds another number of papers.
    if cached is not None and len(cached) == index.paper_count():
        return cached
    with _compute_lock:
        cached = read_cached_map(path, generation)
        if cached is not None and len(cached) == index.paper_count():
            return cached
        report = progress or (lambda stage, share: None)
        report("reading the paper vectors", 0.0)
        if corpus is None or corpus.generation != generation:
            corpus = read_paper_vectors(index, generation)
        calibration = calibration_for(index.settings)
        topic_map = None
        if index.settings.embedding.bundled_vectors:  # the bundled corpus's map, shipped
            from rag.explore.shipped_map import map_key, read_shipped_map

            key = map_key(corpus, method, SEED, calibration.layout_weight)
            topic_map = read_shipped_map(key)
        if topic_map is None:
            texts = [f"{p.title}\n{p.abstract}" for p in corpus.papers]
            topic_map = compute_topic_map(
                corpus.ids,
                corpus.vectors,
                texts,
                method=method,
                progress=report,
                calibration=calibration,
            )
        topic_map.generation = generation
        try:
            write_cached_map(path, topic_map)
        except OSError:
            pass  # a read-only index folder: the map still works, it is just not kept
        return topic_map
