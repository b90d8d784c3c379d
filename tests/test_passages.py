"""Evidence as passages with provenance: each sentence of an abstract is an exact slice with
its offsets and what it says, read once (rag.index.passages); a citation says where its quote
is (an abstract's passage or a title record's title) by offsets a reader can check.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rag.answer.pipeline import Assistant, answer, open_assistant
from rag.index.passages import contribution, passages
from rag.settings import Settings
from tests.helpers import CORPUS_JSONL, read_jsonl


@pytest.mark.slow  # over a second on 2 cores
def test_every_bundled_abstract_reads_as_exact_passages_in_order() -> None:
    for row in read_jsonl(CORPUS_JSONL):
        abstract = row["abstract"]
        read = passages(abstract)
        assert read, row["id"]
        assert [p.position for p in read] == list(range(len(read)))
        assert all(abstract[p.start : p.end] == p.text for p in read), row["id"]
        assert all(a.end <= b.start for a, b in zip(read, read[1:], strict=False))


def test_a_passage_says_what_it_does() -> None:
    abstract = (
        "Long prompts are prohibitively expensive to prefill. However, existing methods fix "
        "their sparsity in advance. We propose FlexPrefill, which adapts sparsity per head. "
        "It outperforms prior methods by 12% on LongBench. Code is available at "
        "https://github.com/x/y."
    )
    problem, leaning, method, result, link = passages(abstract)
    assert problem.problem and not problem.claim and not problem.leaning
    assert leaning.leaning and leaning.problem and not leaning.claim
    assert method.method and method.claim and not method.leaning
    assert result.finding and result.results >= 2 and result.evaluation and result.leaning
    assert link.noise
    assert contribution(abstract) == method
    assert passages("") == () and contribution("") is None
    (whole,) = passages("no sentence boundary here")
    assert (whole.start, whole.end) == (0, len("no sentence boundary here"))


@pytest.fixture(scope="module")
def seeds(seed_settings: Settings, embeddings: Any) -> Assistant:
    return open_assistant(seed_settings, embeddings=embeddings)


@pytest.mark.parametrize(
    "question",
    [
        "How can INT4 weight-activation quantization deal with outliers in activations?",
        "Which papers study large language models?",
        "PivotMesh 是做什么的？",
    ],
)
@pytest.mark.slow  # over a second on 2 cores
def test_every_quote_points_at_its_passage(seeds: Assistant, question: str) -> None:
    result = answer(question, assistant=seeds)
    assert result.citations
    for citation in result.citations:
        paper = result.sources[citation.n - 1].paper
        assert citation.evidence == "abstract" and citation.start is not None
        assert paper.abstract[citation.start : citation.end] == citation.quote
    printed = json.loads(json.dumps(result.as_json()))
    first = printed["citations"][0]
    assert (first["evidence"], first["start"], first["end"]) == (
        "abstract",
        result.citations[0].start,
        result.citations[0].end,
    )
