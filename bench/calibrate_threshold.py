"""Calibrate the relevance check (below Calibration.relevance_threshold, answers abstain).

Runs the answerable and unanswerable questions of data/eval/questions.jsonl through the real
retriever on the 2,105-paper index (+ seeds). The relevance score (Retriever.relevance) is the
best paper's cosine similarity + lexical_weight x its share of the question's terms -
unknown_term_penalty x the question terms no abstract contains. For a grid of the two weights
(cosine alone is the first row) it sweeps the threshold and prints precision / recall / F1 of
abstention and the false-refusal rate, picking the threshold with the best F1 among those that
refuse at most 5% of answerable questions. To guard against fitting the question set, each
setting is also chosen on the odd-numbered questions and scored on the even ones (held out).
The configured weights are read from rag/retrieval/calibration.py (the Calibration of the
configured embedding model); the values to put there are printed.

Questions in Chinese take their own route (rag.lang.gloss, rag.index.multilingual) and their own
relevance score (rag.retrieval.relevance), so they are left out of the English choice
(--choose-on-all to include them) and calibrated apart, on the Chinese answerable questions and
the Chinese versions of the unanswerable ones: for a grid of the multilingual cosine's weight
and the penalty per word no abstract has a sense of, the same sweep and held-out halves. The
chosen threshold T of the configured weights gives multilingual_relevance_offset =
T - relevance_threshold, so one threshold serves both.
The Chinese questions are also searched without the multilingual vectors (the gloss alone),
which gives gloss_relevance_offset (gloss_small_corpus_margin on the seeds).

    .venv/bin/python -m bench.calibrate_threshold [--index DIR] [--questions FILE]
        [--max-false-refusals 0.05] [--choose-on-all] [--corpus full|seeds]

Without --index it builds (or updates) an index in /tmp/rag-bench/corpus-index.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rag.retrieval.calibration import UNCALIBRATED, Calibration, calibration_for
from rag.settings import (
    BUNDLED_CORPUS,
    EVAL_DATA,
    SEED_FILES,
    Settings,
    get_settings,
    with_overrides,
)

ROOT = Path(__file__).resolve().parents[1]

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
    # Chinese versions of 13 of the paraphrases (the Chinese seed questions of questions.jsonl
    # already cover the other two): Chinese false refusals measured on 19 questions, not 6.
    rows += read_questions(TEST_DATA / "seed_questions_zh.jsonl")
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
    language: str = "en"

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
    from rag.index.ingest import build_index

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


ChineseSetting = tuple[float, float]  # multilingual cosine weight, unknown-word penalty


def score_questions(
    settings: Settings,
    rows: list[dict[str, Any]],
    grid: list[tuple[float, float]],
    chinese_grid: list[ChineseSetting] = [],  # noqa: B006 (read only)
    calibration: Calibration | None = None,
) -> tuple[
    dict[tuple[float, float], list[Scored]], dict[ChineseSetting, list[Scored]], list[Scored]
]:
    """Relevance of every question's results under each (lexical_weight, penalty) setting, of
    the Chinese questions under each Chinese setting (with multilingual_relevance_offset 0),
    and of the Chinese questions searched without the multilingual vectors (the gloss alone,
    gloss_relevance_offset 0, configured weights)."""
    from rag.lang.gloss import language
    from rag.retrieval.retriever import Retriever, open_retriever

    retriever = open_retriever(settings)
    if calibration is not None:
        retriever.calibration = calibration
    base = retriever.calibration
    results = [retriever.search(row["question"]) for row in rows]
    languages = [language(row["question"]) for row in rows]

    def scores(update: dict[str, float], only: str | None = None) -> list[Scored]:
        retriever.calibration = replace(base, **update)
        return [
            Scored(
                str(row.get("id", "")),
                str(row.get("kind", "")),
                row["question"],
                retriever.relevance(row["question"], found),
                lang,
            )
            for row, found, lang in zip(rows, results, languages, strict=True)
            if only is None or lang == only
        ]

    scored = {
        (weight, penalty): scores({"lexical_weight": weight, "unknown_term_penalty": penalty})
        for weight, penalty in grid
    }
    chinese = {
        setting: scores(
            {
                "multilingual_relevance_weight": setting[0],
                "multilingual_unknown_penalty": setting[1],
                "multilingual_relevance_offset": 0.0,
                "multilingual_small_corpus_margin": 0.0,
            },
            only="zh",
        )
        for setting in chinese_grid
    }
    retriever.calibration = base
    plain = Retriever(
        retriever.index,
        retriever.embeddings,
        retriever.settings,
        None,
        replace(base, gloss_relevance_offset=0.0, gloss_small_corpus_margin=0.0),
    )
    gloss_only = []
    for row, lang in zip(rows, languages, strict=True):
        if lang == "zh":
            found = plain.search(row["question"])
            gloss_only.append(
                Scored(
                    str(row.get("id", "")),
                    str(row.get("kind", "")),
                    row["question"],
                    plain.relevance(row["question"], found),
                    lang,
                )
            )
    return scored, chinese, gloss_only


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
    parser.add_argument("--questions", type=Path, default=EVAL_DATA / "questions.jsonl")
    parser.add_argument("--max-false-refusals", type=float, default=0.05)
    parser.add_argument(
        "--choose-on-all", action="store_true", help="let Chinese questions weigh in the choice"
    )
    parser.add_argument("--step", type=float, default=0.01)
    parser.add_argument(
        "--chinese-rows", type=int, default=12, help="Chinese settings shown (best held out first)"
    )
    parser.add_argument(
        "--corpus",
        choices=["full", "seeds"],
        default="full",
        help="full: 2,105 papers + seeds; seeds: the 38 seed abstracts alone, with the seed "
        "questions and tests/data/seed_unanswerable.jsonl",
    )
    parser.add_argument(
        "--uncalibrated",
        action="store_true",
        help="fit the rule for a model with no calibration (no cosine read: "
        "Calibration.cosine_weight 0), the UNCALIBRATED constants",
    )
    args = parser.parse_args(argv)

    seeds_only = args.corpus == "seeds"
    rows = seed_questions(args.questions) if seeds_only else read_questions(args.questions)
    excluded = set() if args.choose_on_all else {"chinese"}

    def english(values: list[Scored]) -> list[Scored]:
        return values if args.choose_on_all else [s for s in values if s.language != "zh"]

    settings = corpus_settings(args.index, args.config, seeds_only)
    r = UNCALIBRATED if args.uncalibrated else calibration_for(settings)
    configured = (r.lexical_weight, r.unknown_term_penalty)
    grid = sorted(
        {(w, p) for w in (0.0, 0.25, 0.5, 0.75) for p in (0.0, 0.05, 0.1, 0.15, 0.2)} | {configured}
    )
    configured_zh = (r.multilingual_relevance_weight, r.multilingual_unknown_penalty)
    chinese_grid = sorted(
        {(a, p) for a in (1.0, 1.5, 2.0, 2.5) for p in (0.0, 0.1, 0.2, 0.3, 0.4)} | {configured_zh}
    )
    started = time.perf_counter()
    by_setting, by_chinese, gloss_only = score_questions(settings, rows, grid, chinese_grid, r)
    seconds = time.perf_counter() - started
    steps = int(round(1.4 / args.step))
    thresholds = [round(-0.2 + i * args.step, 4) for i in range(steps + 1)]
    print(
        "relevance settings (F1 of abstention at <= "
        f"{args.max_false_refusals:.0%} false refusals, without {', '.join(sorted(excluded))}):"
    )
    print("  lexical_weight  penalty  threshold  F1     held-out F1  held-out false refusals")
    for setting, values in by_setting.items():
        eligible = english(values)
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

    eligible = english(scored)
    points = sweep(eligible, thresholds)
    chosen = choose(points, args.max_false_refusals)
    everything = {p.threshold: p for p in sweep(scored, thresholds)}[chosen.threshold]
    left_out = " (without the questions in Chinese)" if excluded else ""
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
        f"\nchosen relevance_threshold = {chosen.threshold:.2f} (to put in "
        f"rag/retrieval/calibration.py; now {r.relevance_threshold:.2f}): abstention precision "
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
    if by_chinese and by_chinese[configured_zh]:
        report_chinese(
            by_chinese,
            configured_zh,
            settings,
            args.max_false_refusals,
            args.step,
            args.chinese_rows,
            small=seeds_only,
            r=r,
        )
    if gloss_only:
        report_gloss_only(gloss_only, settings, args.max_false_refusals, args.step, seeds_only, r)
    return 0


def report_gloss_only(
    scored: list[Scored],
    settings: Settings,
    budget: float,
    step: float,
    small: bool,
    r: Calibration,
) -> None:
    """Chinese questions searched without the multilingual vectors: gloss_relevance_offset."""
    thresholds = [round(-0.5 + i * step, 4) for i in range(int(round(2.5 / step)) + 1)]
    chosen = choose(sweep(scored, thresholds), budget)
    n_u = sum(not s.answerable for s in scored)
    n_a = len(scored) - n_u
    at = r.relevance_threshold + r.gloss_relevance_offset
    if small:
        at += r.gloss_small_corpus_margin
        name, value, configured = (
            "gloss_small_corpus_margin",
            chosen.threshold - r.relevance_threshold - r.gloss_relevance_offset,
            r.gloss_small_corpus_margin,
        )
    else:
        name, value, configured = (
            "gloss_relevance_offset",
            chosen.threshold - r.relevance_threshold,
            r.gloss_relevance_offset,
        )
    held = held_out_counts(scored, thresholds, budget)
    print(
        f"\nChinese questions without the multilingual vectors (the gloss alone, penalty "
        f"{r.multilingual_unknown_penalty}): threshold "
        f"{chosen.threshold:.2f} ({name} = {value:.2f}; configured {configured:.2f}) refuses "
        f"{chosen.recall:.1%} of {n_u} unanswerable, {chosen.false_refusals:.1%} of {n_a} "
        "answerable"
    )
    refused_u = sum(not s.answerable and s.best < at for s in scored)
    refused_a = sum(s.answerable and s.best < at for s in scored)
    print(
        f"as configured (below {at:.2f}): refused {refused_u}/{n_u} unanswerable, "
        f"{refused_a}/{n_a} answerable; held out: {held[0]}/{n_u} unanswerable, "
        f"{held[1]}/{held[2]} answerable"
    )


def report_chinese(
    by_setting: dict[ChineseSetting, list[Scored]],
    configured: ChineseSetting,
    settings: Settings,
    budget: float,
    step: float,
    shown: int = 12,
    small: bool = False,
    r: Calibration | None = None,
) -> None:
    """The Chinese questions' own sweep (offset 0), and what the configured settings do.

    On a small index (`small`: the seeds) the configured offset stays, and the sweep sets
    multilingual_small_corpus_margin instead (the unknown-word penalty applies there too).
    """
    thresholds = [round(-0.5 + i * step, 4) for i in range(int(round(2.5 / step)) + 1)]
    some = by_setting[configured]
    print(
        f"\nChinese questions ({sum(s.answerable for s in some)} answerable, "
        f"{sum(not s.answerable for s in some)} unanswerable): relevance = best gloss cosine + "
        "a x best multilingual cosine - p x unknown words "
        f"(offset 0 here; F1 at <= {budget:.0%} false refusals)"
    )
    print(
        "  a     p     threshold  refused  false refusals  F1     held out: refused  false refusals"
    )
    rows = []
    for setting, values in by_setting.items():
        point = choose(sweep(values, thresholds), budget)
        held = held_out_counts(values, thresholds, budget)
        rows.append((setting, point, held))
    rows.sort(key=lambda row: (-row[2][0], row[2][1], -row[1].f1))
    for setting, point, held in rows[:shown] + [r for r in rows[shown:] if r[0] == configured]:
        mark = "  <- configured" if setting == configured else ""
        unanswerable = sum(not s.answerable for s in by_setting[setting])
        print(
            f"  {setting[0]:<5.2f} {setting[1]:<5.2f} {point.threshold:<10.2f} "
            f"{point.recall:<8.1%} {point.false_refusals:<15.1%} {point.f1:.3f}  "
            f"{held[0]}/{unanswerable:<16} {held[1]}/{held[2]}{mark}"
        )
    chosen = choose(sweep(some, thresholds), budget)
    r = r or calibration_for(settings)
    at = r.relevance_threshold + r.multilingual_relevance_offset  # what the app does now
    if small:
        margin = chosen.threshold - at
        print(
            f"configured {configured}: threshold {chosen.threshold:.2f} on the Chinese score, "
            f"i.e. multilingual_small_corpus_margin = {margin:.2f} with relevance_threshold "
            f"{r.relevance_threshold:.2f} and offset {r.multilingual_relevance_offset:.2f} "
            f"(configured margin {r.multilingual_small_corpus_margin:.2f})"
        )
        at += r.multilingual_small_corpus_margin
    else:
        offset = chosen.threshold - r.relevance_threshold
        print(
            f"configured {configured}: threshold {chosen.threshold:.2f} on the Chinese score, "
            f"i.e. multilingual_relevance_offset = {offset:.2f} with relevance_threshold "
            f"{r.relevance_threshold:.2f} (configured offset {r.multilingual_relevance_offset:.2f})"
        )
    refused_u = [s for s in some if not s.answerable and s.best < at]
    refused_a = [s for s in some if s.answerable and s.best < at]
    n_u = sum(not s.answerable for s in some)
    n_a = len(some) - n_u
    held = held_out_counts(some, thresholds, budget)
    print(
        f"as configured (Chinese score below {at:.2f}): refused {len(refused_u)}/{n_u} "
        f"unanswerable ({len(refused_u) / max(n_u, 1):.1%}), {len(refused_a)}/{n_a} answerable "
        f"({len(refused_a) / max(n_a, 1):.1%}); held out (chosen on odd-numbered questions, "
        f"scored on even ones and the other way round): refused {held[0]}/{n_u} unanswerable "
        f"({held[0] / max(n_u, 1):.1%}), {held[1]}/{held[2]} answerable "
        f"({held[1] / max(held[2], 1):.1%})"
    )
    for s in sorted(refused_a, key=lambda s: s.best):
        print(f"  refused answerable {s.id} ({s.best - at:+.3f}): {s.question[:60]}")
    for s in sorted((s for s in some if not s.answerable and s.best >= at), key=lambda s: s.best):
        print(f"  answered unanswerable {s.id} ({s.best - at:+.3f}): {s.question[:60]}")


def held_out_counts(
    scored: list[Scored], thresholds: list[float], budget: float
) -> tuple[int, int, int]:
    """Threshold chosen on one half (odd / even numbers), applied to the other, both ways:
    unanswerable refused, answerable refused, answerable questions."""

    def number(s: Scored) -> int:
        return int("".join(c for c in s.id if c.isdigit()) or 0)

    halves = [[s for s in scored if number(s) % 2 == k] for k in (1, 0)]
    refused = wrong = answerable = 0
    for train, test in ((halves[0], halves[1]), (halves[1], halves[0])):
        t = choose(sweep(train, thresholds), budget).threshold
        refused += sum(not s.answerable and s.best < t for s in test)
        wrong += sum(s.answerable and s.best < t for s in test)
        answerable += sum(s.answerable for s in test)
    return refused, wrong, answerable


if __name__ == "__main__":
    sys.exit(main())
