"""Calibrate the relevance check (below retrieval.relevance_threshold, answers abstain).

Runs the answerable and unanswerable questions of bench/questions.jsonl through the real
retriever on the 2,105-paper index (+ seeds). The relevance score (Retriever.relevance) is the
best paper's cosine similarity + lexical_weight x its share of the question's terms -
unknown_term_penalty x the question terms no abstract contains. For a grid of the two weights
(cosine alone is the first row) it sweeps the threshold and prints precision / recall / F1 of
abstention and the false-refusal rate, picking the threshold with the best F1 among those that
refuse at most 5% of answerable questions. To guard against fitting the question set, each
setting is also chosen on the odd-numbered questions and scored on the even ones (held out).
The choice for the configured weights goes in rag/settings.py (RetrievalSettings). Chinese questions
are scored and reported but left out of the choice by default: the bundled embedding model
reads English only, so their similarities say nothing about relevance (--choose-on-all to
include them).

    .venv/bin/python bench/calibrate_threshold.py [--index DIR] [--questions FILE]
        [--max-false-refusals 0.05] [--choose-on-all]

Without --index it builds (or updates) an index in /tmp/rag-bench/corpus-index.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag.settings import BUNDLED_CORPUS, SEED_FILES, Settings, get_settings, with_overrides  # noqa: E402

DEFAULT_INDEX = Path("/tmp/rag-bench/corpus-index")
SEED_INDEX = Path("/tmp/rag-bench/seed-index")
TEST_DATA = ROOT / "tests" / "data"


def seed_paths() -> list[Path]:
    """The 38 seed abstracts."""
    return list(SEED_FILES)


def seed_questions(path: Path) -> list[dict[str, Any]]:
    """Questions about the seed abstracts, and questions no seed abstract covers."""
    rows = [r for r in read_questions(path) if r.get("corpus") == "seeds" or not r.get("gold")]
    rows += read_questions(TEST_DATA / "seed_questions.jsonl")
    rows += [
        r | {"kind": "unanswerable"} for r in read_questions(TEST_DATA / "seed_unanswerable.jsonl")
    ]
    return rows


@dataclass(frozen=True)
class Scored:
    id: str
    kind: str
    question: str
    best: float  # the relevance score of the retrieved papers

    @property
    def answerable(self) -> bool:
        return self.kind != "unanswerable"


@dataclass(frozen=True)
class Point:
    threshold: float
    precision: float
    recall: float
    f1: float
    false_refusals: float


def read_questions(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path}, line {number}: not valid JSON: {e.msg}") from None
        if not isinstance(row, dict) or not isinstance(row.get("question"), str):
            raise SystemExit(f"{path}, line {number}: expected an object with a 'question'")
        rows.append(row)
    return rows


def corpus_settings(
    index: Path | None, config: str | None = None, seeds_only: bool = False
) -> Settings:
    """Settings for the index in `index`, built from the corpus and the seeds when missing."""
    from rag.index import build_index

    target = index or (SEED_INDEX if seeds_only else DEFAULT_INDEX)
    settings = with_overrides(get_settings(config), {"store": {"index_dir": str(target)}})
    if index is None or not target.exists():
        started = time.perf_counter()
        paths = seed_paths() if seeds_only else [BUNDLED_CORPUS]
        report = build_index(settings, paths)
        print(
            f"index {target}: {report.added} added, {report.unchanged} unchanged "
            f"({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )
    return settings


def score_questions(
    settings: Settings, rows: list[dict[str, Any]], grid: list[tuple[float, float]]
) -> dict[tuple[float, float], list[Scored]]:
    """Relevance of every question's results under each (lexical_weight, penalty) setting."""
    from rag.retrieve import open_retriever

    retriever = open_retriever(settings)
    base = retriever.settings
    results = [retriever.search(row["question"]) for row in rows]
    scored: dict[tuple[float, float], list[Scored]] = {}
    for weight, penalty in grid:
        retriever.settings = base.model_copy(
            update={"lexical_weight": weight, "unknown_term_penalty": penalty}
        )
        scored[(weight, penalty)] = [
            Scored(
                str(row.get("id", "")),
                str(row.get("kind", "")),
                row["question"],
                retriever.relevance(row["question"], found),
            )
            for row, found in zip(rows, results, strict=True)
        ]
    retriever.settings = base
    return scored


def held_out_f1(scored: list[Scored], thresholds: list[float], budget: float) -> Point:
    """Threshold chosen on odd-numbered questions, scored on even-numbered ones."""

    def number(s: Scored) -> int:
        digits = "".join(c for c in s.id if c.isdigit())
        return int(digits or 0)

    odd = [s for s in scored if number(s) % 2 == 1]
    even = [s for s in scored if number(s) % 2 == 0]
    chosen = choose(sweep(odd, thresholds), budget)
    return sweep(even, [chosen.threshold])[0]


def sweep(scored: list[Scored], thresholds: list[float]) -> list[Point]:
    unanswerable = sum(not s.answerable for s in scored)
    answerable = len(scored) - unanswerable
    points = []
    for t in thresholds:
        refused = [s for s in scored if s.best < t]
        right = sum(not s.answerable for s in refused)
        wrong = len(refused) - right
        precision = right / len(refused) if refused else 1.0
        recall = right / unanswerable if unanswerable else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        points.append(Point(t, precision, recall, f1, wrong / answerable if answerable else 0.0))
    return points


def choose(points: list[Point], max_false_refusals: float) -> Point:
    """Best F1 within the false-refusal budget; the lowest threshold wins a tie (refuse less)."""
    allowed = [p for p in points if p.false_refusals <= max_false_refusals + 1e-9]
    if not allowed:
        raise SystemExit("no threshold keeps false refusals within the budget")
    return max(allowed, key=lambda p: (round(p.f1, 6), -p.threshold))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="an existing index of the corpus + seeds")
    parser.add_argument("--config", help="a config file or preset (retrieval knobs)")
    parser.add_argument("--questions", type=Path, default=ROOT / "bench" / "questions.jsonl")
    parser.add_argument("--max-false-refusals", type=float, default=0.05)
    parser.add_argument(
        "--choose-on-all", action="store_true", help="let Chinese questions weigh in the choice"
    )
    parser.add_argument("--step", type=float, default=0.01)
    parser.add_argument(
        "--corpus",
        choices=["full", "seeds"],
        default="full",
        help="full: 2,105 papers + seeds; seeds: the 38 seed abstracts alone, with the seed "
        "questions and tests/data/seed_unanswerable.jsonl",
    )
    args = parser.parse_args(argv)

    seeds_only = args.corpus == "seeds"
    rows = seed_questions(args.questions) if seeds_only else read_questions(args.questions)
    excluded = set() if args.choose_on_all else {"chinese"}
    settings = corpus_settings(args.index, args.config, seeds_only)
    configured = (settings.retrieval.lexical_weight, settings.retrieval.unknown_term_penalty)
    grid = sorted(
        {(w, p) for w in (0.0, 0.25, 0.5, 0.75) for p in (0.0, 0.05, 0.1, 0.15, 0.2)} | {configured}
    )
    started = time.perf_counter()
    by_setting = score_questions(settings, rows, grid)
    seconds = time.perf_counter() - started
    steps = int(round(1.4 / args.step))
    thresholds = [round(-0.2 + i * args.step, 4) for i in range(steps + 1)]
    print(
        "relevance settings (F1 of abstention at <= "
        f"{args.max_false_refusals:.0%} false refusals, without {', '.join(sorted(excluded))}):"
    )
    print("  lexical_weight  penalty  threshold  F1     held-out F1  held-out false refusals")
    for setting, values in by_setting.items():
        eligible = [s for s in values if s.kind not in excluded]
        point = choose(sweep(eligible, thresholds), args.max_false_refusals)
        held = held_out_f1(eligible, thresholds, args.max_false_refusals)
        mark = "  <- configured" if setting == configured else ""
        print(
            f"  {setting[0]:<15.2f} {setting[1]:<8.2f} {point.threshold:<10.2f} {point.f1:.3f}  "
            f"{held.f1:.3f}        {held.false_refusals:.1%}{mark}"
        )
    scored = by_setting[configured]
    kinds = Counter(s.kind for s in scored)
    print(
        f"{len(scored)} questions from {args.questions.name} "
        f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}); "
        f"retrieval {1000 * seconds / max(1, len(scored)):.0f} ms/question"
    )
    print(f"\nrelevance at the configured weights {configured}, by kind (min / median / max):")
    by_kind: dict[str, list[float]] = defaultdict(list)
    for s in scored:
        by_kind[s.kind].append(s.best)
    for kind, values in sorted(by_kind.items()):
        values.sort()
        print(f"  {kind:<13} {values[0]:.3f} / {values[len(values) // 2]:.3f} / {values[-1]:.3f}")

    eligible = [s for s in scored if s.kind not in excluded]
    points = sweep(eligible, thresholds)
    chosen = choose(points, args.max_false_refusals)
    everything = {p.threshold: p for p in sweep(scored, thresholds)}[chosen.threshold]
    left_out = f" (without {', '.join(sorted(excluded))} questions)" if excluded else ""
    print(f"\nsweep over {len(eligible)} questions{left_out}")
    print("threshold  precision  recall  F1     false refusals")
    for p in points:
        if p.threshold * 100 % 2 > 1e-6 and p is not chosen:
            continue  # every 0.02, plus the chosen one
        if p.recall == 0 and p.false_refusals == 0 and p.threshold < chosen.threshold - 0.1:
            continue
        if p.false_refusals > 0.5:
            break
        mark = "  <- chosen" if p is chosen else ""
        print(
            f"  {p.threshold:.2f}     {p.precision:.3f}      {p.recall:.3f}   {p.f1:.3f}  "
            f"{p.false_refusals:.1%}{mark}"
        )
    print(
        f"\nchosen relevance_threshold = {chosen.threshold:.2f}: abstention precision "
        f"{chosen.precision:.3f}, recall {chosen.recall:.3f}, F1 {chosen.f1:.3f}, "
        f"false refusals {chosen.false_refusals:.1%} (budget {args.max_false_refusals:.0%})"
    )
    if excluded:
        print(
            f"with every question at {chosen.threshold:.2f}: precision {everything.precision:.3f}, "
            f"recall {everything.recall:.3f}, F1 {everything.f1:.3f}, "
            f"false refusals {everything.false_refusals:.1%}"
        )
    print("refused at the chosen threshold, by kind:")
    for kind, values in sorted(by_kind.items()):
        refused = sum(v < chosen.threshold for v in values)
        print(f"  {kind:<13} {refused}/{len(values)}")
    wrong = [s for s in scored if s.answerable and s.best < chosen.threshold]
    for s in wrong:
        print(f"  refused answerable {s.id} ({s.best:.3f}): {s.question[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
