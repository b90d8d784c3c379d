"""Chunking with the model's own tokenizer: every chunk fits, nothing is left out, titles lead."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from rag.corpus.loaders import load_papers
from rag.index.passages import chunk_paper, sentences, split_sentences, token_counter
from rag.models.minilm import LocalEmbeddings, load_tokenizer
from rag.settings import get_settings
from rag.types import Chunk, Paper
from tests.helpers import CORPUS_JSONL, ROOT

MAX_TOKENS = get_settings().chunking.max_tokens
OVERLAP = get_settings().chunking.overlap_sentences


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return load_tokenizer()


@pytest.fixture(scope="module")
def count(tokenizer: Any) -> Any:
    return token_counter(tokenizer)


@pytest.fixture(scope="module")
def all_papers(seed_papers: list[Paper]) -> list[Paper]:
    return seed_papers + load_papers([CORPUS_JSONL])


@pytest.fixture(scope="module")
def all_chunks(all_papers: list[Paper], count: Any) -> dict[str, list[Chunk]]:
    return {p.id: chunk_paper(p, count, MAX_TOKENS, OVERLAP) for p in all_papers}


def test_the_window_is_the_models_own(embeddings: LocalEmbeddings) -> None:
    assert MAX_TOKENS == embeddings.max_tokens == 256


def test_seed_abstracts_need_chunking(seed_papers: list[Paper], tokenizer: Any) -> None:
    """The issue's premise: 21 of the 38 seed abstracts do not fit in one window."""
    lengths = [len(ids) for ids in tokenizer([p.abstract for p in seed_papers])["input_ids"]]
    assert sum(n > MAX_TOKENS for n in lengths) == 21


@pytest.mark.slow
def test_every_chunk_fits_the_window_with_special_tokens(
    all_chunks: dict[str, list[Chunk]], tokenizer: Any
) -> None:
    texts = [c.text for cs in all_chunks.values() for c in cs]
    assert len(all_chunks) == 2143
    lengths = [len(ids) for ids in tokenizer(texts)["input_ids"]]  # [CLS] ... [SEP] included
    too_long = [(t[:60], n) for t, n in zip(texts, lengths, strict=True) if n > MAX_TOKENS]
    assert not too_long
    # Each chunk knows its own length (the ingest reports it without tokenizing again).
    assert [c.tokens + 2 for cs in all_chunks.values() for c in cs] == lengths
    # Windows are filled, not cut needlessly small.
    assert sum(lengths) / len(lengths) > MAX_TOKENS / 2


def test_every_sentence_is_in_some_chunk(
    all_papers: list[Paper], all_chunks: dict[str, list[Chunk]]
) -> None:
    for paper in all_papers:
        chunks = all_chunks[paper.id]
        covered = set()
        for c in chunks:
            covered.update(range(c.start, c.end))
        for start, end in split_sentences(paper.abstract):
            missing = [
                i for i in range(start, end) if i not in covered and not paper.abstract[i].isspace()
            ]
            assert not missing, f"{paper.id}: {paper.abstract[start:end]!r} is in no chunk"
        # In particular the last sentence, the tail a single truncated window would lose.
        assert chunks[-1].text.endswith(sentences(paper.abstract)[-1])


def test_long_abstracts_are_split_into_overlapping_windows(
    seed_papers: list[Paper], all_chunks: dict[str, list[Chunk]], tokenizer: Any
) -> None:
    whole = [p.title + "\n" + p.abstract for p in seed_papers]
    lengths = [len(ids) for ids in tokenizer(whole)["input_ids"]]
    for paper, length in zip(seed_papers, lengths, strict=True):
        # One window when title and abstract fit, several only when they do not.
        assert (len(all_chunks[paper.id]) == 1) == (length <= MAX_TOKENS), paper.id
    multi = [all_chunks[p.id] for p in seed_papers if len(all_chunks[p.id]) > 1]
    assert len(multi) >= 21
    abstracts = {p.id: p.abstract for p in seed_papers}
    for chunks in multi:
        for a, b in zip(chunks, chunks[1:], strict=False):
            # consecutive windows touch (only whitespace between) or overlap
            assert b.start <= a.end or not abstracts[a.paper_id][a.end : b.start].strip()
            assert b.start > a.start  # and always move forward
    overlapping = sum(b.start < a.end for cs in multi for a, b in zip(cs, cs[1:], strict=False))
    if OVERLAP:
        assert overlapping >= len(multi)  # one sentence repeated between windows
    else:
        assert overlapping == 0


def test_chunks_start_with_the_title_and_hold_exact_slices(
    all_papers: list[Paper], all_chunks: dict[str, list[Chunk]]
) -> None:
    for paper in all_papers:
        chunks = all_chunks[paper.id]
        assert [c.index for c in chunks] == list(range(len(chunks)))
        assert [c.id for c in chunks] == [f"{paper.id}::{i}" for i in range(len(chunks))]
        for c in chunks:
            assert c.paper_id == paper.id
            assert c.text == paper.title + "\n" + paper.abstract[c.start : c.end]


# The seeds' chunks (id, start, end, tokens) at 256 tokens, one sentence of overlap: 65 chunks,
# the first six here and the digest of all of them. A change of the tokenizer, the sentence
# splitter or the packing moves them, and with them the ids stored in every index.
SEED_CHUNKS = 65
FIRST_CHUNKS = [
    ["000_8151f1bd5b6a28e2-001::0", 0, 1037, 236],
    ["000_8151f1bd5b6a28e2-001::1", 934, 1624, 179],
    ["000_8151f1bd5b6a28e2-002::0", 0, 1139, 228],
    ["000_8151f1bd5b6a28e2-003::0", 0, 1045, 224],
    ["000_8151f1bd5b6a28e2-003::1", 909, 1896, 240],
    ["000_8151f1bd5b6a28e2-004::0", 0, 1130, 220],
]
SEED_DIGEST = "4cdcd0d2ec295a1c62f15d2e3eb9344f95bd76fb6510ea2236988cc322f59193"
CHUNK_SEEDS = """
import json
from rag.corpus.loaders import load_papers
from rag.index.passages import chunk_paper, token_counter
from rag.models.minilm import load_tokenizer
from rag.settings import SEED_FILES
count = token_counter(load_tokenizer())
chunks = [c for p in load_papers(list(SEED_FILES)) for c in chunk_paper(p, count, 256, 1)]
print(json.dumps([[c.id, c.start, c.end, c.tokens] for c in chunks]))
"""


def spans(chunks: list[Chunk]) -> list[list[Any]]:
    return [[c.id, c.start, c.end, c.tokens] for c in chunks]


@pytest.mark.slow
def test_chunking_is_deterministic(seed_papers: list[Paper], count: Any) -> None:
    """This process's chunks, a fresh process's (its own tokenizer, another hash seed) and the
    pinned ones above agree."""
    assert (MAX_TOKENS, OVERLAP) == (256, 1)
    here = spans([c for p in seed_papers for c in chunk_paper(p, count, MAX_TOKENS, OVERLAP)])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "12345"}
    env = {k: v for k, v in env.items() if not k.startswith("RAG_")}
    done = subprocess.run(
        [sys.executable, "-c", CHUNK_SEEDS], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    fresh = json.loads(done.stdout)
    assert fresh == here
    assert len(here) == SEED_CHUNKS and here[: len(FIRST_CHUNKS)] == FIRST_CHUNKS
    assert hashlib.sha256(json.dumps(here).encode()).hexdigest() == SEED_DIGEST


@pytest.mark.parametrize("max_tokens", [64, 128, 512])
def test_other_window_sizes_fit(
    seed_papers: list[Paper], count: Any, tokenizer: Any, max_tokens: int
) -> None:
    for paper in seed_papers:
        chunks = chunk_paper(paper, count, max_tokens, OVERLAP)
        lengths = [len(ids) for ids in tokenizer([c.text for c in chunks])["input_ids"]]
        assert max(lengths) <= max_tokens, paper.id
        assert chunks[0].start == 0
        assert chunks[-1].end == len(paper.abstract)


def test_sentence_spans_are_exact_slices(all_papers: list[Paper]) -> None:
    for paper in all_papers:
        text = paper.abstract
        spans = split_sentences(text)
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
        for (_, e), (s2, _) in zip(spans, spans[1:], strict=False):
            assert e <= s2 and text[e:s2].strip() == ""  # only whitespace between sentences
        assert sentences(text) == [text[s:e] for s, e in spans]
        assert all(text[s:e] == text[s:e].strip() for s, e in spans)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "We use encoders, e.g. BERT and RoBERTa, as in Smith et al. 2020. They work.",
            ["We use encoders, e.g. BERT and RoBERTa, as in Smith et al. 2020.", "They work."],
        ),
        (
            "Results hold (i.e. Theorem 2 applies). See Fig. 3 and Eq. 4 vs. Tab. 2. Done!",
            ["Results hold (i.e. Theorem 2 applies).", "See Fig. 3 and Eq. 4 vs. Tab. 2.", "Done!"],
        ),
        (
            'Accuracy rises to 95.3% on U.S. data. Does it transfer? Yes. "Quoted." Last one',
            [
                "Accuracy rises to 95.3% on U.S. data.",
                "Does it transfer?",
                "Yes.",
                '"Quoted."',
                "Last one",
            ],
        ),
        (
            "It scales to 1.1B parameters. 3D results follow.",
            ["It scales to 1.1B parameters.", "3D results follow."],
        ),
    ],
)
def test_sentence_splitting(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_abbreviations_in_real_abstracts_do_not_split(all_papers: list[Paper]) -> None:
    checked = 0
    for paper in all_papers:
        for sentence in sentences(paper.abstract):
            for abbreviation in ("e.g.", "i.e.", "et al."):
                assert not sentence.endswith(abbreviation), (paper.id, sentence)
        checked += "e.g." in paper.abstract
    assert checked > 100  # the corpus really exercises this


def test_a_sentence_longer_than_the_window_is_cut_at_words(count: Any, tokenizer: Any) -> None:
    words = " ".join(f"word{i} alpha-beta gamma" for i in range(300))
    paper = Paper(id="long", title="Endless", abstract=f"Short start. {words}. Short end.")
    chunks = chunk_paper(paper, count, 128, 1)
    lengths = [len(ids) for ids in tokenizer([c.text for c in chunks])["input_ids"]]
    assert len(chunks) > 5 and max(lengths) <= 128
    assert "word0 " in chunks[0].text and chunks[-1].text.endswith("Short end.")
    body = set()
    for c in chunks:
        body.update(range(c.start, c.end))
    assert all(i in body for i, ch in enumerate(paper.abstract) if not ch.isspace())
    for c in chunks:  # cuts fall between words
        assert c.start == 0 or paper.abstract[c.start - 1] == " "
        assert c.end == len(paper.abstract) or paper.abstract[c.end] == " "
