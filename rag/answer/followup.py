"""A follow-up about the previous answer's numbered sources, answered from those papers alone.

`rag.answer.references` resolves which sources a follow-up means ("the second one", "which of
them are orals?"); here the turn is built from them: the model is asked about those papers
only, and a question about their tier, link or authors is answered from their records.
"""

from __future__ import annotations

from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import CitedAnswer, cite, numbered
from rag.answer.extractive import contribution_sentence
from rag.answer.markers import inert_markers
from rag.answer.prompts import answer_messages
from rag.answer.references import Reference
from rag.answer.support import Quote
from rag.types import Paper, RetrievedPaper


def referring_turn(
    question: str,
    text: str,
    standalone: str,
    reference: Reference,
    shown: list[RetrievedPaper],
    cited: int,
    assistant: Assistant,
) -> Turn:
    """A follow-up about previous sources: answered from them alone, no search, no refusal.

    The referenced papers come first and are the only ones that may be cited; the rest of
    the previous list follows, so the next follow-up can still point at it.
    """
    meant = [shown[n - 1] for n in reference.numbers]
    rest = [s for s in shown if s not in meant]
    turn = Turn(question, standalone, meant + rest, reference=reference, citable=len(meant))
    if reference.about_metadata:
        turn.result = _metadata_answer(turn, reference, shown, cited, assistant)
    elif assistant.chat_model is not None:
        turn.messages = answer_messages(
            standalone, meant, original=text, previous=[s.paper for s in shown]
        )
    return turn


def _metadata_answer(
    turn: Turn, reference: Reference, shown: list[RetrievedPaper], cited: int, assistant: Assistant
) -> CitedAnswer:
    """Tier, link or authors of the referenced papers, from their records, each cited.

    "Which of them are orals?" lists those that are; when none is, every paper meant with its
    decision, so the reader sees why.
    """
    lines = [METADATA_HEADING, ""]
    listed = turn.sources[: turn.citable]
    if reference.tier:
        scope = shown[: cited or len(shown)]
        plural = f"{reference.tier}s"
        if listed:
            what = f"is {_article(reference.tier)}" if len(listed) == 1 else f"are {plural}"
            lines.append(f"{len(listed)} of the {len(scope)} papers {what}:")
        else:
            lines.append(f"None of the {len(scope)} papers is {_article(reference.tier)}:")
            listed = scope
            turn.sources = scope + [s for s in shown if s not in scope]
        asks = ("tier", *[a for a in reference.asks if a != "tier"])
    else:
        asks = reference.asks
    quotes = []
    for n, source in enumerate(listed, start=1):
        paper = source.paper
        facts = " · ".join(_fact(paper, ask) for ask in asks)
        lines.append(f"- **{inert_markers(' '.join(paper.title.split()))}** [{n}]: {facts}")
        quotes.append(Quote(n, paper.id, contribution_sentence(paper.abstract), 1.0))
    return numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer="\n".join(lines),
            citations=cite(quotes, turn.sources),
            sources=turn.sources,
            abstained=False,
            model=assistant.model,
            offline=assistant.offline,
        )
    )


METADATA_HEADING = "From the papers' records in the index (decision, link, authors):"


def _article(tier: str) -> str:
    return f"an {tier}" if tier[:1] in "AEIOU" else f"a {tier}"


def _fact(paper: Paper, ask: str) -> str:
    if ask == "tier":
        return inert_markers(paper.decision) if paper.decision else "decision not recorded"
    if ask == "link":
        return paper.url or "no link recorded"
    if not paper.authors:
        return "authors not recorded"
    order = "" if paper.extra.get("authors_ordered", True) else " (order not known)"
    return "authors: " + inert_markers(", ".join(paper.authors)) + order
