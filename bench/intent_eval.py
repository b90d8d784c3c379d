"""How the assistant reads what a question asks, on questions written the way users type them.

    python -m bench.intent_eval --index DIR [--questions data/eval/intent_questions.jsonl]
                                [--misses]

`data/eval/intent_questions.jsonl` (120 questions, 35% Chinese, written by a helper who saw no
code nor result; a dev and a held-out half) labels each question with what it asks: a list of
papers, a count, a person's papers, a paper's authors, a paper's tier, or an answer about one
paper or a topic; the tier filter it states; the number of papers it asks for. Each question is
answered offline, as the page answers it, and the answer is read back:

- kind: a count by the counting rule it states; a person's papers, authors or tier answer by
  the record message it opens with; a list by its judge's "checked N, M match" note; else an
  answer ("one_paper" and "topic" are one kind here: which papers belong is the judge's,
  measured elsewhere);
- tiers: the tier filter the answer says it applied;
- number: the number of papers the question was read to ask for (`Intent.asked.number`).

`--misses` prints the dev halves' misses only (splits "dev", "fresh-dev"); the held-out halves
are reported, never printed. Questions 121-144 (split "fresh-*", 2026-12-05) were written
later, before their results were seen: a person no accepted paper lists as an author ("papers
by Tri Dao"), and a list question after a preamble ("I'm new to GNNs. Which papers ...").

`--questions data/eval/intent_questions_new.jsonl` (112 questions, 16 per kind, 6 of them
Chinese; 2026-12-06) was written the same way, later, by a helper who saw no code, result nor
earlier set: splits "new-dev" and "new-heldout" (odd and even ids).
`data/eval/intent_questions_more.jsonl` (112 more, the same day, other styles: search-box
queries, polite and indirect asks, long messages): "more-dev" and "more-heldout".
`data/eval/intent_questions_late.jsonl` (112 more, a fifth helper, the same rules; the venue
and its logistics in the question, context first, names in lower case or mistyped, markdown
noise): "late-dev" and "late-heldout".
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from rag.answer.pipeline import CitedAnswer, answer, open_assistant
from rag.lang.intent import understand
from rag.lang.messages import MESSAGES
from rag.settings import get_settings

DEFAULT = Path("data/eval/intent_questions.jsonl")
ANSWER = "answer"  # one_paper and topic


def opens(text: str, *keys: str) -> bool:
    """The answer opens with one of the fixed messages `keys` (either language)."""
    for fixed in MESSAGES.values():
        for key in keys:
            head = fixed.get(key, "").split("{", 1)[0]
            if head and text.startswith(head):
                return True
    return False


def read_back(result: CitedAnswer) -> str:
    """The kind of answer the assistant gave."""
    text = result.answer
    if any(fixed["count_rule"].split("{", 1)[0] in text for fixed in MESSAGES.values()):
        return "count"  # its counting rule is said
    if opens(text, "by_person", "by_person_none", "no_author"):
        return "person"
    if opens(text, "authors_of"):
        return "authors"
    if opens(text, "tier_yes", "tier_no", "tier_is", "tier_unknown"):
        return "tier_question"
    if result.judge_note:
        return "list"
    return ANSWER


def filtered(result: CitedAnswer) -> list[str]:
    """The tiers the answer says it filtered by ("Filtered by the tier ...: Oral, Spotlight.")."""
    note = result.scope_note
    for fixed in MESSAGES.values():
        head, _, tail = fixed["tier_filter"].partition("{tiers}")
        if head in note:
            said = note.split(head, 1)[1].split(tail, 1)[0] if tail else note.split(head, 1)[1]
            return sorted(t.strip() for t in said.split(","))
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=DEFAULT)
    parser.add_argument("--misses", action="store_true", help="print the dev half's misses")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.questions.read_text("utf-8").splitlines() if line]
    settings = get_settings(
        "offline", {"store": {"index_dir": str(args.index)}, "llm": {"model": "offline"}}
    )
    assistant = open_assistant(settings)
    tally: dict[str, Counter[str]] = {}
    for row in rows:
        result = answer(row["question"], assistant=assistant)
        wanted = ANSWER if row["kind"] in ("one_paper", "topic") else row["kind"]
        got: dict[str, Any] = {
            "kind": read_back(result),
            "tiers": filtered(result),
            "number": understand(row["question"]).asked.number,
        }
        gold = {"kind": wanted, "tiers": sorted(row["tiers"]), "number": row["number"]}
        count = tally.setdefault(row["split"], Counter())
        count["n"] += 1
        for field in gold:
            count[field] += got[field] == gold[field]
        count["all"] += got == gold
        if args.misses and row["split"].endswith("dev") and got != gold:
            print(f"  {row['id']} {row['question']!r}\n      gold {gold}\n      got  {got}")
    print(f"{'split':<14} {'n':>4} {'kind':>6} {'tiers':>6} {'number':>7} {'all':>6}")
    for split, count in sorted(tally.items()):
        n = count["n"]
        shares = [100 * count[f] / n for f in ("kind", "tiers", "number", "all")]
        print(f"{split:<14} {n:>4} " + " ".join(f"{s:>6.1f}" for s in shares))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
