"""Write data/eval/named_phrasings.jsonl: named-paper questions in the phrasings users type.

Run from the repository root (standard library only, deterministic):

    python -m bench.make_phrasing_questions [--out data/eval/named_phrasings.jsonl]

Issue 29: a set written before anything was measured on it. The papers are the bundled corpus
(data/iclr2025/iclr2025.jsonl, all with abstracts) whose title is `NAME: ...`, NAME one token
(letters, digits, `+`, at most one hyphen, at most 20 characters) that no other title of the
corpus or of its title records (iclr2025_accepted_no_abstract.jsonl) contains and that at most
two other abstracts use as a word (case ignored: "GReaTer" is also "greater"). Left out: the
papers of data/eval/named_questions.jsonl and of the user examples of issue 29 (SymmCD,
BodyGen, MR-GSM8K, FlexPrefill). From what is left a fixed seed draws the papers (not chosen
by how anything retrieves them), a second draw splits them half "dev", half "heldout" (by
paper: one question per paper), and in each half every phrasing pattern gets the same number
of papers; a pattern's wording is one of its variants, drawn too. Ten English patterns and
seven Chinese ones: 41% of the questions are in Chinese.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

CORPUS = Path("data/iclr2025/iclr2025.jsonl")
TITLE_RECORDS = Path("data/iclr2025/iclr2025_accepted_no_abstract.jsonl")
OLD_SET = Path("data/eval/named_questions.jsonl")
ISSUE_EXAMPLES = ("SymmCD", "BodyGen", "MR-GSM8K", "FlexPrefill")
SEED = 29
PER_PATTERN_PER_SPLIT = 4
MAX_OTHER_ABSTRACTS = 2

HEAD = re.compile(r"^\s*([^\s:]{2,40})\s*:\s+\S")
NAME = re.compile(r"^(?=.*[A-Za-z])[A-Za-z0-9][A-Za-z0-9+]*(?:-[A-Za-z0-9+]+)?$")

# pattern -> (language, wordings). {name} as in the title, {lower} in lower case.
PATTERNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "poster": (
        "en",
        (
            "Stopped by the {name} poster at ICLR, what was their main finding?",
            "I saw a poster about {name} — what did they show?",
            "saw the {name} poster yesterday, what's the headline result?",
        ),
    ),
    "simple": (
        "en",
        (
            "explain {name} in plain language",
            "Can you explain {name} like I'm a first-year student?",
            "{name} in simple terms please",
        ),
    ),
    "typo": (
        "en",
        (
            "whats teh idea behind {lower}",
            "wat does {lower} actualy do",
            "how dose {lower} work",
            "can u explian {lower}",
        ),
    ),
    "in-sentence": (
        "en",
        (
            "my advisor mentioned {name} yesterday, is it worth reading for my thesis?",
            "A labmate keeps bringing up {name} in group meeting; what is it actually about?",
            "I have to present {name} at our reading group on Friday, what are the key points?",
        ),
    ),
    "vs-prior": (
        "en",
        (
            "{name} vs prior work?",
            "How does {name} compare to previous methods?",
            "what's new in {name} compared to earlier approaches?",
        ),
    ),
    "tldr": ("en", ("tl;dr of {name}", "{name} tl;dr?", "tldr {name} pls")),
    "problem": (
        "en",
        (
            "what problem does {name} solve",
            "What problem is {name} trying to address?",
            "why was {name} needed?",
        ),
    ),
    "evaluation": (
        "en",
        (
            "how is {name} evaluated",
            "How did the authors evaluate {name}?",
            "what experiments back up {name}?",
        ),
    ),
    "datasets": (
        "en",
        (
            "what datasets does {name} use",
            "Which benchmarks is {name} tested on?",
            "what data was {name} trained or evaluated on?",
        ),
    ),
    "bare": ("en", ("{name}?", "{name} paper", "anything on {name}")),
    "zh-contribution": (
        "zh",
        (
            "{name} 这篇论文的主要贡献是什么？",
            "{name}的核心贡献有哪些？",
            "{name} 主要做出了什么贡献",
        ),
    ),
    "zh-how": (
        "zh",
        ("{name} 是怎么做的", "{name}具体是怎么实现的？", "{name} 的方法原理是什么"),
    ),
    "zh-intro": (
        "zh",
        ("请介绍一下 {name} 这篇论文", "帮我简单介绍下{name}", "能讲讲 {name} 吗？"),
    ),
    "zh-datasets": (
        "zh",
        (
            "{name} 用了什么数据集？",
            "{name}在哪些数据集上做的实验？",
            "{name} 的实验用的是哪些 benchmark",
        ),
    ),
    "zh-results": (
        "zh",
        ("{name} 的实验结果如何", "{name}效果怎么样？", "{name} 比基线好多少？"),
    ),
    "zh-problem": (
        "zh",
        ("{name} 想解决什么问题？", "{name}针对的是什么问题", "为什么要提出 {name}？"),
    ),
    "zh-vs-prior": (
        "zh",
        (
            "{name} 和之前的方法相比有什么优势？",
            "{name}跟已有工作有什么区别？",
            "{name} 相比现有方法新在哪里",
        ),
    ),
}


def read_jsonl(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def word_in(word: str, texts: list[tuple[str, str]]) -> int:
    """How many of `texts` (each with its lower case) hold `word` as a word, case ignored."""
    folded = word.lower()
    pattern = re.compile(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", re.IGNORECASE)
    return sum(folded in lower and pattern.search(text) is not None for text, lower in texts)


def candidates(papers: list[dict], titles_only: list[dict], left_out: set[str]) -> list[dict]:
    """The papers with a one-token name before the colon of their title that names them only."""
    titles = [(p["title"], p["title"].lower()) for p in papers + titles_only]
    abstracts = {p["id"]: (p["abstract"] or "", (p["abstract"] or "").lower()) for p in papers}
    found = []
    for p in papers:
        m = HEAD.match(p["title"])
        if not p.get("abstract") or not m or not NAME.match(m.group(1)) or len(m.group(1)) > 20:
            continue
        name = m.group(1)
        if p["id"] in left_out or name in ISSUE_EXAMPLES:
            continue
        others = [text for pid, text in abstracts.items() if pid != p["id"]]
        # Its own title holds it; no other title may, and only a few other abstracts.
        if word_in(name, titles) > 1 or word_in(name, others) > MAX_OTHER_ABSTRACTS:
            continue
        found.append({"id": p["id"], "name": name})
    return sorted(found, key=lambda c: c["id"])


def build(papers: list[dict], titles_only: list[dict], left_out: set[str]) -> list[dict]:
    rng = random.Random(SEED)
    per_split = PER_PATTERN_PER_SPLIT * len(PATTERNS)
    drawn = rng.sample(candidates(papers, titles_only, left_out), 2 * per_split)
    rng.shuffle(drawn)
    rows = []
    for split, chosen in (("dev", drawn[:per_split]), ("heldout", drawn[per_split:])):
        patterns = [p for p in PATTERNS for _ in range(PER_PATTERN_PER_SPLIT)]
        rng.shuffle(patterns)
        for paper, pattern in zip(chosen, patterns, strict=True):
            lang, wordings = PATTERNS[pattern]
            name = paper["name"]
            question = rng.choice(wordings).format(name=name, lower=name.lower())
            rows.append(
                {
                    "question": question,
                    "gold_id": paper["id"],
                    "name": name,
                    "lang": lang,
                    "pattern": pattern,
                    "split": split,
                }
            )
    return [{"id": f"phr-{i:03d}", **row} for i, row in enumerate(rows, start=1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/eval/named_phrasings.jsonl"))
    args = parser.parse_args()
    left_out = {g for row in read_jsonl(OLD_SET) for g in row["gold_ids"]}
    rows = build(read_jsonl(CORPUS), read_jsonl(TITLE_RECORDS), left_out)
    args.out.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    chinese = sum(r["lang"] == "zh" for r in rows)
    print(
        f"{len(rows)} questions ({len(rows) - chinese} English, {chinese} Chinese), "
        f"{len(PATTERNS)} patterns -> {args.out}"
    )


if __name__ == "__main__":
    main()
