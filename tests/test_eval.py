"""The retrieval metrics on toy rankings, and `rag eval` end to end on the seed index."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.errors import LoadError
from rag.evaluation.metrics import (
    Abstention,
    Scores,
    gold_ranks,
    load_questions,
    ndcg_at,
    recall_at,
    reciprocal_rank,
)
from rag.settings import SEED_FILES, Settings

ABSTRACTS = ["nothing here", "we study alpha  particles", "beta decay", "also alpha again"]


def test_gold_ranks_take_the_first_abstract_holding_each_snippet() -> None:
    assert gold_ranks(["alpha", "beta", "gamma"], ABSTRACTS) == [2, 3, None]


def test_snippets_match_across_whitespace_differences() -> None:
    assert gold_ranks(["study alpha\nparticles"], ABSTRACTS) == [2]


def test_single_gold_metrics() -> None:
    gold = ["alpha particles"]
    assert recall_at(gold, ABSTRACTS, 1) == 0.0
    assert recall_at(gold, ABSTRACTS, 5) == 1.0
    assert reciprocal_rank(gold, ABSTRACTS) == 0.5
    assert ndcg_at(gold, ABSTRACTS) == pytest.approx(1 / math.log2(3))


def test_multi_gold_metrics_count_each_snippet_once() -> None:
    gold = ["beta decay", "nothing here"]
    assert recall_at(gold, ABSTRACTS, 1) == 0.5
    assert recall_at(gold, ABSTRACTS, 2) == 0.5
    assert recall_at(gold, ABSTRACTS, 3) == 1.0
    assert reciprocal_rank(gold, ABSTRACTS) == 1.0
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at(gold, ABSTRACTS) == pytest.approx((1 + 1 / math.log2(4)) / ideal)


def test_a_miss_scores_zero_and_the_cutoff_applies() -> None:
    assert reciprocal_rank(["alpha"], ABSTRACTS, k=1) == 0.0
    assert ndcg_at(["omega"], ABSTRACTS) == 0.0
    # The same paper matching two snippets is one hit, not two.
    assert ndcg_at(["alpha", "particles"], ABSTRACTS) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    )


def test_scores_are_running_means() -> None:
    scores = Scores()
    scores.add(["alpha"], ABSTRACTS)  # rank 2
    scores.add(["nothing"], ABSTRACTS)  # rank 1
    assert scores.n == 2
    assert scores.recall_1 == 0.5
    assert scores.mrr_10 == pytest.approx(0.75)


def test_abstention_precision_recall_and_false_refusals() -> None:
    counts = Abstention()
    for answerable, abstained in [(False, True)] * 3 + [(False, False)] + [(True, True)]:
        counts.add(answerable, abstained)
    for _ in range(9):
        counts.add(True, False)
    assert counts.precision == 0.75
    assert counts.recall == 0.75
    assert counts.f1 == pytest.approx(0.75)
    assert counts.false_refusal_rate == 0.1


def write_questions(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "a", "kind": "keyword", "question": "q", "gold": []}, "empty exactly"),
        ({"id": "a", "kind": "unanswerable", "question": "q", "gold": ["x"]}, "empty exactly"),
        ({"id": "a", "kind": "trivia", "question": "q", "gold": ["x"]}, "'kind' must be"),
        ({"id": "a", "kind": "keyword", "question": " ", "gold": ["x"]}, "'question'"),
        ({"id": "a", "kind": "keyword", "question": "q", "gold": "x"}, "'gold'"),
    ],
)
def test_bad_question_files_name_the_file_and_line(
    tmp_path: Path, row: dict[str, object], message: str
) -> None:
    good = {"id": "ok", "kind": "keyword", "question": "q", "gold": ["x"]}
    path = write_questions(tmp_path / "q.jsonl", [good, row])
    with pytest.raises(LoadError, match=message) as caught:
        load_questions(path)
    assert str(caught.value).startswith(f"{path}, line 2:")


SEED_QUESTIONS = [
    {
        "id": "k1",
        "kind": "keyword",
        "question": "Which model breaks the reverse curse?",
        "gold": ["breaks the *reverse curse*"],
    },
    {
        "id": "k2",
        "kind": "keyword",
        "question": "LOTOS ensembles",
        "gold": ["we introduce LOTOS, a new training paradigm"],
    },
    {
        "id": "p1",
        "kind": "paraphrase",
        "question": "a parametric model of human hairstyles",
        "gold": ["Perm, a learned parametric representation of human 3D hair"],
    },
    {
        "id": "m1",
        "kind": "multi",
        "question": "INT4 quantization outliers, and Lipschitz ensembles",
        "gold": ["Rotated Runtime Smooth", "we introduce LOTOS"],
    },
    {
        "id": "z1",
        "kind": "chinese",
        "question": "有没有论文研究 masked diffusion models 能不能打破 reverse curse？",
        "gold": ["breaks the *reverse curse*"],
    },
    {"id": "u1", "kind": "unanswerable", "question": "a recipe for lemon cake", "gold": []},
    {"id": "u2", "kind": "unanswerable", "question": "有没有柠檬蛋糕食谱的论文？", "gold": []},
]


@pytest.mark.slow
def test_rag_eval_scores_our_retriever_and_the_baselines_on_the_seeds(
    seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = write_questions(tmp_path / "q.jsonl", SEED_QUESTIONS)
    code = main(
        ["eval", "--index", str(seed_settings.store.index_dir), "--questions", str(questions)]
        + ["--config", "offline", "--json"]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["papers"] == 38
    assert report["counts"] == {
        "keyword": 2,
        "paraphrase": 1,
        "multi": 1,
        "chinese": 1,
        "unanswerable": 2,
    }
    assert report["warnings"] == []
    systems = {s["name"]: s for s in report["systems"]}
    assert list(systems) == ["hybrid", "tutorial", "bm25", "dense"]
    hybrid = systems["hybrid"]
    assert hybrid["per_kind"]["keyword"]["mrr_10"] == 1.0
    assert hybrid["per_kind"]["paraphrase"]["recall_5"] == 1.0
    assert hybrid["per_kind"]["multi"]["recall_5"] == 1.0
    assert "unanswerable" not in hybrid["per_kind"]
    for system in systems.values():
        assert system["overall"]["n"] == 5
        counts = system["abstention"]
        assert counts["refused_unanswerable"] + counts["answered_unanswerable"] == 2
        assert counts["refused_answerable"] + counts["answered_answerable"] == 5
        # Abstention is also scored over the English questions alone (the Chinese ones,
        # answerable or not, take the gloss route).
        english = system["abstention_english"]
        assert english["refused_unanswerable"] + english["answered_unanswerable"] == 1
        assert english["refused_answerable"] + english["answered_answerable"] == 4
    # The tutorial pipeline is a real second index beside the first, built from the same papers.
    index_dir = Path(seed_settings.store.index_dir)
    assert (index_dir.parent / f"{index_dir.name}-tutorial" / "built-from.sha256").exists()
    assert systems["tutorial"]["overall"]["recall_5"] > 0.5


def test_rag_eval_reports_a_bad_question_file_without_a_traceback(
    seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": 1, "kind": "keyword", "question": "q", "gold": ["x"]}\n{oops\n')
    code = main(["eval", "--index", str(seed_settings.store.index_dir), "--questions", str(path)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}, line 2: not valid JSON")


@pytest.mark.slow
def test_rag_eval_runs_with_the_openai_embeddings_preset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Wiring only: the multilingual preset against a local server speaking the OpenAI API.

    Its vectors are hashed bags of words, so this checks that requests go out with the
    configured model and that the whole eval runs on them, not the quality of a real model.
    """
    from testkit.openai_server import OpenAIServer

    questions = write_questions(tmp_path / "q.jsonl", SEED_QUESTIONS[:2])
    with OpenAIServer(required_key="sk-test") as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("RAG_EMBEDDING__BASE_URL", server.base_url)
        argv = ["eval", "--config", "openai-embeddings", "--index", str(tmp_path / "index")]
        argv += [arg for seeds in SEED_FILES for arg in ("--corpus", str(seeds))]
        argv += ["--questions", str(questions), "--json"]
        code = main(argv)
        requests = [r for r in server.requests if r.path.endswith("/embeddings")]
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["papers"] == 38
    assert requests and {r.model for r in requests} == {"text-embedding-3-small"}
    embedded = [text for r in requests for text in r.json["input"]]
    assert "Which model breaks the reverse curse?" in embedded  # the question, at search time
    assert any("LOTOS" in text for text in embedded)  # the abstracts, at ingest
    hybrid = report["systems"][0]
    assert hybrid["name"] == "hybrid" and hybrid["per_kind"]["keyword"]["recall_5"] == 1.0


@pytest.mark.slow
def test_rag_eval_indexes_the_corpus_the_cli_passes_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The eval corpus is the CLI's default, passed in; the library names no location."""
    import rag.cli.main
    from rag.evaluation import evaluate
    from rag.evaluation import metrics as eval_metrics

    seeds = load_papers(list(SEED_FILES))[:3]
    corpus = tmp_path / "three.jsonl"
    corpus.write_text(
        "".join(
            json.dumps({"id": p.id, "title": p.title, "abstract": p.abstract}) + "\n" for p in seeds
        )
    )
    monkeypatch.setattr(rag.cli.main, "EVAL_CORPUS", (corpus,))
    questions = write_questions(tmp_path / "q.jsonl", SEED_QUESTIONS[:2])
    argv = ["eval", "--index", str(tmp_path / "index"), "--questions", str(questions)]
    assert main([*argv, "--no-baselines", "--json"]) == 0
    out, err = capsys.readouterr()
    assert f"building the eval index from {corpus}" in err
    assert json.loads(out)["papers"] == 3
    assert not any(
        hasattr(module, name)
        for module in (evaluate, eval_metrics)
        for name in ("EVAL_CORPUS", "QUESTIONS")
    )
