"""Follow-ups that ask one measurable thing of a paper ("and how fast is it?", "how is it
evaluated?", "它有多快？"): the quote is the sentence that reports it, or the answer says
plainly that the abstract reports none, instead of quoting its nearest background sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.answer.citations import Quote, fenced, inert_markers
from rag.answer.extractive import contribution_sentence
from rag.index.passages import sentences
from rag.lang.messages import MESSAGES
from rag.types import RetrievedPaper


@dataclass(frozen=True)
class Aspect:
    reported: re.Pattern[str]  # a sentence reports it
    none: str  # the message (rag.lang.messages) that says no sentence does
    links: bool = False  # its addresses are repeated in a code block, to be copied whole


# A web address in an abstract, up to a space or a character no address holds as written
# (nor a Markdown link's brackets: "[https://github.com/x/y](https://github.com/x/y)").
_URL = re.compile(r"https?://[^\s<>\"'`\\{}|^\[\]]+")


# Which aspect a question asks (`Wants.aspect`) is read in rag.lang.question_kind.
ASPECTS = {
    "speed": Aspect(
        re.compile(
            # "17.5x", "17.5×", "17.5$\times$" (LaTeX); "speedup", "speed up", "speeds up"
            r"\d+(?:\.\d+)?\s*(?:x|×|\$?\\times\$?)(?![a-z])|\bspeed(?:-?ups?|s?\s+up)\b"
            r"|\bfaster\b|\blatency\b"
            r"|\bthroughput\b|\b(?:ms|milliseconds?|seconds?|hours?)\b|\baccelerat\w*"
            r"|\b(?:GPUs?|TPUs?|[AHV]100s?|FLOPs?)\b",  # what it ran on: "8 A100 GPUs"
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
    "code": Aspect(
        # a release of code ("our code", "code is available"), not code as a subject
        # ("code and circuit search", "code generation")
        re.compile(
            r"\b(?:our|source|its|their)\s+code(?:base)?\b|\bcode(?:base)?\s+(?:(?:and\s+\w+"
            r"\s+)?(?:is|are|will\s+be)\b|(?:publicly\s+)?(?:available|released|at)\b)"
            r"|\b(?:releas|shar)\w*\b[^.;]{0,80}?\bcode\b(?!\s+(?:generation|completion))"
            r"|github|https?://|\bavailable\s+at\b|open[- ]?sourc\w*",
            re.I,
        ),
        "no_code",
        links=True,
    ),
    # An abstract reports no review: the answer says the index holds none.
    "reviews": Aspect(re.compile(r"\breviewers?\b", re.I), "no_reviews"),
    # Its own limits, not those of the prior work it sets out to fix ("To address these
    # limitations, we propose ...": most abstracts that say "limitations" mean those).
    "limitations": Aspect(
        re.compile(
            r"\bfuture\s+work\b|\bwe\s+leave\b|\bleft\s+(?:for|to)\s+future\b"
            r"|\blimitations?\s+of\s+(?:our|this|the\s+proposed)\b|\bour\b[^.]*\blimitations?\b",
            re.I,
        ),
        "no_limitations",
    ),
}


def aspect_answer(
    aspect: Aspect, sources: list[RetrievedPaper], lang: str = "en"
) -> tuple[str, list[Quote]]:
    """The answer from each paper's abstract: its sentences that report `aspect` (up to two,
    the ones with figures first), or the plain statement that it reports none, with the
    paper's contribution sentence so the citation still points at evidence."""
    lines, quotes, links = [MESSAGES[lang]["heading"]], [], []
    for n, source in enumerate(sources, start=1):
        paper = source.paper
        texts = sentences(paper.abstract) or [paper.abstract]
        found = [t for t in texts if aspect.reported.search(t)]
        found.sort(key=lambda t: -sum(c.isdecimal() for c in t))  # figures first; stable
        chosen = sorted(found[:2], key=texts.index)
        title = inert_markers(" ".join(paper.shown_title.split()))
        lines += ["", f"**{title}** [{n}]"]
        if chosen:
            lines += [f"- {inert_markers(t)} [{n}]" for t in chosen]
            quotes.append(Quote(n, paper.id, chosen[0], 1.0))
            links += [u.rstrip(".,;:)]") for t in chosen for u in _URL.findall(t)]
            continue
        contribution = contribution_sentence(paper.abstract)
        # labelled, so it is not read as the answer ("any code?": "we propose a strategy")
        does = f"{MESSAGES[lang]['what_it_does']} {inert_markers(contribution)}"
        lines += [f"- {MESSAGES[lang][aspect.none]}", f"- {does} [{n}]"]
        quotes.append(Quote(n, paper.id, contribution, 1.0))
    if aspect.links and links:  # the page shows an address in text broken for links' sake
        lines += ["", MESSAGES[lang]["links"], fenced("\n".join(dict.fromkeys(links)))]
    return "\n".join(lines), quotes
