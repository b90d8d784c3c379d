"""Evidence with provenance: an abstract read once as passages, each an exact sentence with
its offsets and what it says (a contribution, a finding, the problem, background, ...).

The offline writer picks its quotes by these roles, and a citation points at the passage it
quotes; the cues are read here, once per abstract, not by each stage that needs them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rag.index.chunking import split_sentences

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
