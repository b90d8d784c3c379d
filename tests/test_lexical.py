"""Exact terms and BM25 read a text the same way: one stopword list, one stemmer."""

from __future__ import annotations

import bm25s

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
