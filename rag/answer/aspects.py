"""Follow-ups that ask one measurable thing of a paper ("and how fast is it?", "how is it
evaluated?", "它有多快？"): the quote is the sentence that reports it, or the answer says
plainly that the abstract reports none, instead of quoting its nearest background sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.answer.extractive import contribution_sentence
from rag.answer.markers import inert_markers
from rag.answer.support import Quote
from rag.index.passages import sentences
from rag.lang.messages import MESSAGES
from rag.types import RetrievedPaper


@dataclass(frozen=True)
class Aspect:
    reported: re.Pattern[str]  # a sentence reports it
    none: str  # the message (rag.lang.messages) that says no sentence does


# Which aspect a question asks (`Wants.aspect`) is read in rag.lang.question_kind.
ASPECTS = {
    "speed": Aspect(
        re.compile(
            r"\d+(?:\.\d+)?\s*(?:x|×)(?![a-z])|\bspeed-?ups?\b|\bfaster\b|\blatency\b"
            r"|\bthroughput\b|\b(?:ms|milliseconds?|seconds?|hours?)\b|\baccelerat\w*",
            re.I,
        ),
        "no_speed",
    ),
    "evaluation": Aspect(
        re.compile(
            r"\b(?:benchmarks?|datasets?|evaluat\w*|experiments?|tested|resolve\s+rate|accuracy"
            r"|outperform\w*|state-of-the-art)\b|\d+(?:\.\d+)?\s*%",
            re.I,
        ),
        "no_evaluation",
    ),
}


def aspect_answer(
    aspect: Aspect, source: RetrievedPaper, lang: str = "en"
) -> tuple[str, list[Quote]]:
    """The answer from one paper's abstract: its sentences that report `aspect` (up to two,
    the ones with figures first), or the plain statement that it reports none, with the
    paper's contribution sentence so the citation still points at evidence."""
    paper = source.paper
    texts = sentences(paper.abstract) or [paper.abstract]
    found = [t for t in texts if aspect.reported.search(t)]
    found.sort(key=lambda t: -sum(c.isdecimal() for c in t))  # figures first; stable otherwise
    chosen = sorted(found[:2], key=texts.index)
    title = inert_markers(" ".join(paper.shown_title.split()))
    lines = [MESSAGES[lang]["heading"], "", f"**{title}** [1]"]
    if chosen:
        lines += [f"- {inert_markers(t)} [1]" for t in chosen]
        return "\n".join(lines), [Quote(1, paper.id, chosen[0], 1.0)]
    contribution = contribution_sentence(paper.abstract)
    lines += [f"- {MESSAGES[lang][aspect.none]}", f"- {inert_markers(contribution)} [1]"]
    return "\n".join(lines), [Quote(1, paper.id, contribution, 1.0)]
