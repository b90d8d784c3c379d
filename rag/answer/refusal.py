"""Refusals: no abstract covers the question, no paper is called the name it asks about, or
no paper lists the person it asks about among its authors.

Both name the closest papers (or names) so the user can judge, and keep their parts apart on
the answer (`CitedAnswer.refusal`, `.nearest`) for readers that show them their own way.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.answer.assistant import Assistant
from rag.answer.citations import CitedAnswer, inert_markers
from rag.common.similarity import STOPWORDS, stem, terms
from rag.lang.gloss import english_query, english_words, language, mostly_cjk
from rag.lang.messages import MESSAGES, message
from rag.types import NEAREST_SHOWN, RetrievedPaper

NO_COVERAGE = MESSAGES["en"]["no_coverage"]
ENGLISH_ONLY = (
    "(The bundled embedding model reads English only: ask in English, or set "
    'embedding.provider = "openai" for a multilingual one and re-ingest.)'
)


def abstention(
    question: str,
    standalone: str,
    nearest: list[RetrievedPaper],
    assistant: Assistant,
    reason: str = "no_coverage",
) -> CitedAnswer:
    """The refusal, naming the nearest papers so the user can judge.

    `reason` is its sentence's key in `rag.lang.messages.MESSAGES` ("model_refused" when the
    model said its sources do not answer: rag.answer.model_refusal).

    Its parts are also kept apart on the answer: `refusal` (the text before the titles) and
    `nearest` (the papers named), for readers that show them their own way (the page).
    """
    lines = [message(reason, question)]
    if (
        mostly_cjk(standalone)
        and language(standalone) != "zh"  # Chinese is glossed into English (rag.lang.gloss)
        and assistant.settings.embedding.provider == "local"
        and assistant.retriever.multilingual is None
    ):
        lines.append(ENGLISH_ONLY)
    refusal = "\n".join(lines)
    found = nearest_by_meaning(standalone, nearest)
    named = found.named
    if named:
        lines += ["", message("nearest", question)]
        lines += [f"- {inert_markers(r.paper.shown_title)}" for r in named]
    return _refused(
        question, standalone, "\n".join(lines), refusal, found.ordered, assistant, named
    )


@dataclass(frozen=True)
class Nearest:
    named: list[RetrievedPaper]  # what the refusal names, at most NEAREST_SHOWN
    ordered: list[RetrievedPaper]  # every retrieved paper, the named ones first (numbering)


def nearest_by_meaning(standalone: str, results: list[RetrievedPaper]) -> Nearest:
    """The papers a refusal names: those the embedding found near, or that share a rare term.

    A refused question is covered by no abstract, so a paper that only BM25 found, on an
    ordinary word of the question ("what's hot in ML" -> *Hot-pluggable Federated Learning*),
    is no closer in meaning than any other: it is kept among the sources, not named.
    """
    asked = [w for w in english_query(standalone).lower().replace("-", " ").split()]
    words = {stem(w.strip("?!.,;:'\"()")): w.strip("?!.,;:'\"()") for w in asked}
    rare = {s for s, w in words.items() if w and w not in STOPWORDS and w not in english_words()}

    def near(r: RetrievedPaper) -> bool:
        shared = terms(f"{r.paper.title}\n{r.paper.abstract}") & rare
        return r.dense_rank is not None or bool(shared)

    kept = [r for r in results if near(r)]
    named = kept[:NEAREST_SHOWN]
    return Nearest(named, named + [r for r in results if r not in named])


def name_refusal(
    question: str,
    standalone: str,
    name: str,
    nearest: list[RetrievedPaper],
    assistant: Assistant,
) -> CitedAnswer:
    """The refusal for a method name no paper is called ("What is FooBarNet?"), offering the
    closest names in the index (rag.retrieval.names)."""
    lines = [message("no_such_name", question).format(name=inert_markers(name))]
    closest = assistant.retriever.names.closest(name)
    if closest:
        lines += ["", message("closest_names", question)]
        lines += [f"- {inert_markers(n)}: {inert_markers(p.title)}" for n, p in closest]
    return _refused(question, standalone, "\n".join(lines), lines[0], nearest, assistant)


def person_refusal(
    question: str, standalone: str, name: str, assistant: Assistant, scope_note: str = ""
) -> CitedAnswer:
    """The refusal for a person no indexed paper lists as an author ("papers by Tri Dao"),
    offering the authors spelled much like them: no topic answer on the name's words."""
    lines = [message("no_author", question).format(name=inert_markers(name))]
    similar = assistant.retriever.people.similar(name)
    if similar:
        lines += ["", message("similar_authors", question)]
        lines += [
            "- " + message("author_papers", question).format(name=inert_markers(a), n=n)
            for a, n in similar
        ]
    refused = _refused(question, standalone, "\n".join(lines), lines[0], [], assistant)
    refused.scope_note = scope_note
    return refused


def _refused(
    question: str,
    standalone: str,
    text: str,
    refusal: str,
    nearest: list[RetrievedPaper],
    assistant: Assistant,
    named: list[RetrievedPaper] | None = None,
) -> CitedAnswer:
    """A refusal, its parts kept as data: what it says and the closest papers it names."""
    return CitedAnswer(
        question=question,
        standalone_question=standalone,
        answer=text,
        citations=[],
        sources=nearest,
        abstained=True,
        model=assistant.model,
        offline=assistant.offline,
        refusal=refusal,
        nearest=nearest[:NEAREST_SHOWN] if named is None else named,
    )
