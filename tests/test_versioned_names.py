"""A versioned model name the abstracts never write ("GPT-5", "Llama-4") is an unknown term.

"papers evaluating GPT-5" quoted two GPT-4o papers: "gpt" and "5" are each in many abstracts,
and a hyphenated word counted as known when any part was ("over-smoothing" by "smoothing").
A name with a version is not a compound: it is known only when some abstract writes it whole.
"""

from __future__ import annotations

from rag.answer.pipeline import Assistant, answer
from rag.index.bm25 import KeywordIndex


def test_a_versioned_name_is_known_only_when_written_whole() -> None:
    texts = ["We evaluate GPT-4 and Llama-3 against over-smoothing.", "Graphs and 5 layers."]
    index = KeywordIndex.build(["a", "b"], ["p", "q"], texts, "g")
    asked = "GPT-5 Llama-3 GPT-4 Llama-4 over-smoothing under-smoothing 5-layer"
    assert index.unknown_terms(asked) == ["gpt-5", "llama-4"]


def test_a_question_on_a_model_the_conference_predates_is_refused(corpus: Assistant) -> None:
    for question in ("papers evaluating GPT-5", "how does llama-4 do on math?"):
        result = answer(question, assistant=corpus)
        assert result.abstained and not result.citations, question
    judged = answer("which papers use GPT-4 as a judge?", assistant=corpus)
    assert not judged.abstained and judged.citations
