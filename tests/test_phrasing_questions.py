"""data/eval/named_phrasings.jsonl (issue 29, bench/make_phrasing_questions.py) is well formed:
each question names one paper of the bundled corpus, the dev and heldout halves share no
paper, each phrasing pattern is in both halves, and a good part is in Chinese. No index."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench import make_phrasing_questions as make

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "data" / "eval" / "named_phrasings.jsonl"
CORPUS = ROOT / "data" / "iclr2025" / "iclr2025.jsonl"
OLD_SET = ROOT / "data" / "eval" / "named_questions.jsonl"
FIELDS = {"id", "question", "gold_id", "name", "lang", "pattern", "split"}
HAN = re.compile(r"[\u4e00-\u9fff]")


def read(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return read(QUESTIONS)


@pytest.fixture(scope="module")
def papers() -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in read(CORPUS)}


def test_rows_parse_with_their_fields(rows: list[dict[str, Any]]) -> None:
    assert len(rows) >= 96
    assert all(set(r) == FIELDS for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["lang"] for r in rows} == {"en", "zh"}
    assert {r["split"] for r in rows} == {"dev", "heldout"}


def test_each_names_a_corpus_paper_with_an_abstract(
    rows: list[dict[str, Any]], papers: dict[str, dict[str, Any]]
) -> None:
    for r in rows:
        paper = papers[r["gold_id"]]
        assert paper["abstract"], r["id"]
        assert r["name"].lower() in paper["title"].lower(), r["id"]
        assert r["name"].lower() in r["question"].lower(), r["id"]


def test_new_papers_one_question_each(rows: list[dict[str, Any]]) -> None:
    assert len({r["gold_id"] for r in rows}) == len(rows)
    old = {g for row in read(OLD_SET) for g in row["gold_ids"]}
    assert not old & {r["gold_id"] for r in rows}
    names = {r["name"].lower() for r in rows}
    assert not names & {"symmcd", "bodygen", "mr-gsm8k", "flexprefill"}


def test_splits_share_no_paper_and_each_has_every_pattern(rows: list[dict[str, Any]]) -> None:
    dev = {r["gold_id"] for r in rows if r["split"] == "dev"}
    heldout = {r["gold_id"] for r in rows if r["split"] == "heldout"}
    assert not dev & heldout
    assert len(dev) == len(heldout)
    patterns = {r["pattern"] for r in rows}
    assert len(patterns) >= 12
    for split in ("dev", "heldout"):
        assert {r["pattern"] for r in rows if r["split"] == split} == patterns


def test_about_two_in_five_are_chinese(rows: list[dict[str, Any]]) -> None:
    langs = Counter(r["lang"] for r in rows)
    assert langs["zh"] / len(rows) >= 0.35
    for r in rows:
        assert bool(HAN.search(r["question"])) == (r["lang"] == "zh"), r["id"]


@pytest.mark.slow
def test_the_generator_writes_this_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "named_phrasings.jsonl"
    monkeypatch.setattr("sys.argv", ["make_phrasing_questions", "--out", str(out)])
    make.main()
    assert out.read_text(encoding="utf-8") == QUESTIONS.read_text(encoding="utf-8")
