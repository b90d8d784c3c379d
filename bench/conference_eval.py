"""The whole conference and its people (issue 30): title records, authors and tier words.

    RAG_STORE__INDEX_DIR=/path/to/index python -m bench.conference_eval [--misses] [--json]

`--misses` prints the missed questions of the tuning halves only: held-out misses stay unseen.

Three question sets, each split into a tuning half and a held-out half reported apart:

- data/eval/no_abstract_questions.jsonl: a paper without an abstract in the corpus, asked by
  its name, its exact title, or described in other words. R@1 of `rag search`; "cited first":
  the offline answer cites it first. Besides each split, the dev and held-out halves are
  reported by how the question asks (`how_asked`, read from the question and the record's
  title, not from any result): by name or exact title (issue 30's target) or described.
- data/eval/author_questions.jsonl: "papers by X". The gold set is every indexed paper whose
  recorded authors include X. R-precision of `rag search` (top R = the gold count, up to
  retrieval.k); recall of the offline answer's citations (up to retrieval.k) and their
  precision (nothing else cited).
- data/eval/tier_questions.jsonl: a tier word ("oral papers on ..."). The share of the
  offline answer's sources with that tier.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import unicodedata
from pathlib import Path
from typing import Any

from rag.answer.pipeline import answer, open_assistant
from rag.settings import get_settings

EVAL = Path("data/eval")


def rows(name: str) -> list[dict[str, Any]]:
    text = (EVAL / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def add(stats: dict[str, dict[str, float]], split: str, **values: float) -> None:
    s = stats.setdefault(split, {"n": 0})
    s["n"] += 1
    for key, value in values.items():
        s[key] = s.get(key, 0.0) + value


# Where a title's name ends: "KAN: Kolmogorov-Arnold Networks", "SONICS - Identifying ...".
_NAME_END = re.compile(r"\s*:\s+|:(?=[A-Z])|\s+[-\u2013\u2014]{1,2}\s+")


def _plain(text: str) -> str:
    """`text` folded for comparison: case, accents and punctuation dropped."""
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(c for c in text if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w]+", " ", text).split())


def how_asked(question: str, title: str) -> str:
    """ "title" when the question writes the whole title, "name" when it writes the title's
    name (its part before ": ", as whole words), else "described" (other words, a part of the
    title, a paraphrase)."""
    said, whole = f" {_plain(question)} ", _plain(title)
    if whole and f" {whole} " in said:
        return "title"
    parts = _NAME_END.split(title)
    name = _plain(parts[0])
    return "name" if len(parts) > 1 and name and f" {name} " in said else "described"


def shown(row: dict[str, Any]) -> bool:
    """A miss `--misses` may print: a held-out question's stays unseen, so that its half
    measures phrasings no rule was fitted on."""
    return "heldout" not in str(row.get("split", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--misses", action="store_true", help="print the questions missed (not held-out ones)"
    )
    args = parser.parse_args()
    os.environ.setdefault("RAG_LLM__MODEL", "offline")
    assistant = open_assistant(get_settings())
    k = assistant.settings.retrieval.k
    authors: dict[str, set[str]] = {}
    for paper in assistant.retriever.index.all_papers():
        for name in paper.authors:
            authors.setdefault(name, set()).add(paper.id)
    started = time.perf_counter()
    report: dict[str, dict[str, dict[str, float]]] = {
        "no_abstract": {},
        "no_abstract_asked": {},
        "authors": {},
        "tiers": {},
    }
    asked_ids = {row["id"] for row in rows("no_abstract_questions.jsonl")}
    records = assistant.retriever.index.get_papers(sorted(asked_ids))
    for row in rows("no_abstract_questions.jsonl"):
        found = assistant.retriever.search(row["question"], k=10)
        result = answer(row["question"], assistant=assistant)
        r1 = bool(found) and found[0].paper.id == row["id"]
        first = result.citations[0].paper_id if result.citations else None
        add(report["no_abstract"], row["split"], r1=r1, cited_first=first == row["id"])
        half = "heldout" if "heldout" in row["split"] else "dev"
        how = how_asked(row["question"], records[row["id"]].title)
        for kind in (how, "name|title" if how != "described" else ""):
            if kind:
                add(
                    report["no_abstract_asked"],
                    f"{half} {kind}",
                    r1=r1,
                    cited_first=first == row["id"],
                )
        if args.misses and not (r1 and first == row["id"]) and shown(row):
            top = found[0].paper.title[:50] if found else "-"
            print(f"MISS {row['question']!r}: top {top!r}, cited first {first}")
    for row in rows("author_questions.jsonl"):
        gold = authors.get(row["author"], set())
        r = min(len(gold), k)
        found = assistant.retriever.search(row["question"], k=max(r, 1))
        rprec = len({f.paper.id for f in found[:r]} & gold) / r if r else 0.0
        result = answer(row["question"], assistant=assistant)
        cited = {c.paper_id for c in result.citations}
        recall = len(cited & gold) / r if r else 0.0
        precision = len(cited & gold) / len(cited) if cited else 0.0
        add(report["authors"], row["split"], r_precision=rprec, recall=recall, precision=precision)
        if args.misses and min(rprec, recall, precision) < 1 and shown(row):
            print(
                f"MISS {row['question']!r}: R-prec {rprec:.2f} "
                f"recall {recall:.2f} P {precision:.2f}"
            )
    for row in rows("tier_questions.jsonl"):
        result = answer(row["question"], assistant=assistant)
        listed = [s.paper for s in result.sources]
        share = sum(p.tier == row["tier"] for p in listed) / len(listed) if listed else 0.0
        add(report["tiers"], row["split"], tier_share=share, answered=not result.abstained)
        if args.misses and share < 1 and shown(row):
            print(f"MISS {row['question']!r}: {share:.2f} of {len(listed)} with {row['tier']}")
    seconds = time.perf_counter() - started
    figures = {
        part: {
            split: {key: (v if key == "n" else round(v / s["n"], 3)) for key, v in s.items()}
            for split, s in splits.items()
        }
        for part, splits in report.items()
    }
    if args.json:
        print(json.dumps({"figures": figures, "seconds": round(seconds, 1)}, indent=2))
        return
    for part, splits in figures.items():
        for split, values in sorted(splits.items(), reverse=True):
            figures_shown = "  ".join(f"{key} {value}" for key, value in values.items())
            print(f"{part:<18}{split:<20}{figures_shown}")
    print(f"({seconds:.0f} s)")


if __name__ == "__main__":
    main()
