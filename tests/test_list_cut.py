"""Where list answers stop (rag.answer.list_cut), on the bundled corpus and the real model."""

from __future__ import annotations

import pytest

from rag.answer.judge import Judged, Verdict, kept
from rag.answer.list_cut import subject_shares
from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.lang.question_kind import is_list_request, list_subject
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings
from rag.types import Paper, RetrievedPaper

FLEXPREFILL = "OfjIlbelrT"


@pytest.fixture(scope="module")
def corpus(corpus_settings: Settings, embeddings: LocalEmbeddings) -> Assistant:
    return open_assistant(corpus_settings, embeddings=embeddings)


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("Which papers propose benchmarks for web browsing agents?", "benchmarks for web"),
        ("Any work on watermarking the outputs of generative models?", "watermarking the"),
        ("Are there papers that prune the KV cache?", "prune the KV cache?"),
        ("List papers that quantize the weights of LLMs", "quantize the weights"),
        ("What is new in speculative decoding?", "speculative decoding?"),
        ("Which papers?", "Which papers?"),  # nothing after the frame: the whole question
    ],
)
def test_the_list_subject_is_what_follows_the_frame(question: str, subject: str) -> None:
    assert list_subject(question).startswith(subject)


@pytest.mark.parametrize(
    ("question", "is_list"),
    [
        ("哪些论文压缩或量化KV缓存？", True),
        ("有哪些关于状态空间模型的论文？", True),
        ("列出一些关于联邦学习的论文", True),
        ("FlexPrefill 是什么？", False),
        ("这篇论文的方法是什么？", False),
    ],
)
def test_chinese_list_questions_are_lists(question: str, is_list: bool) -> None:
    assert is_list_request(question) is is_list


def test_a_list_stops_where_its_subject_stops(corpus: Assistant) -> None:
    question = "Which papers make attention cheaper for long sequences?"
    result = answer(question, assistant=corpus, k=10)
    cited = [c.paper_id for c in result.citations]
    # A paraphrase of FlexPrefill's subject (its abstract says neither "cheaper" nor
    # "sequences") is kept by its closeness to the subject; papers about neither go.
    assert FLEXPREFILL in cited
    assert len(cited) < len(result.sources) == 10
    # More candidates were checked than the sources setting shows; those cited come first.
    assert result.checked == corpus.retriever.calibration.list_pool > 10
    assert [c.n for c in result.citations] == list(range(1, len(cited) + 1))


def retrieved(pid: str, abstract: str) -> RetrievedPaper:
    return RetrievedPaper(Paper(id=pid, title=pid, abstract=abstract), 1.0, 1.0)


def test_the_subjects_terms_weigh_as_much_as_the_leading_papers_hold_them() -> None:
    sources = [
        retrieved("a", "Machine unlearning for language models."),
        retrieved("b", "We evaluate unlearning."),
        retrieved("c", "A benchmark of machine translation."),
    ]
    shares = subject_shares("evaluate machine unlearning", sources, lambda t: 1.0, lead=2)
    # "unlearning" is held by both leading papers, "machine" and "evaluate" by one each.
    assert shares == [0.75, 0.75, 0.25]


def test_a_list_keeps_the_papers_that_belong_first_up_to_k() -> None:
    sources = [retrieved(pid, "") for pid in "abcde"]
    flags = (True, False, True, False, True)
    verdict = Verdict(
        tuple(Judged(s.paper.id, f, 0.5, "") for s, f in zip(sources, flags, strict=True)),
        answers=True,
        by="offline",
    )
    shown, narrowed = kept(verdict, sources, 4)
    assert [s.paper.id for s in shown] == ["a", "c", "e", "b"]
    assert narrowed.belongs == (True, True, True, False)
    assert (narrowed.checked, narrowed.matched) == (5, 3)


def test_a_chinese_list_question_gets_a_list(corpus: Assistant) -> None:
    result = answer("哪些论文压缩或量化KV缓存？", assistant=corpus, k=10)
    # One line per relevant paper (an answer quotes 3 at most), each about the KV cache.
    assert len(result.citations) > 3
    titles = [result.sources[c.n - 1].paper.title for c in result.citations]
    assert sum("KV" in t or "Cache" in t for t in titles) >= 4


def test_a_single_paper_question_is_untouched(corpus: Assistant) -> None:
    result = answer("What is FlexPrefill?", assistant=corpus, k=10)
    assert result.citations[0].paper_id == FLEXPREFILL and result.citations[0].n == 1
