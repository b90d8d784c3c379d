"""Split abstracts into sentence-aligned windows that fit the embedding model.

Each chunk starts with the paper's title, holds whole sentences (one repeated between
windows) and is measured with the model's own tokenizer, so nothing is truncated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rag.types import Chunk, Paper

TokenCounter = Callable[[Sequence[str]], list[int]]

# A sentence ends at . ! ? followed by space and an upper-case letter, digit or markup,
# except after common abbreviations.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9$\\(\[\"'“])")
_ABBREVIATIONS = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|Fig|Eq|Sec|Tab|No|approx|resp|w\.r\.t|Dr|Mr|Ms)\.|"
    r"\b[A-Z]\.)$"
)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences of `text`; every span is an exact slice."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if _ABBREVIATIONS.search(text[start : match.start()]):
            continue
        end = match.start() + len(match.group(0).rstrip())
        spans.append((start, end))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text.rstrip())))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def chunk_paper(
    paper: Paper, count_tokens: TokenCounter, max_tokens: int, overlap: int = 1
) -> list[Chunk]:
    """Windows of whole sentences, each with the title, within `max_tokens` word pieces."""
    spans = _fit_spans(paper.abstract, split_sentences(paper.abstract), count_tokens, max_tokens)
    header = paper.title + "\n"
    header_tokens = count_tokens([header])[0]
    if not spans:  # a title record (no abstract in the corpus): its title is its one chunk
        return [Chunk(f"{paper.id}::0", paper.id, 0, header, 0, 0, header_tokens)]
    budget = max_tokens - 2 - header_tokens  # [CLS] and [SEP]
    sizes = count_tokens([paper.abstract[s:e] for s, e in spans])
    windows: list[tuple[int, int]] = []  # sentence index ranges
    first = 0
    while first < len(spans):
        last, used = first, sizes[first]
        while last + 1 < len(spans) and used + sizes[last + 1] <= budget:
            last += 1
            used += sizes[last]
        windows.append((first, last))
        if last + 1 >= len(spans):
            break
        # Repeat up to `overlap` sentences, but always move forward.
        first = max(first + 1, last + 1 - overlap)
        while first <= last and sum(sizes[first : last + 2]) > budget:
            first += 1
    chunks = []
    for index, (a, b) in enumerate(windows):
        start, end = spans[a][0], spans[b][1]
        chunks.append(
            Chunk(
                id=f"{paper.id}::{index}",
                paper_id=paper.id,
                index=index,
                text=header + paper.abstract[start:end],
                start=start,
                end=end,
                # WordPiece splits at whitespace first, so the pieces of the parts add up.
                tokens=header_tokens + sum(sizes[a : b + 1]),
            )
        )
    return chunks


def _fit_spans(
    text: str, spans: list[tuple[int, int]], count_tokens: TokenCounter, max_tokens: int
) -> list[tuple[int, int]]:
    """Cut any sentence longer than half the window at word boundaries."""
    limit = max(16, max_tokens // 2)
    fitted: list[tuple[int, int]] = []
    for (start, end), size in zip(spans, count_tokens([text[s:e] for s, e in spans]), strict=True):
        if size <= limit:
            fitted.append((start, end))
            continue
        words = [(m.start() + start, m.end() + start) for m in re.finditer(r"\S+", text[start:end])]
        step = max(1, len(words) * limit // (size + 1))
        for i in range(0, len(words), step):
            piece = words[i : i + step]
            fitted.append((piece[0][0], piece[-1][1]))
    return fitted


def token_counter(tokenizer: object) -> TokenCounter:
    """Count word pieces (without special tokens) with a Hugging Face tokenizer."""

    def count(texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encoded = tokenizer(list(texts), add_special_tokens=False)  # type: ignore[operator]
        return [len(ids) for ids in encoded["input_ids"]]

    return count
