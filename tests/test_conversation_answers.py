"""Conversations offline: follow-ups about the previous answer's sources, and `rag ask
--conversation`. The attention conversation runs on the bundled corpus (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.answer.pipeline import Assistant, CitedAnswer, answer
from rag.cli.main import main
from rag.settings import Settings

ATTENTION = "Which papers make attention cheaper for long sequences?"


def assert_numbered(result: CitedAnswer) -> None:
    cited = [c.n for c in result.citations]
    assert cited == list(range(1, len(cited) + 1))
    for c in result.citations:
        paper = result.sources[c.n - 1].paper
        assert c.paper_id == paper.id and c.quote in paper.abstract


def ask(turns: list[str], assistant: Assistant) -> list[CitedAnswer]:
    history: list[dict[str, str]] = []
    previous: CitedAnswer | None = None
    results = []
    for question in turns:
        previous = answer(question, history, assistant=assistant, previous=previous)
        history += [
            {"role": "user", "content": question},
            {"role": "assistant", "content": previous.answer},
        ]
        results.append(previous)
    return results


@pytest.mark.slow
def test_attention_conversation_orals_then_the_second_one(corpus: Assistant) -> None:
    first, orals, second = ask(
        [ATTENTION, "which of them are orals?", "summarize the second one"], corpus
    )
    # A list answer: one line per relevant retrieved paper, each cited.
    assert not first.abstained and len(first.citations) >= 3
    assert first.answer.count("\n- **") == len(first.citations)
    assert_numbered(first)
    shown = [s.paper for s in first.sources[: len(first.citations)]]
    expected = [p.id for p in shown if p.tier == "Oral"]
    assert expected, [p.title for p in shown]  # FlexPrefill is an Oral

    assert not orals.abstained
    assert [c.paper_id for c in orals.citations] == expected
    for c in orals.citations:
        assert f"[{c.n}]: Accept (Oral)" in orals.answer
    assert {s.paper.id for s in orals.sources} == {s.paper.id for s in first.sources}
    assert_numbered(orals)

    meant = orals.sources[1].paper  # "the second one" of the list shown above it
    assert not second.abstained
    assert {c.paper_id for c in second.citations} == {meant.id}
    assert second.sources[0].paper.id == meant.id
    for label in ("Problem", "Method", "Result"):
        assert f"- {label}: " in second.answer
    assert_numbered(second)


@pytest.mark.slow
def test_names_metadata_and_the_sources_slider(corpus: Assistant) -> None:
    first, named, link = ask(
        [ATTENTION, "how fast is the FlexPrefill paper?", "what is the link to [1]?"], corpus
    )
    flex = next(s.paper for s in first.sources if s.paper.title.startswith("FlexPrefill"))
    assert [c.paper_id for c in named.citations] == [flex.id]
    assert [c.paper_id for c in link.citations] == [flex.id]
    assert flex.url and flex.url in link.answer
    # The sources setting changes a list answer: more papers retrieved, more lines.
    wide = answer(ATTENTION, assistant=corpus, k=10)
    assert len(wide.sources) == 10 and len(wide.citations) > len(first.citations)


@pytest.mark.slow
def test_cli_conversation_on_the_corpus(
    corpus_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conversations.jsonl"
    path.write_text(json.dumps([ATTENTION, "which of them are orals?"]) + "\n")
    index = ["--index", str(corpus_settings.store.index_dir), "--config", "offline"]
    assert main(["ask", "--conversation", str(path), *index, "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    first, orals = json.loads(line)["turns"]
    assert first["question"] == ATTENTION
    tiers = {s["paper_id"]: s["decision"] for s in first["sources"]}
    assert orals["citations"]
    assert all(tiers[c["paper_id"]] == "Accept (Oral)" for c in orals["citations"])
    for c in orals["citations"]:
        assert orals["sources"][c["n"] - 1]["paper_id"] == c["paper_id"]


def test_cli_conversation_follow_up_on_the_seeds(
    seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conversations.jsonl"
    question = "How can INT4 quantization deal with outliers in activations?"
    path.write_text(
        json.dumps([question, "summarize the second one"]) + "\n\n" + json.dumps([question]) + "\n"
    )
    index = ["--index", str(seed_settings.store.index_dir), "--config", "offline"]
    assert main(["ask", "--conversation", str(path), *index, "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    first, follow_up = json.loads(lines[0])["turns"]
    (alone,) = json.loads(lines[1])["turns"]
    assert first == alone  # each line is a conversation of its own
    assert list(first)[:5] == ["question", "answer", "abstained", "model", "citations"]
    assert list(first)[-9:] == [  # the fields added later, after the first five
        *["sources", "refusal", "nearest", "scope_note", "compare"],
        *["grounding", "note", "uncited", "judge"],
    ]
    second = first["sources"][1]["paper_id"]
    assert {c["paper_id"] for c in follow_up["citations"]} == {second}
    assert follow_up["sources"][0]["paper_id"] == second


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('["fine"]\n{"not": "a list"}\n', "line 2: expected a JSON list of questions"),
        ('["fine"]\n\n["unclosed"\n', "line 3: not JSON"),
        ("[]\n", "line 1: expected a JSON list of questions"),
        ('["a question", 3]\n', "line 1: expected a JSON list of questions"),
        ('["a question", "  "]\n', "line 1: expected a JSON list of questions"),
        ("\n\n", "no conversation in the file"),
    ],
)
def test_cli_conversation_bad_input_is_one_line_and_exit_2(
    seed_settings: Settings,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    problem: str,
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    index = ["--index", str(seed_settings.store.index_dir), "--config", "offline"]
    assert main(["ask", "--conversation", str(path), *index, "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"error: {path}") and problem in line


def test_cli_conversation_with_a_question_too_is_refused(
    seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('["q"]\n')
    index = ["--index", str(seed_settings.store.index_dir), "--config", "offline"]
    assert main(["ask", "q", "--conversation", str(path), *index]) == 2
    assert "either" in capsys.readouterr().err


@pytest.mark.slow  # over a second on 2 cores
def test_cli_compare_them_prints_the_comparison_table(
    seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 6 in the CLI: the table is printed, numbered as the answer's sources."""
    path = tmp_path / "conversations.jsonl"
    path.write_text(json.dumps(["Which papers study large language models?", "compare them"]))
    index = ["--index", str(seed_settings.store.index_dir), "--config", "offline"]
    assert main(["ask", "--conversation", str(path), *index, "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)["turns"][1]["compare"]
    assert len(compared) >= 2
    assert main(["ask", "--conversation", str(path), *index]) == 0
    text = capsys.readouterr().out.split("## compare them", 1)[1]
    assert "\n## Problem\n" in text and "(compared by " in text
    problem = text.split("\n## Problem\n", 1)[1].split("\n\n", 1)[0]
    assert [line.split("]")[0] + "]" for line in problem.splitlines()] == [
        f"  [{n}]" for n in compared
    ]  # a cell per compared paper, numbered as the answer's sources
