"""Related papers: the nearest papers to a paper by cosine similarity of the paper vectors.

    corpus = read_paper_vectors(index)          # rag.explore.topicmap, once per index generation
    related_papers(corpus, "odjMSBSWRt")        # the 5 nearest, best first

The paper vectors (the mean of a paper's chunk vectors) are all in memory (2,143 x 384 floats
is 3 MB), so a look-up is one matrix-vector product, about a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rag.index.vectors import PaperVectors
from rag.types import Paper

RELATED = 5


@dataclass(frozen=True)
class RelatedPaper:
    paper: Paper
    similarity: float


def related_papers(
    corpus: PaperVectors, paper_id: str, k: int = RELATED, tiers: list[str] | None = None
) -> list[RelatedPaper]:
    """The `k` papers nearest to `paper_id` (itself excluded), optionally only of `tiers`."""
    i = corpus.position(paper_id)
    if i is None or len(corpus.papers) < 2:
        return []
    sims = corpus.vectors @ corpus.vectors[i]
    sims[i] = -np.inf
    if tiers:
        allowed = np.array([p.tier in tiers for p in corpus.papers])
        sims = np.where(allowed, sims, -np.inf)
    k = min(k, len(sims) - 1)
    top = np.argpartition(-sims, k - 1)[:k] if k > 0 else np.array([], dtype=int)
    ranked = sorted(top, key=lambda j: (-sims[j], corpus.papers[j].id))
    return [RelatedPaper(corpus.papers[j], float(sims[j])) for j in ranked if np.isfinite(sims[j])]
