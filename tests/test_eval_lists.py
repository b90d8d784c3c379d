"""`rag eval`'s list questions (rag.evaluation.lists): precision and recall at 5 and 10."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.errors import LoadError
from rag.evaluation.lists import ListQuestion, format_lists, load_list_questions, score_lists
from rag.settings import EVAL_DATA


def test_precision_and_recall_count_the_papers_listed_against_min_gold_k() -> None:
    gold = frozenset(f"g{i}" for i in range(12))
    questions = [ListQuestion("a", "Which papers?", gold), ListQuestion("b", "Any work?", gold)]
    lists = {"Which papers?": ["g0", "x", "g1", "g2"], "Any work?": [f"g{i}" for i in range(12)]}
    scores = score_lists(lambda question, k: lists[question][:k], questions)
    # a: 3 of 4 listed are gold at both depths; recall 3/5 and 3/10. b: all gold, 5/5, 10/10.
    assert scores.precision(5) == pytest.approx((3 / 4 + 1) / 2)
    assert scores.recall(5) == pytest.approx((3 / 5 + 1) / 2)
    assert scores.recall(10) == pytest.approx((3 / 10 + 1) / 2)
    assert scores.as_dict()["n"] == 2
    text = "\n".join(format_lists([("hybrid", scores)], "lists.jsonl"))
    assert "P@5" in text and "R@10" in text and f"{100 * scores.precision(10):.1f}" in text


def test_an_empty_list_has_precision_zero_not_an_error() -> None:
    question = ListQuestion("a", "Which papers?", frozenset({"g"}))
    scores = score_lists(lambda question, k: [], [question])
    assert (scores.precision(5), scores.recall(5)) == (0.0, 0.0)


def test_the_shipped_list_questions_load(tmp_path: Path) -> None:
    rows = load_list_questions(EVAL_DATA / "list_questions.jsonl")
    assert len(rows) >= 15 and all(r.gold for r in rows)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "Which papers?", "gold_ids": []}) + "\n")
    with pytest.raises(LoadError, match="gold_ids"):
        load_list_questions(bad)
