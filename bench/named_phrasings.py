"""Named papers in new phrasings (issue 29): search R@1, cited first and refusals, per split.

    python -m bench.named_phrasings [--questions FILE] [--misses] [--json] [--baseline REV]

For each question of data/eval/named_phrasings.jsonl (bench/make_phrasing_questions.py) it runs
the hybrid retriever (`assistant.retriever.search(question, k=10)`) and the offline answer
(`rag.answer.pipeline.answer`, RAG_LLM__MODEL=offline), and counts, per split (dev, heldout)
and language: search R@1 (the named paper first), cited first (the answer's first citation,
`result.citations[0].paper_id`, is the named paper) and refusals (`result.abstained`). Only
these APIs, which main had before issue 29, are used, so the same script measures main and a
branch. The index is the one of the current settings (`rag ingest` builds it).

`--baseline REV` also measures REV in the same run: a detached `git worktree` of REV under
/tmp, its index built there (`python -m rag.cli ingest`), this very script copied into it and
run there on the same question file; both are printed side by side with their ratio, and the
temporary worktree is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

QUESTIONS = Path("data/eval/named_phrasings.jsonl")
CELLS = (("dev", "en"), ("dev", "zh"), ("heldout", "en"), ("heldout", "zh"))
METRICS = ("r1", "cited_first", "refused")


def read_questions(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def measure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each question's search and offline answer, as one record a question."""
    os.environ["RAG_LLM__MODEL"] = "offline"
    import rag
    from rag.answer.pipeline import answer, open_assistant
    from rag.settings import get_settings

    settings = get_settings()
    assistant = open_assistant(settings)
    records = []
    started = time.perf_counter()
    for row in rows:
        found = assistant.retriever.search(row["question"], k=10)
        record: dict[str, Any] = {k: row[k] for k in ("id", "split", "lang", "pattern")}
        record.update(question=row["question"], gold_id=row["gold_id"])
        record["top"] = found[0].paper.id if found else None
        record["top_title"] = found[0].paper.title if found else None
        record["r1"] = record["top"] == row["gold_id"]
        try:
            result = answer(row["question"], assistant=assistant)
        except Exception as e:  # an answer that fails is a miss, with its error
            record.update(cited=None, cited_title=None, cited_first=False, refused=False)
            record["error"] = f"{type(e).__name__}: {e}"
        else:
            first = result.citations[0] if result.citations else None
            record["cited"] = first.paper_id if first else None
            record["cited_title"] = first.title if first else None
            record["cited_first"] = record["cited"] == row["gold_id"]
            record["refused"] = bool(result.abstained)
        records.append(record)
    return {
        "rag": str(Path(rag.__file__).resolve().parent.parent),
        "index": str(Path(settings.store.index_dir).resolve()),
        "seconds": round(time.perf_counter() - started, 1),
        "records": records,
    }


def tally(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = {"n": 0} | {m: 0 for m in METRICS}
    for r in records:
        counts["n"] += 1
        for m in METRICS:
            counts[m] += bool(r[m])
    return counts


def table(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Counts per split and language, per split and in all."""
    cells: dict[str, dict[str, int]] = {}
    for split, lang in CELLS:
        cells[f"{split}/{lang}"] = tally(
            r for r in records if r["split"] == split and r["lang"] == lang
        )
    for split in ("dev", "heldout"):
        cells[split] = tally(r for r in records if r["split"] == split)
    cells["all"] = tally(records)
    return cells


def by_pattern(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Counts per phrasing pattern (both splits), the most refused first."""
    cells = {
        p: tally(r for r in records if r["pattern"] == p) for p in {r["pattern"] for r in records}
    }
    return dict(sorted(cells.items(), key=lambda kv: (-kv[1]["refused"], kv[0])))


def pct(counts: dict[str, int], metric: str) -> float:
    return 100 * counts[metric] / counts["n"] if counts["n"] else 0.0


def miss_line(r: dict[str, Any]) -> str:
    if r.get("error"):
        what = f"error {r['error'][:80]}"
    elif r["refused"]:
        what = "refused"
    elif r["cited"] is None:
        what = "no citation"
    else:
        what = f"cited first {r['cited_title'][:60]!r}"
    search = "search 1st ok" if r["r1"] else f"search 1st {(r['top_title'] or '-')[:50]!r}"
    return f"{r['id']} {r['split']:<7} {r['pattern']:<15} {r['question']!r}: {what}; {search}"


def print_table(cells: dict[str, dict[str, int]], label: str = "") -> None:
    if label:
        print(label)
    print(f"{'':<16}{'n':>5}{'search R@1':>12}{'cited 1st':>11}{'refused':>9}")
    for name, c in cells.items():
        print(
            f"{name:<16}{c['n']:>5}{pct(c, 'r1'):>11.1f}%{pct(c, 'cited_first'):>10.1f}%"
            f"{c['refused']:>9}"
        )


def print_side_by_side(
    here: dict[str, dict[str, int]], base: dict[str, dict[str, int]], rev: str
) -> None:
    """Each cell: this tree, the baseline, and this tree / baseline (cited first and R@1)."""
    print(f"this tree vs {rev} (same questions, same run)")
    head = f"{'':<16}{'n':>5}{'R@1':>8}{rev[:8]:>9}{'ratio':>7}"
    print(f"{head}{'cited':>8}{rev[:8]:>9}{'ratio':>7}{'refused':>9}{rev[:8]:>9}")
    for name, c in here.items():
        b = base[name]
        parts = [f"{name:<16}{c['n']:>5}"]
        for m in ("r1", "cited_first"):
            ratio = pct(c, m) / pct(b, m) if pct(b, m) else float("nan")
            parts.append(f"{pct(c, m):>7.1f}%{pct(b, m):>8.1f}%{ratio:>7.2f}")
        parts.append(f"{c['refused']:>9}{b['refused']:>9}")
        print("".join(parts))


def run_baseline(rev: str, questions: Path) -> dict[str, Any]:
    """Measure `rev` in a temporary worktree with its own index (bench.baseline)."""
    from bench.baseline import git, measure_at

    measured: dict[str, Any] = measure_at(
        rev, "named_phrasings.py", ["--questions", str(questions.resolve())]
    )
    measured["commit"] = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--misses", action="store_true", help="list the questions missed")
    parser.add_argument("--baseline", metavar="REV", help="also measure REV (e.g. main)")
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)  # the baseline's records
    args = parser.parse_args()
    rows = read_questions(args.questions)
    # The baseline first: its worktree and index are built before this tree's answers run.
    base = run_baseline(args.baseline, args.questions) if args.baseline else None
    measured = measure(rows)
    if args.out:
        args.out.write_text(json.dumps(measured, ensure_ascii=False), encoding="utf-8")
        return
    cells = table(measured["records"])
    misses = [r for r in measured["records"] if not (r["cited_first"] and not r["refused"])]
    if args.json:
        report: dict[str, Any] = {"questions": str(args.questions), "cells": cells}
        report |= {"patterns": by_pattern(measured["records"])}
        report |= {"seconds": measured["seconds"], "index": measured["index"]}
        if args.misses:
            report["misses"] = misses
        if base is not None:
            report["baseline"] = {
                "rev": args.baseline,
                "commit": base["commit"],
                "cells": table(base["records"]),
                "seconds": base["seconds"],
            }
            if args.misses:
                report["baseline"]["misses"] = [
                    r for r in base["records"] if not (r["cited_first"] and not r["refused"])
                ]
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    if base is not None:
        print_side_by_side(cells, table(base["records"]), args.baseline)
        print()
    print_table(cells, f"this tree ({measured['rag']}), {len(rows)} questions")
    print(f"({measured['seconds']:.0f} s; index {measured['index']})\n")
    print_table(by_pattern(measured["records"]), "per pattern (dev and heldout)")
    if args.misses:
        print(f"\nmisses (not cited first, or refused): {len(misses)}")
        for r in sorted(misses, key=lambda r: (r["split"], r["pattern"], r["id"])):
            print("  " + miss_line(r))
        if base is not None:
            base_misses = [
                r for r in base["records"] if not (r["cited_first"] and not r["refused"])
            ]
            print(f"\n{args.baseline} misses: {len(base_misses)}")
            for r in sorted(base_misses, key=lambda r: (r["split"], r["pattern"], r["id"])):
                print("  " + miss_line(r))


if __name__ == "__main__":
    main()
