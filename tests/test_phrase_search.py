"""A short topic is a phrase: "consistency models" asks for papers that write it, not for
papers that write "consistency" most often ("models" is a word every abstract uses, so the
word index read the question as "consistency" alone and put a paper on forecasters'
consistency checks first)."""

from __future__ import annotations

import re

from rag.answer.pipeline import Assistant, answer
from rag.index.bm25 import KeywordIndex, _tokenize

TEXTS = {
    "checks": "Consistency checks measure the consistency of forecasts; consistency is rare. "
    "Our models keep consistency across questions.",
    "cm": "Consistency models are generative models that sample in one step.",
    "other": "Diffusion models sample in many steps.",
}


def keyword_index() -> KeywordIndex:
    ids = list(TEXTS)
    return KeywordIndex.build([f"{i}::0" for i in ids], ids, list(TEXTS.values()), "g")


def test_a_short_query_ranks_the_chunk_that_writes_its_phrase_first() -> None:
    index = keyword_index()
    assert [c for c, _ in index.search("consistency models", 3)][0] == "cm::0"
    assert [c for c, _ in index.search("consistency", 3)][0] == "checks::0"  # the word alone


def test_a_sentence_is_searched_by_its_words_alone() -> None:
    """Neighbouring words of a long question are no phrase: its scores are the word index's."""
    index = keyword_index()
    question = "which generative models keep consistency when they sample in one step quickly"
    assert index.retriever is not None
    words = index.retriever.get_scores(_tokenize([question], return_ids=False)[0])
    found = dict(index.search(question, 3))
    assert found == {c: float(w) for c, w in zip(index.chunk_ids, words, strict=True) if w > 0}


def _writes(paper_text: str, phrase: str) -> bool:
    return re.search(rf"\b{phrase}", paper_text, re.I) is not None


def test_a_topic_of_two_words_finds_the_papers_that_write_it(corpus: Assistant) -> None:
    for topic, phrase in [
        ("consistency models", r"consistency[\s-]+models?\b"),
        ("state space models", r"state[\s-]+space[\s-]+models?\b"),
    ]:
        found = corpus.retriever.search(topic, k=5)
        texts = [f"{r.paper.title} {r.paper.abstract}" for r in found]
        assert _writes(texts[0], phrase), (topic, found[0].paper.title)
        assert sum(_writes(t, phrase) for t in texts) >= 4
        result = answer(topic, assistant=corpus)
        first = next(s.paper for s in result.sources if s.paper.id == result.citations[0].paper_id)
        assert _writes(f"{first.title} {first.abstract}", phrase)
        assert "Forecasters" not in first.title


def test_a_common_phrase_says_no_more_than_its_rarer_word(corpus: Assistant) -> None:
    """ "diffusion models" is what most chunks with "diffusion" write: read as a phrase, it
    outweighed "lora" and "papers on lora for diffusion models" listed diffusion papers that
    never mention LoRA."""
    found = corpus.retriever.search("lora for diffusion models", k=5)
    assert all("lora" in f"{r.paper.title} {r.paper.abstract}".lower() for r in found)
