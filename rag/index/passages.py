"""An abstract as its sentences: windows that fit the encoder, and passages of evidence.

- Chunks: sentence-aligned windows that fit the embedding model. Each starts with the
  paper's title, holds whole sentences (one repeated between windows) and is measured with the
  model's own tokenizer, so nothing is truncated.
- Passages (evidence with provenance): an abstract read once as passages, each an exact
  sentence with its offsets and what it says (a contribution, a finding, the problem,
  background, ...). The offline writer picks its quotes by these roles, and a citation points
  at the passage it quotes; the cues are read here, once per abstract, not by each stage that
  needs them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

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


_METHOD = re.compile(
    r"\b(?:we|this (?:paper|work)|our (?:paper|work))\b[^.;]{0,60}?"
    r"\b(?:propos|introduc|present|develop|design|build|formulat)\w*",
    re.IGNORECASE,
)
_RESULT = re.compile(
    r"\b(?:outperform|improv|achiev|surpass|state-of-the-art|sota|speed-?up|faster|reduc|"
    r"boost|gain|exceed|better|match|competitive|accura|demonstrat|show)\w*|\d+(?:\.\d+)?\s*%|"
    r"\d+(?:\.\d+)?\s*[x×]\b",
    re.IGNORECASE,
)
# "We find / show / prove that ...": what the paper establishes.
_FINDING = re.compile(
    r"\bwe\b[^.;]{0,50}?\b(?:find|found|show|discover|prove|demonstrat|identif|observ|reveal"
    r"|trace|establish|uncover|confirm)\w*",
    re.IGNORECASE,
)
# Prior work and the field at large: context, not what this paper does.
_BACKGROUND = re.compile(
    r"^\W*(?:Prior|Previous|Existing|Recent(?:ly)?|Current(?:ly)?|Traditional(?:ly)?"
    r"|Conventional(?:ly)?|Most|Many|Several|Popular|Typical(?:ly)?)\b|\bet\s+al\.|"
    r"\bprior\s+work\b|\bexisting\s+(?:methods|approaches|works?)\b"
    # the field's record, not this paper's: "LLM agents have shown great potential ..."
    r"|^\W*(?!we\b|our\b)(?:[\w()-]+\s+){1,6}(?:have|has)\s+(?:recently\s+)?(?:shown|demonstrated"
    r"|achieved|emerged|become|gained|attracted|made|seen|witnessed)\b",
    re.IGNORECASE,
)
# What a paper was evaluated on and what it scored: for "how is X evaluated" questions.
_EVALUATION = re.compile(
    r"\b(?:benchmark\w*|evaluat\w*|experiment\w*|datasets?|resolve\s+rate|accuracy|[A-Z][\w-]*"
    r"-?(?:bench|Bench|Arena|QA)\b)|\d+(?:\.\d+)?\s*%",
)
# "Specifically, ..." spells out the method just named: it answers "how".
_ELABORATION = re.compile(r"^\W*(?:Specifically|Concretely|In\s+particular)\b")
_PROBLEM = re.compile(
    r"\b(?:however|challeng\w*|remains?|suffer\w*|limitations?|expensive|costly|prohibitive\w*"
    r"|struggl\w*|fails?|lacks?|lacking|difficult\w*|bottlenecks?|hinder\w*|impractical"
    r"|inefficien\w*|quadratic\w*|underexplored|unclear|open\s+question|little\s+is\s+known)\b",
    re.IGNORECASE,
)
# Openers that need the sentence before to be understood ("However, these methods ...").
_LEANING = re.compile(
    r"^\W*(?:However|But|Yet|These|Those|Such|They|It|Its|Their|Moreover|Furthermore"
    r"|Additionally|In\s+addition|Also|Nevertheless|Nonetheless|Thus|Therefore|Hence"
    r"|Consequently|As\s+a\s+result|In\s+contrast|Instead|Similarly|Meanwhile"
    r"|Unfortunately|Despite\s+(?:this|these|that)|To\s+(?:this|that)\s+end"
    r"|(?:Based|Building)\s+on\s+(?:this|these|that|those|such)"
    r"|To\s+(?:address|tackle|solve|overcome|mitigate|alleviate|resolve|remedy|handle|fill|bridge)"
    r"\s+(?:this|these|that|those|such|the\s+(?:above|aforementioned))"
    r"|This(?!\s+(?:paper|work|study|article|report|thesis|manuscript)\b))\b"
)
_SIDE = re.compile(r"\b(?:also|further(?:more)?|additionally|finally)\b", re.IGNORECASE)
# Sentences that only point elsewhere answer nothing.
_NOISE = re.compile(
    r"https?://|www\.|github\.com|\b(?:code|data|models?|project page)\b[^.]{0,40}"
    r"\b(?:available|released|found)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Passage:
    """One sentence of an abstract: `text` is `abstract[start:end]`, the `position`-th."""

    position: int
    start: int
    end: int
    text: str
    method: bool  # "we propose / introduce ...": what the paper contributes
    finding: bool  # "we find / show ...", or a result stated after the opening sentence
    results: int  # how many result cues it holds ("outperforms", "12%", "3x")
    elaboration: bool  # "Specifically, ...": the method spelled out
    background: bool  # prior work, the field's record
    problem: bool  # what is hard or missing
    opens_leaning: bool  # its opener needs the sentence before ("However, these ...")
    side: bool  # "also", "finally": a side contribution
    noise: bool  # only points elsewhere (a link, "code is available")
    evaluation: bool  # what it was evaluated on or scored
    digits: bool

    @property
    def leaning(self) -> bool:
        """It needs the sentence before it (never the first)."""
        return self.position > 0 and self.opens_leaning

    @property
    def claim(self) -> bool:
        """It says what the paper does or finds (not the problem or the field)."""
        return self.method or self.finding or self.elaboration


@lru_cache(maxsize=8192)
def passages(abstract: str) -> tuple[Passage, ...]:
    """The abstract's sentences as passages (the whole text as one when it has no sentence
    boundary; none when empty)."""
    spans = split_sentences(abstract) or ([(0, len(abstract))] if abstract else [])
    return tuple(_read(position, abstract, s, e) for position, (s, e) in enumerate(spans))


def _read(position: int, abstract: str, start: int, end: int) -> Passage:
    text = abstract[start:end]
    results = len(_RESULT.findall(text))
    background = bool(_BACKGROUND.search(text))
    return Passage(
        position=position,
        start=start,
        end=end,
        text=text,
        method=bool(_METHOD.search(text)),
        finding=bool(_FINDING.search(text)) or (position > 0 and results > 0 and not background),
        results=results,
        elaboration=bool(_ELABORATION.search(text)),
        background=background,
        problem=bool(_PROBLEM.search(text)),
        opens_leaning=bool(_LEANING.search(text)),
        side=bool(_SIDE.search(text)),
        noise=bool(_NOISE.search(text)),
        evaluation=bool(_EVALUATION.search(text)),
        digits=bool(_DIGIT.search(text)),
    )


def contribution(abstract: str) -> Passage | None:
    """The passage that says what the paper contributes ("We propose X, ..."): a method
    sentence that stands alone, else any method sentence, else the first."""
    read = passages(abstract)
    methods = [p for p in read if p.method and not p.noise]
    standing = [p for p in methods if not p.opens_leaning]
    found = standing or methods or list(read)
    return found[0] if found else None
