"""Short topics typed as into a search box ("consistency models"): do the first papers write
the phrase? A paper that writes only its words apart ("consistency checks for language model
forecasters") is another subject.

    python -m bench.short_topics --index DIR [--baseline REV]

`data/eval/short_topics.jsonl`: 40 topics of two to four words, written before any was run; the
first 20 tune, the other 20 (some with a frame: "any work on ...") are held out. Per topic, the
search's first 5 papers: the share whose title or abstract writes the phrase (its words in
order, each with a plural or other short ending, spaces or hyphens between), and whether the
first does. A rule over the text, not a reader's judgement: a paper may be on the topic in other
words ("Scaling LLM Test-Time Compute ..." for "test-time scaling").
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

DEFAULT = Path("data/eval/short_topics.jsonl")


def writes(text: str, phrase: str) -> bool:
    words = [w.rstrip("s") for w in re.split(r"[\s-]+", phrase.lower()) if w]
    pattern = r"\b" + r"[\s-]+".join(re.escape(w) + r"\w{0,3}" for w in words) + r"\b"
    return re.search(pattern, text.lower()) is not None


def measure(path: Path) -> dict[str, Any]:
    from rag.answer.pipeline import open_assistant
    from rag.settings import get_settings

    retriever = open_assistant(get_settings()).retriever
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    out: dict[str, Any] = {}
    for split in ("tune", "held-out"):
        shares, firsts = [], []
        for row in (r for r in rows if r["split"] == split):
            found = retriever.search(row["question"], k=5)
            hits = [writes(f"{r.paper.title} {r.paper.abstract}", row["phrase"]) for r in found]
            shares.append(sum(hits) / max(len(hits), 1))
            firsts.append(bool(hits and hits[0]))
        out[split] = {
            "top5": 100 * sum(shares) / len(shares),
            "first": sum(firsts),
            "n": len(firsts),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="the index folder (store.index_dir)")
    parser.add_argument("--questions", type=Path, default=DEFAULT)
    parser.add_argument("--baseline", help="a git revision measured beside this tree")
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.index:
        import os

        os.environ["RAG_STORE__INDEX_DIR"] = str(args.index)
    if args.out:  # a baseline's run (bench.baseline)
        args.out.write_text(json.dumps(measure(args.questions.resolve())), encoding="utf-8")
        return
    columns = {"this tree": measure(args.questions)}
    if args.baseline:
        from bench.baseline import measure_at

        where = ["--questions", str(args.questions.resolve())]
        columns[args.baseline] = measure_at(args.baseline, "short_topics.py", where)
    for name, result in columns.items():
        cells = [
            f"{split}: top 5 write it {r['top5']:.1f}%, first writes it {r['first']}/{r['n']}"
            for split, r in result.items()
        ]
        print(f"{name:>12}  " + " | ".join(cells))


if __name__ == "__main__":
    main()
