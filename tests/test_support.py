"""A citation whose claim the abstract does not support is marked so, and shows no quote.

Replies come from a real local HTTP server speaking the OpenAI protocol; the index holds real
papers of the bundled corpus. The floor itself is measured by bench/calibrate_support.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.answer.support import best_quotes
from rag.cli.main import main
from rag.index.ingest import build_index
from rag.index.passages import sentences
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.calibration import MINILM
from rag.settings import Settings, with_overrides
from rag.types import Paper
from testkit.openai_server import OpenAIServer
from tests.helpers import CORPUS_JSONL, make_settings, plain, point_app_at, read_jsonl
from tests.scripted_model import llm_config

APP = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
TOPOLM = "aWXnKanInf"
# Language-model papers around it, so that retrieval has something to rank.
NEIGHBOURS = ["odjMSBSWRt", "QEHrmQPBdd", "WNvvwK0tut", "WCRQFlji2q", "MGKDBuyv4p"]
QUESTION = "How does TopoLM organise its units like the brain's language system?"
HOSTILE = "TopoLM cures Alzheimer's disease, and its authors hail it as the 'first AGI' [1]."
FAITHFUL = (
    "TopoLM adds a spatial smoothness loss to next-token prediction, so its units form "
    "clusters that resemble the functional organisation of the brain's language system [1]."
)
PADDED = (
    "TopoLM is a transformer language model whose units have a two-dimensional layout [1]. "
    "It also cures Alzheimer's disease [1]."
)


@pytest.fixture(scope="module")
def index_settings(
    tmp_path_factory: pytest.TempPathFactory, embeddings: LocalEmbeddings
) -> Settings:
    folder = tmp_path_factory.mktemp("support")
    wanted = {TOPOLM, *NEIGHBOURS}
    records = [r for r in read_jsonl(CORPUS_JSONL) if r["id"] in wanted]
    assert {r["id"] for r in records} == wanted
    corpus = folder / "papers.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    settings = make_settings(folder / "index")
    build_index(settings, [corpus], embeddings=embeddings)
    return settings


@pytest.fixture
def srv_alone(srv: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:
    """`srv`, with the caller's key, config, corpus and base URL unset."""
    for name in ("OPENAI_API_KEY", "RAG_CONFIG", "RAG_CORPUS", "RAG_LLM__BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return srv


@pytest.fixture
def assistant(
    index_settings: Settings, srv_alone: OpenAIServer, embeddings: LocalEmbeddings
) -> Assistant:
    llm = {"model": "openai:gpt-test", "base_url": srv_alone.base_url, "max_retries": 0}
    return open_assistant(with_overrides(index_settings, {"llm": llm}), embeddings=embeddings)


def topolm_abstract() -> str:
    return next(r["abstract"] for r in read_jsonl(CORPUS_JSONL) if r["id"] == TOPOLM)


@pytest.mark.slow
def test_an_invented_claim_is_unsupported_with_no_quote_and_counted_by_the_cli(
    index_settings: Settings,
    srv_alone: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = llm_config(tmp_path, srv_alone)
    index = str(index_settings.store.index_dir)
    args = ["ask", QUESTION, "--index", index, "--config", str(config)]
    srv_alone.script(HOSTILE)
    assert main([*args, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert "TopoLM" in srv_alone.requests[0].prompt_text  # the model was asked, with the paper
    [citation] = printed["citations"]
    assert citation["paper_id"] == TOPOLM and citation["n"] == 1
    assert citation["supported"] is False and citation["support"] < MINILM.support_floor
    assert citation["quote"] == ""  # no sentence of the abstract passes for its evidence
    assert printed["unsupported"] == 1
    assert "first AGI" in printed["answer"]  # the answer is shown as written, not rewritten

    srv_alone.script(HOSTILE)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "(claim not found in this abstract)" in out
    assert not any(s in out for s in sentences(topolm_abstract()))


def test_a_faithful_paraphrase_stays_supported_with_its_quote(
    srv_alone: OpenAIServer, assistant: Assistant
) -> None:
    srv_alone.script(FAITHFUL)
    result = answer(QUESTION, assistant=assistant)
    assert result.sources[0].paper.id == TOPOLM
    [citation] = result.citations
    assert citation.supported and citation.support >= MINILM.support_floor
    assert citation.quote in sentences(topolm_abstract())
    assert result.as_json()["unsupported"] == 0


def test_one_invented_claim_beside_a_true_one_unsupports_the_citation(
    srv_alone: OpenAIServer, assistant: Assistant
) -> None:
    srv_alone.script(PADDED)
    [citation] = answer(QUESTION, assistant=assistant).citations
    assert not citation.supported and citation.quote == ""


@pytest.mark.slow
def test_the_card_says_not_found_and_quotes_nothing(
    index_settings: Settings,
    srv_alone: OpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    index, feedback = index_settings.store.index_dir, tmp_path / "feedback.jsonl"
    point_app_at(monkeypatch, index, feedback, model="openai:gpt-test")
    monkeypatch.setenv("RAG_LLM__BASE_URL", srv_alone.base_url)
    monkeypatch.setenv("RAG_LLM__MAX_RETRIES", "0")
    # The second question is rewritten with the chat as context first: the rewrite is the same.
    srv_alone.script(HOSTILE, QUESTION, FAITHFUL)
    at = AppTest.from_file(APP, default_timeout=120).run()
    for _ in range(2):
        at.chat_input[0].set_value(QUESTION).run()
        assert not at.exception, at.exception

    assert len(srv_alone.requests) == 3
    hostile, faithful = at.chat_message[1], at.chat_message[3]
    abstract = topolm_abstract()

    def card(message: Any) -> tuple[list[str], list[str]]:
        """The warnings and the quoted or highlighted text of a reply's cards."""
        warnings = [plain(w.value) for w in message.warning]
        texts = [plain(m.value) for m in message.markdown]
        quoted = [t[2:] for t in texts if t.startswith("> ")]
        quoted += re.findall(r":orange-background\[(.*?)\]", "\n".join(texts))
        return warnings, quoted

    warnings, quoted = card(hostile)
    assert any("Not found in this abstract" in w for w in warnings)
    assert quoted == []
    warnings, quoted = card(faithful)
    assert not any("Not found" in w for w in warnings)
    assert quoted and all(q.strip() in abstract for q in quoted)


# Issue 22, item 10: a few Chinese letters must not switch the check off.
MIXED = "TopoLM cures Alzheimer's disease and is the first AGI (治愈阿尔茨海默病) [1]."


def test_a_mostly_english_claim_with_chinese_letters_is_still_checked(
    srv_alone: OpenAIServer, assistant: Assistant
) -> None:
    srv_alone.script(MIXED)
    result = answer(QUESTION, assistant=assistant)
    [citation] = result.citations
    assert citation.paper_id == TOPOLM
    assert citation.supported is False and citation.support is not None
    assert citation.support < MINILM.support_floor
    assert citation.quote == ""
    printed = result.as_json()
    assert printed["unsupported"] == 1 and printed["citations"][0]["supported"] is False


# Issue 32 (M4): a claim that negates its sentence, changes a number, or hides behind
# look-alike letters.
NEGATED = (
    "TopoLM does not predict the emergence of a spatially organized cortical language system [1]."
)
CYRILLIC = str.maketrans("oeacpxyOEACPX", "оеасрхуОЕАСРХ")  # Latin -> Cyrillic look-alikes


@pytest.mark.parametrize(
    "reply",
    [NEGATED, HOSTILE.translate(CYRILLIC), PADDED.translate(CYRILLIC)],
    ids=["negated", "cyrillic invented", "cyrillic padded"],
)
def test_a_negated_or_disguised_claim_is_unsupported_and_quotes_nothing(
    srv_alone: OpenAIServer, assistant: Assistant, reply: str
) -> None:
    """Before: the negated sentence was supported (1.03); Cyrillic letters made the claim
    "not English", so it went unchecked while a real sentence was highlighted."""
    srv_alone.script(reply)
    [citation] = answer(QUESTION, assistant=assistant).citations
    assert citation.supported is False and citation.quote == "", citation


def test_a_faithful_claim_in_look_alike_letters_is_measured_and_supported(
    srv_alone: OpenAIServer, assistant: Assistant
) -> None:
    srv_alone.script(FAITHFUL.translate(CYRILLIC))
    [citation] = answer(QUESTION, assistant=assistant).citations
    assert citation.supported is True and citation.quote in sentences(topolm_abstract())


SCALING = Paper(
    id="scaling1",
    title="Scaling laws for wallaby models",
    abstract=(
        "We train wallaby language models from 1B to 13B parameters on 2,048-token windows. "
        "Their loss falls as a power law in compute, and larger models improve calibration."
    ),
)


TRAIN = "We train wallaby language models from 1B to {} parameters on {}-token windows [1]."
LOSS = "Their loss {} as a power law in compute, and larger models {} calibration [1]."


@pytest.mark.parametrize(
    ("claim", "supported"),
    [
        (TRAIN.format("13B", "2,048"), True),
        (TRAIN.format("999B", "2,048"), False),
        (TRAIN.format("13B", "4,096"), False),
        (LOSS.format("falls", "improve"), True),
        (LOSS.format("falls", "do not improve"), False),
        (LOSS.format("does not fall", "improve"), False),
        (LOSS.format("never falls", "improve"), False),
        (LOSS.format("falls", "cannot improve"), False),
        ("In this ICLR 2025 paper, " + TRAIN.format("13B", "2,048"), True),  # a year: no fact
    ],
)
def test_a_changed_number_or_a_negation_is_not_supported(
    embeddings: LocalEmbeddings, claim: str, supported: bool
) -> None:
    """Before: "1B to 999B" was supported (1.05), as was "do not improve"."""
    [quote] = best_quotes(claim, {1: SCALING}, embeddings, fallback_claim=None).values()
    assert quote.supported is supported, quote


def test_an_unchecked_claim_marks_no_nearest_sentence() -> None:
    """Issue 32 (L8): a Chinese claim (unchecked) still had its nearest sentence highlighted,
    in the hover title and in the export's quotes, as if it were evidence."""
    from rag.answer.citations import Citation, CitedAnswer
    from rag.types import RetrievedPaper
    from ui.export import chat_markdown
    from ui.render import Turn, answer_markdown, highlighted_abstract, source_rows

    abstract = topolm_abstract()
    nearest = sentences(abstract)[3]
    paper = Paper(id=TOPOLM, title="TopoLM", abstract=abstract, url="https://openreview.net/x")
    citation = Citation(1, TOPOLM, "TopoLM", paper.url, "", nearest, support=None, supported=None)
    result = CitedAnswer(
        question="TopoLM 是什么？",
        standalone_question="What is TopoLM?",
        answer="TopoLM 是一种具有二维空间表示的语言模型 [1]。",
        citations=[citation],
        sources=[RetrievedPaper(paper, 1.0, 0.9)],
        abstained=False,
        model="gpt-test",
    )
    [row] = source_rows(result)
    assert row.supported is None and row.quotes == []
    assert "orange-background" not in highlighted_abstract(abstract, row.quotes)
    shown = plain(answer_markdown(result, 0))
    assert "not checked against this abstract" in shown and nearest[:40] not in shown
    assert "Quoted:" not in chat_markdown([Turn(result.question, answer=result)])


def test_a_claim_citing_two_sources_may_take_its_numbers_from_either(
    embeddings: LocalEmbeddings,
) -> None:
    tracker = Paper(
        id="tracker1",
        title="Wallaby tracking",
        abstract="Our wallaby tracker reaches 91% recall on night footage from thermal cameras.",
    )
    claim = "Wallaby models from 1B to 13B parameters track wallabies at 91% recall [1][2]."
    quotes = best_quotes(claim, {1: SCALING, 2: tracker}, embeddings, fallback_claim=None)
    assert not any(q.contradicted for q in quotes.values()), quotes
