"""The labelled question sets (data/eval/, tests/data/) pass bench.check_questions, and the
checker finds what a broken set gets wrong (a copy with one fault each, never the originals)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.check_questions import DATA, EVAL, TEST_DATA, Corpus, check_sets
from tests.helpers import read_jsonl


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(DATA)


@pytest.mark.slow
def test_the_labelled_sets_pass_the_checker(
    corpus: Corpus, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check_sets(corpus=corpus) == []
    out = capsys.readouterr().out
    for name in ("questions.jsonl", "ask_questions.jsonl", "seed_questions.jsonl"):
        assert f"{name}: " in out


def first(kind: str) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    return lambda rows: next(r for r in rows if r["kind"] == kind)


def set_field(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda row: row.__setitem__(name, value)


def shift_snippet(row: dict[str, Any]) -> None:
    row["gold"][0] = row["gold"][0][:-3] + "zzz"  # no abstract holds it any more


def duplicate_id(rows: list[dict[str, Any]]) -> None:
    rows.append(dict(rows[0]))


# (file, which row, what to break in it (None: the break is on the rows), the problem said)
BREAKS = [
    ("questions.jsonl", first("paraphrase"), shift_snippet, "snippet found in 0 papers"),
    ("questions.jsonl", first("keyword"), set_field("kind", "trivia"), "unknown kind 'trivia'"),
    ("questions.jsonl", first("unanswerable"), set_field("gold", ["x" * 40]), "has gold"),
    ("questions.jsonl", first("tail"), set_field("tail_snippet_offset_ratio", 0.2), "< 0.66"),
    ("ask_questions.jsonl", first("unanswerable"), set_field("checked", []), "'checked'"),
    ("questions.jsonl", None, duplicate_id, "duplicate id"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "pick", "brk", "said"), BREAKS)
def test_a_broken_set_fails_the_checker(
    corpus: Corpus,
    tmp_path: Path,
    name: str,
    pick: Callable[[list[dict[str, Any]]], dict[str, Any]] | None,
    brk: Callable[[Any], None],
    said: str,
) -> None:
    eval_dir = tmp_path / "eval"
    shutil.copytree(EVAL, eval_dir)
    rows = read_jsonl(eval_dir / name)
    brk(pick(rows) if pick else rows)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (eval_dir / name).write_text(text, encoding="utf-8")
    problems = check_sets(eval_dir, TEST_DATA, corpus)
    assert problems, f"{name}: the break was not found"
    assert any(said in p and f"/{name}: " in p for p in problems), problems


@pytest.mark.slow
def test_a_short_set_fails_the_checker(corpus: Corpus, tmp_path: Path) -> None:
    """Dropping every Chinese question leaves the set below its minimum count."""
    eval_dir = tmp_path / "eval"
    shutil.copytree(EVAL, eval_dir)
    rows = [r for r in read_jsonl(eval_dir / "questions.jsonl") if r["kind"] != "chinese"]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    (eval_dir / "questions.jsonl").write_text(text, encoding="utf-8")
    assert any("0 chinese < 10" in p for p in check_sets(eval_dir, TEST_DATA, corpus))
