"""Every indexed paper with its unit paper vector: what the map and related papers read."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rag.common.similarity import unit_rows
from rag.index.papers import PaperIndex
from rag.types import Paper


@dataclass
class PaperVectors:
    """Every indexed paper with its unit paper vector, read once per index generation."""

    papers: list[Paper]
    vectors: np.ndarray
    generation: str = ""
    _position: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._position = {p.id: i for i, p in enumerate(self.papers)}

    @property
    def ids(self) -> list[str]:
        return [p.id for p in self.papers]

    def get(self, paper_id: str) -> Paper | None:
        i = self._position.get(paper_id)
        return None if i is None else self.papers[i]

    def position(self, paper_id: str) -> int | None:
        return self._position.get(paper_id)


def read_paper_vectors(index: PaperIndex, generation: str | None = None) -> PaperVectors:
    """The papers with an abstract and their vectors, in a stable order (by paper id).

    Title records (no abstract in the corpus) are left out: a title's vector placed among
    abstracts' would land the paper on the map, and among related papers, by its title's
    words alone; they are found by search, their names and their authors."""
    generation = index.current_generation() if generation is None else generation
    papers = sorted((p for p in index.all_papers() if p.has_abstract), key=lambda p: p.id)
    ids = [p.id for p in papers]
    found: dict[str, np.ndarray] = {}
    for i in range(0, len(ids), 1000):
        found.update(index.paper_vectors(ids[i : i + 1000]))
    dim = len(next(iter(found.values()))) if found else 0
    matrix = np.stack([found[pid] for pid in ids]).astype(np.float32) if ids else np.zeros((0, dim))
    return PaperVectors(papers, unit_rows(matrix), generation)
