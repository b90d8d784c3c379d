"""Exact terms and BM25 read a text the same way: one stopword list, one stemmer."""

from __future__ import annotations

import bm25s
import pytest

from rag.common.similarity import lexical_scores, terms
from rag.index.bm25 import KeywordIndex

TEXT = (
    "Summarize the studies on transformers: their learning curves, running queries faster, "
    "and the reverse curse of masked diffusion models"
)


def bm25_tokens(text: str) -> set[str]:
    """The terms BM25 indexes for `text` (rag.index.bm25 tokenizes with these words)."""
    index = KeywordIndex.build(["c"], ["p"], [text], "g")
    assert index.retriever is not None
    return set(index.retriever.vocab_dict) - {""}  # bm25s keeps an empty token for empty texts


def test_bm25_and_exact_terms_stem_and_drop_the_same_words() -> None:
    simple = {t for t in terms(TEXT) if t.isalpha()}
    assert simple == bm25_tokens(TEXT)
    assert {"transform", "run", "queri", "curv", "revers", "curs"} <= simple
    assert not {"summar", "summarize", "studi", "the", "model"} & simple


def test_one_stopword_list_without_duplicates() -> None:
    from rag.common.similarity import STOPWORDS

    assert isinstance(STOPWORDS, frozenset)
    assert set(bm25s.stopwords.STOPWORDS_EN) <= STOPWORDS  # BM25's usual list is part of it
    assert terms(" ".join(sorted(STOPWORDS))) == set()


def test_inflections_match_across_question_and_abstract() -> None:
    abstract = "We train transformers that learned to run queries."
    question = "Which transformer learns to run a query?"
    assert terms(question) <= terms(abstract)
    assert lexical_scores(question, [abstract, "Unrelated text about cooking."]).tolist() == [
        1.0,
        0.0,
    ]


SPELLINGS = [
    "Residual connections provably prevent oversmoothing in deep GNNs.",
    "Bundle networks mitigate over-smoothing and over-squashing in message passing.",
    "Optimizing smooth functions by gradient methods.",
    "Operator deep smoothing for implied volatility.",
    "Smooth activations for INT4 inference.",
    "Label smoothing for long-tailed recognition.",
]


@pytest.mark.parametrize(
    "question", ["over-smoothing", "oversmoothing", "papers on Over-Smoothing"]
)
def test_a_hyphenated_word_and_the_same_word_written_as_one_find_each_other(
    question: str,
) -> None:
    """Abstracts write "pre-training" 198 times and "pretraining" 121; "papers on
    over-smoothing in GNNs" found "Operator Deep Smoothing for Implied Volatility", not the
    papers that write "oversmoothing"."""
    ids = [str(n) for n in range(len(SPELLINGS))]
    ranked = [
        chunk for chunk, _ in KeywordIndex.build(ids, ids, SPELLINGS, "g").search(question, 6)
    ]
    assert set(ranked[:2]) == {"0", "1"}  # before the papers that only write "smooth"


def test_a_hyphenated_question_word_no_abstract_writes_as_one_counts_once() -> None:
    """ "long-context" is not searched as "longcontext" as well when no text writes it so: it
    would weigh twice against the abstracts that write "long context"."""
    texts = ["Benchmarks of long-context models.", "Benchmarks of long context models."]
    index = KeywordIndex.build(["a", "b"], ["a", "b"], texts, "g")
    found = dict(index.search("long-context benchmarks", 2))
    assert set(found) == {"a", "b"}
    assert max(found.values()) / min(found.values()) < 1.15


def test_an_acronym_and_its_plural_are_one_term() -> None:
    """Snowball keeps the "s" of a word with no vowel: "LLMs" was another term than "LLM"."""
    assert terms("LLMs, GNNs and VLMs") == terms("an LLM, a GNN and a VLM") == {"llm", "gnn", "vlm"}
    index = KeywordIndex.build(["a", "b"], ["a", "b"], ["Aligning LLMs.", "Aligning robots."], "g")
    assert [chunk for chunk, _ in index.search("LLM alignment", 2)][0] == "a"


def test_a_term_is_held_in_either_spelling() -> None:
    """The list's subject, a count's topic and relevance's coverage read terms this way."""
    from rag.common.similarity import held

    assert held(terms("over-smoothing in GNNs"), terms("Oversmoothing of a GNN")) == {
        "over-smooth",
        "gnn",
    }
    assert held(terms("pretraining data"), terms("pre-training on web data")) == {
        "pretrain",
        "data",
    }
    assert held(terms("multi-modal models"), terms("a multimodal model")) == {"multi-modal"}
    assert held(terms("finetuning"), terms("fine-tuning")) == {"finetun"}
    assert held(terms("fine-tuning"), terms("tuning a fine model")) == set()
