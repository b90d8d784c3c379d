"""Validate the labelled question sets used to evaluate retrieval and answering.

Run from the repository root:

    python -m bench.check_questions

It reads the bundled corpus (``data/iclr2025/iclr2025.jsonl`` and the seed files
``data/iclr2025/*.txt``) and checks:

* ``data/eval/questions.jsonl``: one JSON object per line, unique ids, required
  fields, minimum count per kind, at least 40 questions on the seed abstracts,
  and gold snippets (see below);
* ``data/eval/ask_questions.jsonl``: the same per-question checks, at least 20
  answerable questions (10 or more on the ICLR 2025 corpus) and 10 unanswerable;
* ``tests/data/seed_questions.jsonl``: 15 paraphrase and 10 tail questions whose
  gold snippets come from the seed paragraphs;
* ``tests/data/seed_unanswerable.jsonl``: at least 20 questions, each with the terms
  searched for in the seed abstracts and how many abstracts contain each.

A gold snippet must be 30-80 characters, an exact substring (after collapsing
whitespace) of its paper's abstract, and occur in exactly one distinct paper.
Texts are compared with whitespace collapsed, typographic quotes folded to
ASCII and case ignored. A seed paragraph and a corpus abstract count as the
same paper when one contains the first 200 characters of the other. Tail
questions need ``tail_snippet_offset_ratio`` >= 0.66 (snippet start / abstract
length, in every copy of the abstract). Unanswerable questions need an empty
``gold`` and a ``checked`` list of the terms searched for.

It prints the counts per kind for each file and exits non-zero on any problem.
Only the standard library is used.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "iclr2025"
EVAL = REPO / "data" / "eval"
TEST_DATA = REPO / "tests" / "data"

KINDS = ("keyword", "paraphrase", "tail", "multi", "unanswerable", "chinese")
MINIMUMS = {
    "keyword": 35,
    "paraphrase": 40,
    "tail": 30,
    "multi": 15,
    "unanswerable": 20,
    "chinese": 10,
}
MIN_TOTAL = 170
MIN_SEED_QUESTIONS = 40
SNIPPET_LEN = (30, 80)
TAIL_MIN_RATIO = 0.66
CHINESE_STYLES = ("with_english_term", "pure_chinese", "translated_paraphrase")

_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})


def norm(text: str) -> str:
    """Collapse runs of whitespace."""
    return re.sub(r"\s+", " ", text).strip()


def fold(text: str) -> str:
    """Normalised form used to compare texts: whitespace, quotes, case."""
    return norm(text).translate(_QUOTES).lower()


class Corpus:
    """Abstracts grouped into distinct papers (seed copies merged)."""

    def __init__(self, data: Path):
        self.papers: list[dict] = []  # {"ids": set, "texts": [raw], "folded": [..], "seed": bool}
        by_id: dict[str, int] = {}
        with open(data / "iclr2025.jsonl", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                text = norm(rec["abstract"])
                by_id[rec["id"]] = len(self.papers)
                self.papers.append(
                    {"ids": {rec["id"]}, "texts": [text], "folded": [fold(text)], "seed": False}
                )
        n_corpus = len(self.papers)
        for path in sorted(data.glob("*.txt")):
            body = path.read_text(encoding="utf-8").split("\n", 1)[1]  # drop header line
            paras = [norm(p) for p in re.split(r"\n\s*\n", body) if p.strip()]
            for i, para in enumerate(paras):
                ref = f"seeds/{path.name}#{i}"
                fp = fold(para)
                match = next(
                    (
                        j
                        for j in range(n_corpus)
                        if self.papers[j]["folded"][0][:200] in fp
                        or fp[:200] in self.papers[j]["folded"][0]
                    ),
                    None,
                )
                if match is None:
                    match = len(self.papers)
                    self.papers.append({"ids": set(), "texts": [], "folded": [], "seed": True})
                paper = self.papers[match]
                paper["ids"].add(ref)
                paper["texts"].append(para)
                paper["folded"].append(fp)
                paper["seed"] = True
        self.n_corpus = n_corpus

    def papers_with(self, snippet: str) -> list[int]:
        fs = fold(snippet)
        return [i for i, p in enumerate(self.papers) if any(fs in t for t in p["folded"])]


def check_question(rec: dict, corpus: Corpus, problems: list[str]) -> None:
    qid = rec.get("id", "?")

    def bad(msg: str) -> None:
        problems.append(f"{qid}: {msg}")

    for field in ("id", "kind", "question", "gold"):
        if field not in rec:
            bad(f"missing field {field!r}")
            return
    kind, gold = rec["kind"], rec["gold"]
    if kind not in KINDS:
        bad(f"unknown kind {kind!r}")
        return
    if not isinstance(rec["question"], str) or not rec["question"].strip():
        bad("empty question")
    if not isinstance(gold, list):
        bad("gold is not a list")
        return

    if kind == "unanswerable":
        if gold:
            bad("unanswerable question has gold snippets")
        if not rec.get("checked"):
            bad("unanswerable question without 'checked' terms")
        return

    if rec.get("corpus") not in ("seeds", "iclr2025"):
        bad("'corpus' must be 'seeds' or 'iclr2025'")
    expected = (2, 4) if kind == "multi" else (1, 1)
    if not expected[0] <= len(gold) <= expected[1]:
        bad(f"{kind} needs {expected[0]}-{expected[1]} gold snippets, has {len(gold)}")
    if kind == "chinese" and rec.get("style") not in CHINESE_STYLES:
        bad(f"chinese question needs style in {CHINESE_STYLES}")
    gold_ids = rec.get("gold_ids")
    if gold_ids is not None and len(gold_ids) != len(gold):
        bad("gold_ids and gold differ in length")

    seen: set[int] = set()
    for n, snippet in enumerate(gold):
        if not isinstance(snippet, str):
            bad("gold snippet is not a string")
            continue
        if not SNIPPET_LEN[0] <= len(snippet) <= SNIPPET_LEN[1]:
            bad(f"snippet length {len(snippet)} outside {SNIPPET_LEN}: {snippet!r}")
        hits = corpus.papers_with(snippet)
        if len(hits) != 1:
            bad(f"snippet found in {len(hits)} papers: {snippet!r}")
            continue
        paper = corpus.papers[hits[0]]
        exact = [t for t in paper["texts"] if norm(snippet) in t]
        if not exact:
            bad(f"snippet is not an exact substring: {snippet!r}")
            continue
        if hits[0] in seen:
            bad(f"two snippets point to the same paper: {snippet!r}")
        seen.add(hits[0])
        if gold_ids is not None and gold_ids[n] not in paper["ids"]:
            bad(f"gold_ids[{n}]={gold_ids[n]!r} does not match the snippet's paper")
        if rec.get("corpus") == "seeds" and kind != "multi" and not paper["seed"]:
            bad("corpus is 'seeds' but the gold paper is not a seed abstract")
        if kind == "tail":
            if len(exact[0]) < 1300:
                bad(f"tail abstract is short ({len(exact[0])} chars)")
            ratios = [t.find(norm(snippet)) / len(t) for t in exact]
            declared = rec.get("tail_snippet_offset_ratio")
            if not isinstance(declared, (int, float)):
                bad("tail question without numeric tail_snippet_offset_ratio")
            else:
                if declared < TAIL_MIN_RATIO:
                    bad(f"tail_snippet_offset_ratio {declared} < {TAIL_MIN_RATIO}")
                if not any(abs(declared - r) <= 0.01 for r in ratios):
                    bad(f"tail_snippet_offset_ratio {declared} != measured {ratios}")
            if min(ratios) < TAIL_MIN_RATIO:
                bad(f"snippet starts at ratio {min(ratios):.3f} in a copy of the abstract")


def load_jsonl(path: Path, problems: list[str]) -> list[dict]:
    records = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                problems.append(f"line {lineno}: empty line")
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"line {lineno}: invalid JSON ({exc})")
                continue
            if not isinstance(rec, dict):
                problems.append(f"line {lineno}: not a JSON object")
                continue
            records.append(rec)
    ids = Counter(r.get("id") for r in records)
    problems.extend(f"duplicate id {i!r}" for i, c in ids.items() if c > 1)
    return records


def shown(path: Path) -> str:
    """`path` relative to the repository when it is inside it."""
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def check_file(path: Path, corpus: Corpus, problems: list[str]) -> list[dict]:
    local: list[str] = []
    records = load_jsonl(path, local)
    for rec in records:
        check_question(rec, corpus, local)
    problems.extend(f"{shown(path)}: {p}" for p in local)
    counts = Counter(r.get("kind") for r in records)
    seeds = sum(1 for r in records if r.get("corpus") == "seeds")
    print(f"{shown(path)}: {len(records)} questions, {seeds} on seed abstracts")
    for kind in KINDS:
        if counts.get(kind):
            print(f"  {kind:13s} {counts[kind]}")
    return records


def check_sets(
    eval_dir: Path = EVAL, test_data: Path = TEST_DATA, corpus: Corpus | None = None
) -> list[str]:
    """Every problem of the labelled sets in `eval_dir` and `test_data`, against `corpus`
    (by default the bundled one, data/iclr2025); empty when all is well."""
    corpus = corpus or Corpus(DATA)
    problems: list[str] = []

    questions = check_file(eval_dir / "questions.jsonl", corpus, problems)
    counts = Counter(r.get("kind") for r in questions)
    for kind, minimum in MINIMUMS.items():
        if counts.get(kind, 0) < minimum:
            problems.append(f"questions.jsonl: {counts.get(kind, 0)} {kind} < {minimum}")
    if len(questions) < MIN_TOTAL:
        problems.append(f"questions.jsonl: {len(questions)} questions < {MIN_TOTAL}")
    n_seed = sum(1 for r in questions if r.get("corpus") == "seeds")
    if n_seed < MIN_SEED_QUESTIONS:
        problems.append(f"questions.jsonl: {n_seed} seed questions < {MIN_SEED_QUESTIONS}")
    styles = Counter(r.get("style") for r in questions if r.get("kind") == "chinese")
    if min(styles.get(s, 0) for s in CHINESE_STYLES) < MINIMUMS["chinese"] // 2:
        problems.append(f"questions.jsonl: unbalanced chinese styles {dict(styles)}")

    ask = check_file(eval_dir / "ask_questions.jsonl", corpus, problems)
    answerable = [r for r in ask if r.get("kind") != "unanswerable"]
    if len(answerable) < 20 or sum(r.get("corpus") == "iclr2025" for r in answerable) < 10:
        problems.append("ask_questions.jsonl: needs 20 answerable, 10+ on iclr2025")
    if len(ask) - len(answerable) < 10:
        problems.append("ask_questions.jsonl: needs 10 unanswerable questions")

    seed_qs = check_file(test_data / "seed_questions.jsonl", corpus, problems)
    seed_counts = Counter(r.get("kind") for r in seed_qs)
    if seed_counts != Counter({"paraphrase": 15, "tail": 10}):
        problems.append(
            f"seed_questions.jsonl: expected 15 paraphrase + 10 tail, got {dict(seed_counts)}"
        )
    for rec in seed_qs:
        for snippet in rec.get("gold", []):
            hits = corpus.papers_with(snippet)
            if not (hits and corpus.papers[hits[0]]["seed"]):
                problems.append(
                    f"seed_questions.jsonl: {rec.get('id')}: gold not in a seed paragraph"
                )

    seed_zh = check_file(test_data / "seed_questions_zh.jsonl", corpus, problems)
    for rec in seed_zh:
        if rec.get("kind") != "chinese" or any(
            c.isascii() and c.isalpha() for c in rec["question"]
        ):
            problems.append(f"seed_questions_zh.jsonl: {rec.get('id')}: not in Chinese only")
        for snippet in rec.get("gold", []):
            hits = corpus.papers_with(snippet)
            if not (hits and corpus.papers[hits[0]]["seed"]):
                problems.append(
                    f"seed_questions_zh.jsonl: {rec.get('id')}: gold not in a seed paragraph"
                )

    unanswerable = load_jsonl(test_data / "seed_unanswerable.jsonl", problems)
    print(f"{shown(test_data / 'seed_unanswerable.jsonl')}: {len(unanswerable)} questions")
    if len(unanswerable) < 20:
        problems.append(
            f"seed_unanswerable.jsonl: expected >= 20 questions, got {len(unanswerable)}"
        )
    seed_texts = [" ".join(p["texts"]).lower() for p in corpus.papers if p["seed"]]
    for rec in unanswerable:
        for term, hits in rec.get("checked", {}).items():
            found = sum(term.lower() in t for t in seed_texts)
            if found != hits:
                problems.append(
                    f"seed_unanswerable.jsonl: {rec['id']}: '{term}' in {found} seed "
                    f"abstracts, recorded {hits}"
                )
    return problems


def main() -> int:
    problems = check_sets()
    for problem in problems:
        print("PROBLEM:", problem, file=sys.stderr)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
