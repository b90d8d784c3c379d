"""The reader-judged gold of the list questions (data/eval/list_relevance.jsonl, read by
`bench.list_precision --gold read`): every question judged, every paper of its rule-made gold
set among those read, each (question, paper) judged once, every paper in the index."""

from __future__ import annotations

import json
from pathlib import Path

from bench.list_precision import READ, read_gold, score

QUESTIONS = Path("data/eval/list_questions.jsonl")


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]


def test_every_question_and_its_rule_gold_was_read_once() -> None:
    judged = lines(READ)
    pairs = [(str(j["qid"]), str(j["id"])) for j in judged]
    assert len(pairs) == len(set(pairs)), "a paper judged twice for one question"
    assert all(isinstance(j["relevant"], bool) and j["reason"] for j in judged)
    read = {}
    for qid, pid in pairs:
        read.setdefault(qid, set()).add(pid)
    for row in lines(QUESTIONS):
        assert set(row["gold_ids"]) <= read[str(row["id"])], row["id"]  # type: ignore[arg-type]
    gold = read_gold(READ)
    assert set(gold) == {str(row["id"]) for row in lines(QUESTIONS)}
    assert all(gold.values()), "a question with no relevant paper"


def test_every_judged_paper_is_in_the_corpus() -> None:
    ids = {
        json.loads(t)["id"]
        for name in ("iclr2025.jsonl", "iclr2025_accepted_no_abstract.jsonl")
        for t in Path("data/iclr2025", name).read_text(encoding="utf-8").splitlines()
        if t.strip()
    }
    # The rest are papers of the bundled seed files ("003_4ff9ec978693024e-006": its 6th paper).
    others = {str(j["id"]) for j in lines(READ)} - ids
    for pid in others:
        stem = pid.rsplit("-", 1)[0]
        assert Path("data/iclr2025", f"{stem}.txt").is_file(), pid


def test_scores_with_an_empty_gold_set_do_not_divide_by_zero() -> None:
    assert score({"a"}, set(), 10) == (0.0, 1.0)
    assert score({"a", "b"}, {"a"}, 10) == (0.5, 1.0)
