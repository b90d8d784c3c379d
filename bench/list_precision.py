"""Precision and recall of offline list answers ("Which papers ...") against gold sets.

    python -m bench.list_precision --index DIR [--questions data/eval/list_questions.jsonl]
    python -m bench.list_precision --index DIR --tiers
    python -m bench.list_precision --index DIR --gold read
    python -m bench.list_precision --index DIR --fit


For each question, at 5 and 10 sources: precision = cited gold papers / cited papers, recall =
cited gold papers / min(|gold|, k); averaged over the questions. The answers are written with
no cut (every paper above the relevance threshold among the k retrieved) and with the
configured judge (rag.answer.judge.listed: `Calibration.list_min_coverage`,
`list_closeness_weight`, `list_lead`, `list_pool`), then with each constant moved.

Each question's gold set is made by a rule over titles and abstracts (`gold_rule`, a few by
hand), which misses papers that say their subject in other words and takes in some that only
mention it. `--gold read` scores against the papers a reader judged relevant instead
(`data/eval/list_relevance.jsonl`: every paper of the question's first 20 and of its rule-made
set, read blind to what the answer cites).

`--tiers` asks each question under a tier filter (Oral, then Spotlight), as "oral papers on
X" does, where its gold set holds papers of that tier; gold is the set's papers of that tier.
It compares the judge that weighs the subject by the papers found without the filter
(`leaders`, as the answer runs) with one that weighs it by the filtered candidates alone.

`--fit` asks how far any rule over the offline judge's signals could go: per candidate of the
20 checked, its relevance, its share of the subject's terms, its subject cosine and the gap to
the best, its rank and whether it clears the threshold; a logistic regression fitted on the tune
half's candidates (gold: the rule-made sets) keeps those above a probability, the first always,
up to 10, and the probability is swept. It scores the judge's choice, not the written answer.

The questions have no split field, so they are split by id: the odd-numbered ids (list-001,
list-003, ...) are the tune half the constants are fitted on (the most precise at 10 with
R@10 >= 0.80 there), the even-numbered ones are held out and reported apart.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rag.answer.judge import (
    Judge,
    Verdict,
    subject_closeness,
    subject_phrases,
    subject_shares,
)
from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.lang.intent import Intent, understand
from rag.settings import get_settings
from rag.types import Filters, RetrievedPaper

DEFAULT = Path("data/eval/list_questions.jsonl")
READ = Path("data/eval/list_relevance.jsonl")
Pair = tuple[float, float]
NO_CUT = {"list_min_coverage": float("-inf"), "list_pool": 0, "list_records": 0}
# Each constant moved alone from the configured value.
MOVES: list[dict[str, Any]] = [
    {"list_min_coverage": 0.3},
    {"list_min_coverage": 0.45},
    {"list_closeness_weight": 1.5},
    {"list_closeness_weight": 2.5},
    {"list_lead": 5},
    {"list_pool": 30},
]


def tuned(row: dict[str, Any]) -> bool:
    """The tune half: odd-numbered ids (list-001, list-003, ...); the rest is held out."""
    found = re.search(r"(\d+)$", str(row.get("id", "")))
    return found is not None and int(found.group(1)) % 2 == 1


def score(cited: set[str], gold: set[str], k: int) -> Pair:
    """Precision over all the answer cites; recall of min(|gold|, k) papers, capped at 1 (an
    answer that cited more than k papers would exceed it)."""
    hit = len(cited & gold)
    return (hit / len(cited) if cited else 0.0, min(1.0, hit / min(len(gold), k)) if gold else 1.0)


def mean(pairs: list[Pair]) -> Pair:
    n = max(1, len(pairs))
    return sum(p for p, _ in pairs) / n, sum(r for _, r in pairs) / n


def written(
    assistant: Assistant, rows: list[dict[str, Any]], k: int, change: dict[str, Any]
) -> list[set[str]]:
    """The papers each offline answer cites, with the constants `change`d."""
    retriever = assistant.retriever
    saved = retriever.calibration
    retriever.calibration = replace(saved, **change)
    try:
        return [
            {c.paper_id for c in answer(row["question"], assistant=assistant, k=k).citations}
            for row in rows
        ]
    finally:
        retriever.calibration = saved


def read_gold(path: Path) -> dict[str, set[str]]:
    """Per question, the papers a reader judged relevant (`data/eval/list_relevance.jsonl`):
    every paper of the question's top 20 and of its rule-made gold set was read, title and
    abstract, blind to which the answer cites; a paper not read counts as not relevant."""
    gold: dict[str, set[str]] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        if text.strip():
            row = json.loads(text)
            gold.setdefault(row["qid"], set())
            if row["relevant"]:
                gold[row["qid"]].add(row["id"])
    return gold


class FilteredOnly:
    """The configured judge, blind to the unfiltered `leaders`: the baseline of --tiers."""

    def __init__(self, inner: Judge) -> None:
        self.inner = inner

    def judge(
        self,
        intent: Intent,
        candidates: Sequence[RetrievedPaper],
        leaders: Sequence[RetrievedPaper] = (),
    ) -> Verdict:
        return self.inner.judge(intent, candidates)


def tier_runs(assistant: Assistant, rows: list[dict[str, Any]]) -> None:
    """Precision and recall at 10 of list answers under each tier filter, with and without
    the unfiltered leaders."""
    ids = sorted({g for row in rows for g in row["gold_ids"]})
    tier = {i: p.tier for i, p in assistant.retriever.index.get_papers(ids).items()}
    for chosen in ("Oral", "Spotlight"):
        asked = [(row, {g for g in row["gold_ids"] if tier.get(g) == chosen}) for row in rows]
        asked = [(row, gold) for row, gold in asked if gold]
        for label, judge in (
            ("judged by the filtered candidates", FilteredOnly(assistant.judge)),
            ("judged by the unfiltered leaders", assistant.judge),
        ):
            saved, assistant.judge = assistant.judge, judge
            try:
                ten = [
                    score(
                        {
                            c.paper_id
                            for c in answer(
                                row["question"],
                                assistant=assistant,
                                k=10,
                                filters=Filters(tiers=[chosen]),
                            ).citations
                        },
                        gold,
                        10,
                    )
                    for row, gold in asked
                ]
            finally:
                assistant.judge = saved
            halves = []
            for keep in (True, False):
                p, r = mean(
                    [pair for (row, _), pair in zip(asked, ten, strict=True) if tuned(row) is keep]
                )
                halves.append(f"{100 * p:5.1f} {100 * r:5.1f}")
            print(f"{chosen:<9} {label:<34} {halves[0]}   | {halves[1]}   ({len(asked)} questions)")


def signals(assistant: Assistant, question: str) -> tuple[list[str], list[list[float]]]:
    """The ids of the 20 candidates the judge checks for `question`, and their signals."""
    retriever, c = assistant.retriever, assistant.retriever.calibration
    intent = understand(question)
    found = retriever.search(intent.search, k=c.list_pool)
    scores = retriever.paper_relevance(intent.focus or intent.search, found)
    keywords = retriever.index.keyword_index()
    phrases = subject_phrases(intent.subject, keywords)  # as the judge weighs the subject
    shares = subject_shares(intent.subject, found, keywords.idf, c.list_lead, (), phrases)
    close = subject_closeness(intent.subject, found, assistant.judge.embeddings)  # type: ignore[attr-defined]
    best_score, best_close = max(scores), max(close)
    rows = [
        [
            score,
            score - best_score,
            share,
            near,
            near - best_close,
            n / len(found),
            float(score >= retriever.threshold),
        ]
        for n, (score, share, near) in enumerate(zip(scores, shares, close, strict=True))
    ]
    return [r.paper.id for r in found], rows


def fit_runs(assistant: Assistant, rows: list[dict[str, Any]]) -> None:
    """P@10 / R@10 of a logistic regression over the judge's signals, fitted on the tune half."""
    from sklearn.linear_model import LogisticRegression

    found = [signals(assistant, row["question"]) for row in rows]
    x = [v for (_, vs), row in zip(found, rows, strict=True) if tuned(row) for v in vs]
    y = [
        i in row["gold_ids"]
        for (ids, _), row in zip(found, rows, strict=True)
        if tuned(row)
        for i in ids
    ]
    model = LogisticRegression(max_iter=2000).fit(x, y)
    print(f"{'kept above':<12} P@10  R@10   | P@10  R@10   | P@10  R@10 (tune | held-out | all)")
    for bar in (0.2, 0.3, 0.4, 0.5, 0.6):
        ten = []
        for (ids, vs), row in zip(found, rows, strict=True):
            p = model.predict_proba(vs)[:, 1]
            kept = [i for n, (i, q) in enumerate(zip(ids, p, strict=True)) if n == 0 or q >= bar][
                :10
            ]
            ten.append(score(set(kept), set(row["gold_ids"]), 10))
        parts = []
        for keep in (True, False, None):
            pick = [
                t for t, row in zip(ten, rows, strict=True) if keep is None or tuned(row) is keep
            ]
            p10, r10 = mean(pick)
            parts.append(f"{100 * p10:5.1f} {100 * r10:5.1f}")
        print(f"{bar:<12} {parts[0]}   | {parts[1]}   | {parts[2]}")


def line(label: str, rows: list[dict[str, Any]], five: list[Pair], ten: list[Pair]) -> str:
    parts = []
    for keep in (True, False):
        picked = [n for n, row in enumerate(rows) if tuned(row) is keep]
        (p5, r5), (p10, r10) = mean([five[n] for n in picked]), mean([ten[n] for n in picked])
        parts.append(f"{100 * p5:5.1f} {100 * r5:5.1f} {100 * p10:5.1f} {100 * r10:5.1f}")
    (p5, r5), (p10, r10) = mean(five), mean(ten)
    every = f"{100 * p5:5.1f} {100 * r5:5.1f} {100 * p10:5.1f} {100 * r10:5.1f}"
    return f"{label:<34} {parts[0]} | {parts[1]} | {every}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, action="append")
    parser.add_argument("--moves", action="store_true", help="also move each constant alone")
    parser.add_argument("--show", action="store_true", help="per tuning question, at 10")
    parser.add_argument(
        "--gold",
        choices=("rule", "read"),
        default="rule",
        help="the gold sets: made by each question's rule (gold_ids), or read (list_relevance)",
    )
    parser.add_argument("--tiers", action="store_true", help="under each tier filter")
    parser.add_argument("--fit", action="store_true", help="a regression over the signals")
    args = parser.parse_args(argv)
    rows = [
        json.loads(text)
        for path in args.questions or [DEFAULT]
        for text in path.read_text(encoding="utf-8").splitlines()
        if text.strip()
    ]
    settings = get_settings(
        "offline", {"store": {"index_dir": str(args.index)}, "llm": {"model": "offline"}}
    )
    assistant = open_assistant(settings)
    c = assistant.retriever.calibration
    configured = {
        "list_min_coverage": c.list_min_coverage,
        "list_closeness_weight": c.list_closeness_weight,
        "list_lead": c.list_lead,
        "list_pool": c.list_pool,
        "list_records": c.list_records,
    }
    if args.fit:
        fit_runs(assistant, rows)
        return 0
    if args.tiers:
        print(f"{'':<44} P@10  R@10   | P@10  R@10 (tune | held-out)")
        tier_runs(assistant, rows)
        return 0
    halves = sum(map(tuned, rows)), sum(not tuned(row) for row in rows)
    print(f"{len(rows)} list questions (tune {halves[0]} | held-out {halves[1]}); {configured}")
    head = "P@5   R@5  P@10  R@10"
    print(f"{'':<34} {head:<23} | {head:<23} | {head} (tune | held-out | all)")
    runs: list[tuple[str, dict[str, Any]]] = [
        ("answers, no cut", NO_CUT),
        ("answers, configured", {}),
    ]
    if args.moves:
        runs += [(", ".join(f"{k}={v}" for k, v in m.items()), m) for m in MOVES]
    read = read_gold(READ) if args.gold == "read" else {}
    golds = [read.get(row["id"], set()) if read else set(row["gold_ids"]) for row in rows]
    # The rule-made sets were made over abstracts: a title record they cannot judge is not
    # scored there; the read sets judged the records a list may name by their titles.
    titles = frozenset(assistant.retriever.people.current().titles)
    unjudged = frozenset() if read else titles
    for label, change in runs:
        cited_at = {k: written(assistant, rows, k, change) for k in (5, 10)}
        five, ten = (
            [
                score(cited - unjudged, gold, k)
                for cited, gold in zip(cited_at[k], golds, strict=True)
            ]
            for k in (5, 10)
        )
        print(line(label, rows, five, ten))
        named = [cited & titles for cited in cited_at[10]]
        if any(named):
            relevant = sum(len(n & g) for n, g in zip(named, golds, strict=True))
            print(
                f"{'':<34} title records named at 10: {sum(map(len, named))} in "
                f"{sum(map(bool, named))} answers"
                + (f", {relevant} of them read relevant" if read else " (not scored above)")
            )
        if args.show and not change:  # the held-out half's questions stay unseen
            for row, (p, r) in zip(rows, ten, strict=True):
                if tuned(row):
                    print(f"    {row['id']} P@10 {p:.2f} R@10 {r:.2f}  {row['question']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
