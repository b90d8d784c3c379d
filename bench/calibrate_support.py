"""Calibrate the support floor: below `Calibration.support_floor` (rag/retrieval/calibration.py)
a citation's claim is "not found in the abstract" and no quote is shown as its support. The
current floor is read from there, and the chosen one printed to put there.

Every claim of data/eval/support_claims.jsonl cites one paper of the bundled corpus. Supported
claims were written from that paper's abstract (near-verbatim, paraphrases, two-sentence
summaries); unsupported ones contradict it, invent results, mix a true part with an invented
one, or are true of another paper. Each is scored as `rag ask` scores an answer sentence,
through `rag.answer.support.best_quotes` with the corpus's IDF. The floor is swept: flagging an
unsupported claim is a hit, so precision / recall / F1 are those of the flag, and "wrongly
flagged" counts supported claims the floor would mark unsupported. As a baseline, measured in
the same run, the same sweep over the cosine similarity to the best sentence alone. The floor
with the best F1 is picked (the midpoint of the gap it falls in), checked on held-out halves
(chosen on odd-numbered claims, scored on even ones, and the reverse), and compared with the
floor that near-verbatim claims alone would give.

    .venv/bin/python -m bench.calibrate_support [--claims FILE] [--index DIR]

IDF is counted over the bundled corpus's papers (title and abstract); with --index, the
index's own keyword index is used, as `rag ask` does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag.answer.support import best_quotes
from rag.corpus.loaders import load_jsonl
from rag.index.bm25 import KeywordIndex
from rag.index.passages import split_sentences
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.calibration import MINILM
from rag.settings import BUNDLED_PAPERS, EVAL_DATA, get_settings, with_overrides
from rag.types import Paper

CLAIMS = EVAL_DATA / "support_claims.jsonl"


@dataclass(frozen=True)
class Scored:
    row: int
    kind: str
    supported: bool
    support: float  # rag.answer.support's support score
    cosine: float  # baseline: cosine to the best abstract sentence, nothing else
    claim: str


@dataclass(frozen=True)
class Point:
    floor: float
    precision: float
    recall: float
    f1: float
    wrongly_flagged: int
    caught: int


def corpus_idf(index_dir: Path | None, papers: Sequence[Paper]) -> Callable[[str], float]:
    if index_dir is None:
        texts = [f"{p.title}\n{p.abstract}" for p in papers]
        ids = [p.id for p in papers]
        return KeywordIndex.build(ids, ids, texts, "bench").idf
    from rag.index.papers import PaperIndex

    settings = with_overrides(get_settings(), {"store": {"index_dir": str(index_dir)}})
    return PaperIndex.open(settings, LocalEmbeddings()).keyword_index().idf


def score(
    rows: list[dict[str, Any]],
    papers: dict[str, Paper],
    embeddings: LocalEmbeddings,
    idf: Callable[[str], float],
) -> list[Scored]:
    scored = []
    for i, row in enumerate(rows):
        paper = papers[row["paper"]]
        quote = best_quotes(f"{row['claim']} [1]", {1: paper}, embeddings, idf=idf)[1]
        sentences = [paper.abstract[s:e] for s, e in split_sentences(paper.abstract)]
        vectors = _normalised(embeddings.embed_documents([row["claim"], *sentences]))
        cosine = float((vectors[1:] @ vectors[0]).max())
        label = row["label"]
        if label not in ("supported", "unsupported"):
            raise SystemExit(f"{CLAIMS.name} row {i + 1}: label {label!r}")
        supported = label == "supported"
        scored.append(Scored(i, row["kind"], supported, quote.support, cosine, row["claim"]))
    return scored


def evaluate(values: np.ndarray, flagged_is_right: np.ndarray, floor: float) -> Point:
    flagged = values < floor
    hits = int((flagged & flagged_is_right).sum())
    wrong = int((flagged & ~flagged_is_right).sum())
    missed = int((~flagged & flagged_is_right).sum())
    precision = hits / (hits + wrong) if hits + wrong else 1.0
    recall = hits / (hits + missed) if hits + missed else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Point(floor, precision, recall, f1, wrong, hits)


def best_floor(values: np.ndarray, unsupported: np.ndarray) -> Point:
    """The floor with the best F1; on a tie, the one that flags fewest supported claims."""
    ordered = np.unique(values)
    gaps = (ordered[:-1] + ordered[1:]) / 2  # midpoints: no claim sits on the floor
    points = [evaluate(values, unsupported, float(f)) for f in gaps]
    return max(points, key=lambda p: (round(p.f1, 6), -p.wrongly_flagged, -p.floor))


def describe(point: Point, supported: int, unsupported: int) -> str:
    return (
        f"floor {point.floor:.3f}: precision {point.precision:.2f}  recall {point.recall:.2f}  "
        f"F1 {point.f1:.3f}  caught {point.caught}/{unsupported} unsupported  "
        f"wrongly flagged {point.wrongly_flagged}/{supported} supported"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=Path, default=CLAIMS)
    parser.add_argument("--index", type=Path, help="use this index's keyword IDF")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.claims.read_text().splitlines() if line.strip()]
    corpus = load_jsonl(BUNDLED_PAPERS)
    papers = {p.id: p for p in corpus}
    missing = sorted({r["paper"] for r in rows} - set(papers))
    if missing:
        raise SystemExit(f"papers not in the bundled corpus: {', '.join(missing)}")
    embeddings = LocalEmbeddings()
    scored = score(rows, papers, embeddings, corpus_idf(args.index, corpus))

    unsupported = np.array([not s.supported for s in scored])
    n_sup, n_unsup = int((~unsupported).sum()), int(unsupported.sum())
    kinds = Counter((s.supported, s.kind) for s in scored)
    print(f"{len(scored)} claims on {len({r['paper'] for r in rows})} papers: {n_sup} supported")
    print("  " + ", ".join(f"{k} {c}" for (ok, k), c in sorted(kinds.items()) if ok))
    print(f"  {n_unsup} unsupported: ")
    print("  " + ", ".join(f"{k} {c}" for (ok, k), c in sorted(kinds.items()) if not ok))
    support = np.array([s.support for s in scored])
    cosine = np.array([s.cosine for s in scored])

    print("\nBaseline, cosine to the best sentence alone:")
    print("  " + describe(best_floor(cosine, unsupported), n_sup, n_unsup))
    chosen = best_floor(support, unsupported)
    print("Support score (rag.answer.support), best F1:")
    print("  " + describe(chosen, n_sup, n_unsup))

    print("\nHeld out (floor chosen on one half, scored on the other):")
    odd = np.array([s.row % 2 == 1 for s in scored])
    for name, train in (("odd -> even", odd), ("even -> odd", ~odd)):
        floor = best_floor(support[train], unsupported[train]).floor
        test = evaluate(support[~train], unsupported[~train], floor)
        held = int((~unsupported[~train]).sum()), int(unsupported[~train].sum())
        print(f"  {name}: " + describe(test, *held))

    print("\nSweep of the support floor:")
    for floor in np.arange(0.70, 0.951, 0.025):
        print("  " + describe(evaluate(support, unsupported, float(floor)), n_sup, n_unsup))

    verbatim = np.array([s.kind == "close" or not s.supported for s in scored])
    strict = best_floor(support[verbatim], unsupported[verbatim])
    paraphrases = np.array([s.supported and s.kind != "close" for s in scored])
    flagged = int((support[paraphrases] < strict.floor).sum())
    print(
        f"\nCalibrated on near-verbatim claims only, the floor would be {strict.floor:.3f}; it "
        f"flags {flagged} of {int(paraphrases.sum())} paraphrases and summaries."
    )

    print(
        f"\nto put in rag/retrieval/calibration.py (Calibration, {MINILM.model}): "
        f"support_floor = {chosen.floor:.3f}"
    )
    SUPPORT_FLOOR = MINILM.support_floor  # noqa: N806
    current = evaluate(support, unsupported, SUPPORT_FLOOR)
    print(f"\ncurrent support_floor = {SUPPORT_FLOOR}:")
    print("  " + describe(current, n_sup, n_unsup))
    print("  by kind (flagged / claims):")
    for (ok, kind), count in sorted(kinds.items()):
        mask = np.array([s.supported == ok and s.kind == kind for s in scored])
        flagged_here = int((support[mask] < SUPPORT_FLOOR).sum())
        print(f"    {'supported' if ok else 'unsupported'} {kind}: {flagged_here} / {count}")
    lowest = sorted((s for s in scored if s.supported), key=lambda s: s.support)[:5]
    print("  the least supported of the supported claims:")
    for s in lowest:
        print(f"    {s.support:.3f} {s.kind}: {s.claim[:100]}")
    wrong = [s for s in scored if (s.support < SUPPORT_FLOOR) == s.supported]
    print("  misjudged:")
    for s in sorted(wrong, key=lambda s: s.support):
        verdict = "flagged" if s.supported else "passed"
        print(f"    {s.support:.3f} {verdict} {s.kind}: {s.claim[:100]}")
    return 0


def _normalised(vectors: list[list[float]]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


if __name__ == "__main__":
    sys.exit(main())
