"""Write data/eval/named_questions.jsonl: questions that ask about a method by its name.

Run from the repository root (standard library only, deterministic):

    python -m bench.make_named_questions [--out data/eval/named_questions.jsonl] [--n 180]

A title of the form `NAME: ...` (or `NAME - ...`) gives a question when NAME is one word
(letters, digits, hyphens, `+`) and names that paper only: no other title of the corpus
(data/iclr2025/iclr2025.jsonl) contains it, case ignored. The papers are taken in the order
of a hash of their id (not by how well anything retrieves them), and the question forms are
dealt out in turn, one question in four in Chinese, the way a user types them (some names in
lower case, as people type them). Each row is in data/eval/questions.jsonl's format: kind
"named" (English) or "named-zh" (Chinese), a gold snippet from the paper's abstract (30-80
characters, in no other abstract) and the paper's id.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

CORPUS = Path("data/iclr2025/iclr2025.jsonl")
HEAD = re.compile(r"^\s*([^\s:]{2,40})\s*(?::|\s[-\u2013\u2014]{1,2})\s+\S")
NAME = re.compile(r"^(?=.*[A-Za-z])[A-Za-z0-9][A-Za-z0-9+\-]*$")
ENGLISH = (
    "What is {name}?",
    "Summarize {name}.",
    "How does {name} work?",
    "What is {name}?",
    "Can you summarize {name}?",
    "How does {name} work?",
    "Tell me about {name}.",
    "what is {lower}?",
    "What does {name} do?",
)
CHINESE = ("{name} 是什么？", "介绍一下 {name}", "{name} 是如何工作的？", "总结一下 {name}")
FOLD = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def normalise(text: str) -> str:
    return " ".join(text.split()).translate(FOLD).lower()


def contains_word(text: str, word: str) -> bool:
    pattern = rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def snippet(abstract: str, name: str, others: list[str]) -> str | None:
    """30-80 characters of `abstract`, preferably around its first use of `name`, that no
    other abstract contains."""
    text = " ".join(abstract.split())
    at = max(text.find(name), 0)
    for start in (at, 0, len(text) // 3, len(text) // 2):
        piece = text[start : start + 80].rsplit(" ", 1)[0] if len(text) > start + 80 else ""
        piece = piece.strip()
        if len(piece) < 30:
            continue
        folded = normalise(piece)
        if not any(folded in other for other in others):
            return piece
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/eval/named_questions.jsonl"))
    parser.add_argument("--n", type=int, default=180)
    args = parser.parse_args()
    papers = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    abstracts = {p["id"]: normalise(p["abstract"]) for p in papers}
    candidates = []
    for p in papers:
        m = HEAD.match(p["title"])
        if not m or not NAME.match(m.group(1)):
            continue
        name = m.group(1)
        if any(q["id"] != p["id"] and contains_word(q["title"], name) for q in papers):
            continue
        candidates.append((hashlib.sha256(p["id"].encode()).hexdigest(), name, p))
    candidates.sort(key=lambda c: c[0])
    rows = []
    for _, name, p in candidates:
        if len(rows) >= args.n:
            break
        others = [a for pid, a in abstracts.items() if pid != p["id"]]
        gold = snippet(p["abstract"], name, others)
        if gold is None:
            continue
        i = len(rows)
        if i % 4 == 3:
            question = CHINESE[(i // 4) % len(CHINESE)].format(name=name)
            kind = "named-zh"
        else:
            template = ENGLISH[(i - i // 4) % len(ENGLISH)]
            question = template.format(name=name, lower=name.lower())
            kind = "named"
        rows.append(
            {
                "id": f"name-{i + 1:03d}",
                "kind": kind,
                "question": question,
                "gold": [gold],
                "corpus": "iclr2025",
                "gold_ids": [p["id"]],
                "name": name,
            }
        )
    args.out.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    english = sum(r["kind"] == "named" for r in rows)
    print(f"{len(rows)} questions ({english} English, {len(rows) - english} Chinese) -> {args.out}")


if __name__ == "__main__":
    main()
