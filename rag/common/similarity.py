"""Vector helpers for cosine similarity: unit-length rows, and maximal marginal relevance.

    matrix = unit_rows(vectors)                     # each row scaled to length 1 (zeros stay 0)
    picked = mmr(matrix, relevance, k=5, lam=0.7)   # indices: relevant, and not alike

The retriever diversifies papers with `mmr`; the offline answerer picks sentences with it,
with its own exclusions (a cap per paper, a margin below the best).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row of `vectors` divided by its length (all-zero rows stay zero); the dtype kept."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def mmr(
    matrix: np.ndarray,
    relevance: np.ndarray,
    k: int,
    lam: float,
    first: int = 0,
    excluded: Callable[[list[int]], np.ndarray] | None = None,
) -> list[int]:
    """Maximal marginal relevance: up to `k` row indices of `matrix` (unit rows), `first` first.

    Each next pick maximises `lam * relevance - (1 - lam) * (its highest similarity to a row
    already picked)`, among rows not picked and not `excluded(picked)` (a boolean mask); the
    picking stops early when no row is left.
    """
    chosen = [first]
    while len(chosen) < k:
        redundancy = (matrix @ matrix[chosen].T).max(axis=1)
        value = lam * relevance - (1 - lam) * redundancy
        value[chosen] = -np.inf
        if excluded is not None:
            value[excluded(chosen)] = -np.inf
        pick = int(value.argmax())
        if not np.isfinite(value[pick]):
            break
        chosen.append(pick)
    return chosen
