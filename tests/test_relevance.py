"""The relevance decision (rag.retrieval.relevance) with the fitted constants
(rag.retrieval.calibration), on the seed index: questions a seed answers are answered and
questions none covers are refused, `retrieval.strictness` and a calibration passed in move the
bar as they say, and a model nothing was fitted for reads no cosine. Decisions and directions,
not decimals recorded on one machine (issue 28).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rag.answer.pipeline import answer, open_assistant
from rag.cli.main import main
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.calibration import (
    MINILM,
    UNCALIBRATED,
    Calibration,
    calibration_for,
    uncalibrated_note,
)
from rag.retrieval.relevance import Relevance
from rag.retrieval.retriever import Retriever, open_retriever
from rag.settings import Settings, with_overrides
from testkit.openai_server import OpenAIServer
from tests.helpers import three_seed_papers

MOLECULES = (
    "How can predictions of lowest-energy 3D molecule shapes from 2D graphs be improved by "
    "adding extra connections between atoms that are not chemically bonded, based on a "
    "classical pairwise interaction potential?"
)
ENSEMBLE = (
    "Why does making each classifier smoother hurt an ensemble's robustness to attacks that "
    "transfer between its members, and how can this be fixed?"
)
ACTIVATIONS = (
    "How can the few extremely large activation values that break 4-bit LLM serving be tamed "
    "with a training-free plug-in?"
)
TRAFFIC = (
    "Which paper uses graph neural networks to forecast traffic congestion in city road networks?"
)
MUSIC = "How do diffusion models generate realistic music from text prompts?"
OPTIMIZER = "What is the best optimizer for training vision transformers on ImageNet from scratch?"
PEDESTRIANS = "Which method detects pedestrians at night from thermal camera images?"
ENSEMBLE_ZH = (
    "为什么让集成里的每个分类器更平滑，反而会损害集成对成员之间可迁移攻击的鲁棒性？该怎么解决？"
)
ACTIVATIONS_ZH = "有没有一种无需训练的插件，能驯服那些破坏大模型四比特推理部署的少数极大激活值？"
COOLING_ZH = "有没有论文用离线强化学习来降低数据中心制冷系统的能耗？"
BREAD_ZH = "隔夜冷发酵的酸面包怎么做比较好吃？"
LORA_ZH = "GPT-5 的 LoRA 微调有哪些论文？"

# Each question's right decision on the seed index (the 38 seed abstracts): answered when a
# seed answers it, refused when none does. Decision tests use only questions whose relevance
# lies at least MARGIN from the threshold, far more than the float32 encoder moves between
# implementations (torch against ONNX: under 1e-5, bench/backend_agreement.py) and than int8
# moved between CPUs (0.02), so the decision is the same on every machine.
MARGIN = 0.025
ANSWERED = [MOLECULES, ENSEMBLE, COOLING_ZH]
# Answered, rightly, but only 0.02 above the bar on the seeds: not a decision test there.
ANSWERABLE = [*ANSWERED, ENSEMBLE_ZH]
REFUSED = [MUSIC, PEDESTRIANS, BREAD_ZH, LORA_ZH]
# Known wrong today, asserted as they should be (strict xfail: fixing one makes it pass):
# a seed (Rotated Runtime Smooth) answers the activations questions, which score under the
# bar; no seed covers traffic forecasting, which scores at the bar (0.371 against 0.37).
# Relevance alone cannot order them: the activations question scores below the music one.
WRONG_TODAY = [(ACTIVATIONS, True), (ACTIVATIONS_ZH, True), (TRAFFIC, False)]


@pytest.fixture(scope="module")
def retriever(seed_settings: Settings, embeddings: LocalEmbeddings) -> Retriever:
    return open_retriever(seed_settings, embeddings)


def with_calibration(
    retriever: Retriever, calibration: Calibration, multilingual: bool = True
) -> Retriever:
    return Retriever(
        retriever.index,
        retriever.embeddings,
        retriever.settings,
        retriever.multilingual if multilingual else None,
        calibration,
    )


def decide(retriever: Retriever, question: str) -> tuple[float, bool]:
    found = retriever.search(question)
    relevance = retriever.relevance(question, found)
    answered = retriever.is_relevant(question, found)
    assert answered is (relevance >= retriever.threshold), question
    # A list answer's per-paper scores are on the same scale, none above the question's.
    assert max(retriever.paper_relevance(question, found)) <= relevance + 1e-9, question
    return relevance, answered


def test_the_bundled_model_has_its_own_constants_and_any_other_has_none() -> None:
    fitted = calibration_for(Settings())
    assert fitted is MINILM and fitted.fitted and fitted.cosine_weight == 1.0
    assert (fitted.model, fitted.vectors, fitted.chunk_max_tokens, fitted.chunk_overlap) == (
        "all-MiniLM-L6-v2",
        "float32",
        256,
        1,
    )
    # Anything that moves the scores has constants of its own, or none: another model (the
    # openai-embeddings preset), int8 vectors, another chunking.
    others = [
        {"embedding": {"provider": "openai", "model": "text-embedding-3-small"}},
        {"embedding": {"backend": "onnx-int8"}},
        {"chunking": {"max_tokens": 128}},
    ]
    for override in others:
        other = calibration_for(with_overrides(Settings(), override))
        assert not other.fitted and other.cosine_weight == 0.0, override
        assert other.relevance_threshold == UNCALIBRATED.relevance_threshold
        assert uncalibrated_note(other) is not None
    assert uncalibrated_note(fitted) is None
    with pytest.raises(AttributeError):
        MINILM.relevance_threshold = 0.5  # type: ignore[misc]  # frozen


@pytest.mark.slow
def test_seed_questions_are_answered_or_refused_as_the_seeds_say(retriever: Retriever) -> None:
    assert retriever.calibration is MINILM
    for question in ANSWERED + REFUSED:
        relevance, answered = decide(retriever, question)
        assert answered is (question in ANSWERED), (question, relevance)
        assert abs(relevance - retriever.threshold) >= MARGIN, (question, relevance)


@pytest.mark.slow
@pytest.mark.parametrize(("question", "answerable"), WRONG_TODAY, ids=lambda v: str(v)[:20])
@pytest.mark.xfail(strict=True, reason="relevance alone misjudges these seed questions")
def test_questions_relevance_misjudges_today(
    retriever: Retriever, question: str, answerable: bool
) -> None:
    assert decide(retriever, question)[1] is answerable


def test_without_multilingual_vectors_the_gloss_decides(retriever: Retriever) -> None:
    gloss_only = with_calibration(retriever, MINILM, multilingual=False)
    for question in (ENSEMBLE_ZH, COOLING_ZH, BREAD_ZH):
        relevance, answered = decide(gloss_only, question)
        assert answered is (question in ANSWERABLE), (question, relevance)
        assert abs(relevance - gloss_only.threshold) >= MARGIN, (question, relevance)


def test_a_calibration_passed_in_is_the_one_used(retriever: Retriever) -> None:
    # The unknown-term penalty of a large index, on the seeds: each question loses exactly
    # the penalty for its unknown terms and no longer the small-corpus margin.
    large = with_calibration(retriever, replace(MINILM, vocabulary_min_chunks=0))
    keyword = retriever.index.keyword_index()
    for question in (MOLECULES, TRAFFIC, PEDESTRIANS):
        found = retriever.search(question)
        unknown = min(len(keyword.unknown_terms(question)), 3)
        assert unknown >= 1, question
        expected = (
            retriever.relevance(question, found)
            + MINILM.small_corpus_margin
            - MINILM.unknown_term_penalty * unknown
        )
        assert large.relevance(question, found) == pytest.approx(expected, abs=1e-9)
        # The judge itself, built apart from the retriever, agrees.
        judge = Relevance(retriever.index, replace(MINILM, vocabulary_min_chunks=0))
        assert judge.relevance(question, found) == pytest.approx(expected, abs=1e-9)
    higher = with_calibration(retriever, replace(MINILM, relevance_threshold=0.8))
    assert higher.threshold == 0.8
    assert not higher.is_relevant(ENSEMBLE, higher.search(ENSEMBLE))  # raised past it


def test_an_uncalibrated_model_reads_no_cosine(retriever: Retriever) -> None:
    judge = Relevance(retriever.index, UNCALIBRATED)
    for question in (MOLECULES, PEDESTRIANS):
        found = retriever.search(question)
        blind = [replace(r, similarity=0.0) for r in found]
        assert judge.relevance(question, found) == pytest.approx(judge.relevance(question, blind))
        # The English rule: the best paper's share of the question's terms, less the margin.
        best = max(retriever.coverage(question, found))
        assert judge.relevance(question, found) == pytest.approx(
            UNCALIBRATED.lexical_weight * best - UNCALIBRATED.small_corpus_margin
        )


def test_strictness_moves_the_threshold_and_nothing_else(
    seed_settings: Settings, retriever: Retriever
) -> None:
    stricter = open_retriever(with_overrides(seed_settings, {"retrieval": {"strictness": 0.15}}))
    assert stricter.threshold == pytest.approx(retriever.threshold + 0.15)
    found = stricter.search(ENSEMBLE)
    assert stricter.relevance(ENSEMBLE, found) == pytest.approx(
        retriever.relevance(ENSEMBLE, retriever.search(ENSEMBLE)), abs=1e-9
    )
    assert retriever.is_relevant(ENSEMBLE, found) and not stricter.is_relevant(ENSEMBLE, found)
    assert stricter.is_relevant(MOLECULES, stricter.search(MOLECULES))  # far above: answered
    looser = open_retriever(with_overrides(seed_settings, {"retrieval": {"strictness": -0.1}}))
    assert looser.is_relevant(MUSIC, looser.search(MUSIC))  # just under the bar: answered now
    assert not looser.is_relevant(PEDESTRIANS, looser.search(PEDESTRIANS))  # far under it


@pytest.mark.slow
def test_answers_and_refusals_of_the_assistant_follow_the_decision(
    seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    assistant = open_assistant(seed_settings, embeddings)
    for question in [MOLECULES, ENSEMBLE, MUSIC, PEDESTRIANS]:
        answered = question in ANSWERED
        result = answer(question, assistant=assistant)
        assert result.abstained is not answered, question
        assert bool(result.citations) is answered, question


@pytest.mark.slow  # over a second on 2 cores
def test_the_cli_says_when_the_embeddings_have_no_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = three_seed_papers(tmp_path / "three.jsonl")
    index = str(tmp_path / "index")
    with OpenAIServer() as server:  # OpenAI-protocol embeddings over real HTTP
        monkeypatch.setenv("RAG_EMBEDDING__PROVIDER", "openai")
        monkeypatch.setenv("RAG_EMBEDDING__MODEL", "text-embedding-test")
        monkeypatch.setenv("RAG_EMBEDDING__BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
        assert main(["ingest", str(papers), "--index", index, "--config", "offline"]) == 0
        capsys.readouterr()
        assert main(["search", "molecular conformations", "--index", index]) == 0
        err = capsys.readouterr().err
    assert "no calibration for the embedding model text-embedding-test" in err
    assert err.count("no calibration") == 1
    monkeypatch.delenv("RAG_EMBEDDING__PROVIDER")
    monkeypatch.delenv("RAG_EMBEDDING__MODEL")
    seeds = str(tmp_path / "seeds")
    assert main(["ingest", str(papers), "--index", seeds, "--config", "offline"]) == 0
    capsys.readouterr()
    assert main(["search", "molecular conformations", "--index", seeds]) == 0
    assert "no calibration" not in capsys.readouterr().err  # the bundled model has one
