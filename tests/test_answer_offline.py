"""The offline extractive answerer on real retrieved abstracts, and `rag ask` without a model."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from rag.answer.pipeline import (
    Assistant,
    CitedAnswer,
    answer,
    open_assistant,
)
from rag.answer.pipeline import stream_answer as stream
from rag.answer.refusal import ENGLISH_ONLY, NO_COVERAGE
from rag.cli.main import main
from rag.errors import AnswerError
from rag.index.passages import sentences
from rag.lang.messages import MESSAGES
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings
from rag.types import OFFLINE_MODEL
from tests.helpers import DATA, read_jsonl

SEED_QUESTIONS = read_jsonl(DATA / "seed_questions.jsonl")
SEED_UNANSWERABLE = [r["question"] for r in read_jsonl(DATA / "seed_unanswerable.jsonl")]
HEADING = MESSAGES["en"]["heading"]
BULLET = re.compile(r"^- (?:(?:Problem|Method|Result): |\*\*(.+?)\*\*: )?(.+) \[(\d+)\]$")


@pytest.fixture(scope="module")
def offline(seed_settings: Settings, embeddings: LocalEmbeddings) -> Assistant:
    return open_assistant(seed_settings, embeddings=embeddings)


def is_right(result: CitedAnswer, n: int, gold: list[str]) -> bool:
    return any(g in result.sources[n - 1].paper.abstract for g in gold)


def assert_only_quotes(result: CitedAnswer) -> None:
    """Every line is the heading, a title, or a sentence quoted from the abstract it cites."""
    assert result.answer.startswith(HEADING)
    numbers = set()
    for line in result.answer.splitlines()[1:]:
        if not line or line.startswith("**"):
            continue
        match = BULLET.match(line)
        assert match, line
        n = int(match.group(3))
        paper = result.sources[n - 1].paper
        if match.group(1):  # a list line: title, then the quoted stretch of the abstract
            assert match.group(1) == " ".join(paper.shown_title.split())
            assert match.group(2) in paper.abstract
        else:
            assert match.group(2) in sentences(paper.abstract)
        numbers.add(n)
    assert numbers == {c.n for c in result.citations}
    assert_numbered(result)
    for c in result.citations:
        paper = result.sources[c.n - 1].paper
        assert c.paper_id == paper.id and c.title == paper.shown_title
        assert (c.decision, c.tier) == (paper.decision, paper.tier)
        assert c.quote in paper.abstract
        assert f"{c.quote} [{c.n}]" in result.answer  # the quote is one of the cited lines


def assert_numbered(result: CitedAnswer) -> None:
    """The contract the page relies on: [n] names sources[n-1]; cited 1..k by first citation."""
    order = list(dict.fromkeys(int(n) for n in re.findall(r"\[(\d+)\]", result.answer)))
    assert order == list(range(1, len(order) + 1)), order
    assert {c.n for c in result.citations} == set(order)
    assert len({s.paper.id for s in result.sources}) == len(result.sources)


# Below the calibrated relevance threshold on the 38-paper seed index, where too few abstracts
# make the relevance check weaker (bench/calibrate_threshold.py measures it on 2,105 papers).
KNOWN_REFUSALS = {"seed-tail-001", "seed-tail-006", "seed-para-005"}


@pytest.mark.slow
def test_right_paper_is_cited_first_with_exact_quotes(offline: Assistant) -> None:
    wrong, refused = [], set()
    for row in SEED_QUESTIONS:
        result = answer(row["question"], assistant=offline)
        if result.abstained:
            refused.add(row["id"])
            continue
        assert result.model == OFFLINE_MODEL and result.offline
        assert_only_quotes(result)
        if not is_right(result, result.citations[0].n, row["gold"]):
            wrong.append((row["id"], result.answer))
    assert wrong == []
    assert refused <= KNOWN_REFUSALS


@pytest.mark.slow
def test_unanswerable_questions_abstain(offline: Assistant) -> None:
    results = [answer(q, assistant=offline) for q in SEED_UNANSWERABLE]
    abstained = [r.question for r in results if r.abstained]
    # Off-topic questions must abstain; near-misses inside ML may not (see calibrate_threshold).
    assert "What are the health benefits of drinking green tea every day?" in abstained
    assert "How do I bake a chocolate cake without eggs?" in abstained
    assert len(abstained) >= 4, abstained
    for r in results:
        if r.abstained:
            assert r.citations == [] and r.answer.startswith(NO_COVERAGE)
            assert r.sources and all(f"- {s.paper.shown_title}" in r.answer for s in r.sources[:3])
            # Three listed, no more (seeds no list identifies share one title, issue 31).
            listed = [line for line in r.answer.splitlines() if line.startswith("- ")]
            assert listed == [f"- {s.paper.shown_title}" for s in r.sources[:3]], r.answer


def test_summary_gives_problem_method_and_result(offline: Assistant) -> None:
    result = answer("Summarize the LOTOS paper on robust ensembles", assistant=offline)
    assert_only_quotes(result)
    lines = result.answer.splitlines()
    labelled = {line.split(":")[0][2:]: line for line in lines if BULLET.match(line)}
    assert {"Problem", "Method", "Result"} <= set(labelled)
    assert "we introduce LOTOS" in labelled["Method"]
    assert "Transferability of adversarial examples" in labelled["Problem"]
    assert re.search(r"robust accuracy|p\.p|percentage", labelled["Result"])
    assert "LOTOS" in result.citations[0].title


def test_answers_are_deterministic_and_stream_the_same_text(offline: Assistant) -> None:
    question = "How much faster is sampling with masked diffusion models than with ARMs?"
    first = answer(question, assistant=offline)
    pieces = list(stream(question, assistant=offline))
    *text, final = pieces
    assert isinstance(final, CitedAnswer)
    assert "".join(text) == final.answer == first.answer
    assert final.citations == first.citations
    assert "1.4 times faster" in first.citations[0].quote


def test_follow_up_reads_the_history_without_a_model(offline: Assistant) -> None:
    history = [
        {"role": "user", "content": "How can INT4 quantization deal with outliers in activations?"},
        {"role": "assistant", "content": "Rotated Runtime Smooth [1]."},
    ]
    kept = copy.deepcopy(history)
    result = answer("and how much does it improve perplexity?", history, assistant=offline)
    assert result.standalone_question.startswith(history[0]["content"])
    assert "Rotated Runtime Smooth" in result.sources[0].paper.abstract
    assert "improves WikiText-2 perplexity from 57.33 to 6.66" in result.answer
    assert history == kept


@pytest.mark.slow
def test_chinese_question_gets_english_quotes_inside_chinese_text(offline: Assistant) -> None:
    question = "有没有用离线强化学习给数据中心空调制冷系统做节能控制的工作？"
    result = answer(question, assistant=offline)
    assert not result.abstained
    assert result.answer.startswith(MESSAGES["zh"]["heading"])
    gold = "energy efficiency optimization of DC cooling systems"
    assert gold in result.sources[0].paper.abstract
    assert result.citations and result.citations[0].n == 1
    for c in result.citations:  # the evidence stays exact English
        assert c.quote in sentences(result.sources[c.n - 1].paper.abstract)
        assert f"{c.quote} [{c.n}]" in result.answer


@pytest.mark.slow  # over a second on 2 cores
def test_chinese_refusal_is_in_chinese(offline: Assistant) -> None:
    # Far from every seed (a bread recipe). The Chinese weather-forecasting question is near
    # TimeKAN's time-series forecasting and sits just above the seed corpus's Chinese bar,
    # chosen by bench/calibrate_threshold.py --corpus seeds (README, "Abstention").
    result = answer("隔夜冷发酵的酸面包怎么做比较好吃？", assistant=offline)
    assert result.abstained and not result.citations
    assert result.answer.startswith(MESSAGES["zh"]["no_coverage"])
    assert MESSAGES["zh"]["nearest"] in result.answer
    assert result.refusal == MESSAGES["zh"]["no_coverage"]
    assert result.nearest == result.sources[:3]
    assert ENGLISH_ONLY not in result.answer  # Chinese is searched through its gloss


def test_empty_question_is_a_clear_error(offline: Assistant) -> None:
    with pytest.raises(AnswerError, match="empty"):
        answer("   ", assistant=offline)


@pytest.mark.slow
def test_cli_ask_json_text_and_batch(
    seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = ["--index", str(seed_settings.store.index_dir), "--config", "offline"]
    question = SEED_QUESTIONS[0]["question"]
    assert main(["ask", question, *index, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == [
        *["answer", "abstained", "model", "citations", "unsupported", "sources"],
        *["refusal", "nearest"],  # added later, after the original fields
        *["scope_note", "compare"],  # then a follow-up's scope and "compare them"
        *["grounding", "note", "uncited"],  # and the model's grounding (empty offline)
        "judge",  # which judge decided which papers belong, and how many it checked
    ]
    assert printed["refusal"] == "" and printed["nearest"] == []
    assert printed["model"] == OFFLINE_MODEL and printed["abstained"] is False
    keys = ["n", "paper_id", "title", "url", "quote", "supported", "support"]
    keys += ["evidence", "start", "end"]  # added after them: where the quote is
    assert all(list(c) == keys for c in printed["citations"])
    for c in printed["citations"]:  # an exact slice of the cited abstract, by its offsets
        assert c["evidence"] == "abstract" and c["end"] - c["start"] == len(c["quote"])
    # Offline answers quote the abstracts: every citation is its own support.
    assert printed["unsupported"] == 0 and all(c["supported"] for c in printed["citations"])
    assert printed["citations"] and printed["citations"][0]["quote"] in printed["answer"]
    listed = printed["sources"]
    assert [s["n"] for s in listed] == list(range(1, len(listed) + 1)) and len(listed) == 5
    # Issue 30 added the authors and whether the abstract is present, after the fields before.
    source_keys = ["n", "paper_id", "title", "decision", "url"]
    source_keys += ["authors", "authors_ordered", "has_abstract"]
    assert all(list(s) == source_keys for s in listed)
    for c in printed["citations"]:  # [n] names sources[n-1]
        assert listed[c["n"] - 1]["paper_id"] == c["paper_id"]
    cited = [c["n"] for c in printed["citations"]]
    assert cited == list(range(1, len(cited) + 1))

    batch = tmp_path / "questions.txt"
    off_topic = "How do I bake a chocolate cake without eggs?"
    assert off_topic in SEED_UNANSWERABLE
    batch.write_text(f"{question}\n\n{off_topic}\n")
    assert main(["ask", "--batch", str(batch), *index, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["question"] for r in rows] == [question, off_topic]
    assert rows[0]["answer"] == printed["answer"]
    assert rows[1]["abstained"] is True and rows[1]["citations"] == []
    assert rows[1]["refusal"] == NO_COVERAGE and rows[1]["answer"].startswith(NO_COVERAGE)
    nearest = rows[1]["nearest"]
    assert len(nearest) == 3 and [p["n"] for p in nearest] == [1, 2, 3]
    for p in nearest:  # named in the refusal's text too, each the source of its number
        assert f"- {p['title']}" in rows[1]["answer"]
        assert rows[1]["sources"][p["n"] - 1]["paper_id"] == p["paper_id"]

    assert main(["ask", question, *index]) == 0
    out = capsys.readouterr().out
    assert out.startswith(HEADING)
    first = printed["citations"][0]
    assert f"[{first['n']}] {first['title']}" in out and f'"{first["quote"]}"' in out

    assert main(["ask", " ", *index]) == 2
    assert "empty" in capsys.readouterr().err
