"""rag.common.similarity: the one row normalisation, the one MMR (retriever, offline answer)
and the abbreviations a text defines."""

from __future__ import annotations

import numpy as np

from rag.common.similarity import abbreviations, mmr, unit_rows


def test_unit_rows_have_length_one_zero_rows_stay_zero_and_the_dtype_is_kept() -> None:
    vectors = np.array([[3.0, 4.0], [0.0, 0.0], [0.0, -2.0]], dtype=np.float32)
    rows = unit_rows(vectors)
    assert rows.dtype == np.float32
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0], [0.0, -1.0]])
    assert unit_rows(vectors.astype(np.float64)).dtype == np.float64


def test_mmr_trades_relevance_for_diversity() -> None:
    # Rows 0 and 1 are near-duplicates; row 2 is less relevant but different.
    matrix = unit_rows(np.array([[1.0, 0.0], [0.99, 0.05], [0.0, 1.0]], dtype=np.float32))
    relevance = np.array([1.0, 0.95, 0.6])
    assert mmr(matrix, relevance, k=2, lam=0.7) == [0, 2]
    assert mmr(matrix, relevance, k=2, lam=1.0) == [0, 1]  # relevance alone
    assert mmr(matrix, relevance, k=3, lam=0.7, first=2) == [2, 0, 1]
    assert mmr(matrix, relevance, k=9, lam=0.7) == [0, 2, 1]  # no more rows than there are


def test_mmr_skips_what_is_excluded_and_stops_when_nothing_is_left() -> None:
    matrix = np.eye(4, dtype=np.float32)
    relevance = np.array([0.9, 0.8, 0.7, 0.6])
    group = np.array([1, 1, 2, 2])

    def one_per_group(chosen: list[int]) -> np.ndarray:
        return np.isin(group, group[chosen])

    assert mmr(matrix, relevance, k=4, lam=0.7, excluded=one_per_group) == [0, 2]


def test_abbreviations_by_initials_and_in_a_question_by_letters_inside_words() -> None:
    text = "Masked diffusion models (MDMs) and sparse autoencoders (SAEs) with LoRA (XYZ)."
    assert abbreviations(text) == {
        "MDMs": "Masked diffusion models",
        "MDM": "Masked diffusion model",
    }
    loose = abbreviations(text, within_words=True)
    assert loose["SAEs"] == "sparse autoencoders" and loose["MDMs"] == "Masked diffusion models"
    assert "XYZ" not in loose
    # the initials come first, so the shortest phrase whose letters fit does not win
    pca = "We use Probabilistic Principal Component Analysis (PPCA) here."
    assert abbreviations(pca, within_words=True)["PPCA"].startswith("Probabilistic")
    # one word alone is no phrase for letters inside it ("optimization (OPT)")
    assert abbreviations("by optimization (OPT).", within_words=True) == {}
