"""The write stage, one interface for both writers: `write(turn, ...)` yields the answer's
text as it is made, then the `CitedAnswer` (the model's reply checked, or the extractive
answer streamed line by line); `refuse(...)` writes the refusal when the judge found nothing
that answers, or the question names a paper no title defines. A model's reply that grounds
nothing comes back from the check as a `Fallback` (rag.answer.check): the offline answer
(rag.answer.offline_writer) stands in, with the note that says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rag.answer.assistant import Assistant, Turn
from rag.answer.check import Fallback
from rag.answer.citations import CitedAnswer
from rag.answer.grounding import with_note
from rag.answer.model_reply import write_with_model
from rag.answer.offline_writer import write_offline
from rag.answer.refusal import abstention, name_refusal
from rag.models.budget import Budget


def write(turn: Turn, assistant: Assistant, budget: Budget) -> Iterator[str | CitedAnswer]:
    """The answer's pieces, then the answer: a result already made (a record answer, a
    refusal) or the extractive one line by line, or the model's reply as it streams."""
    if turn.result is None and assistant.chat_model is not None:
        for piece in write_with_model(turn, assistant, budget):
            if isinstance(piece, Fallback):  # the reply grounds nothing: quote the abstracts
                piece = with_note(write_offline(turn, assistant), piece.notes)
            yield piece
        return
    result = turn.result if turn.result is not None else write_offline(turn, assistant)
    yield from pieces(result.answer)
    yield result


def refuse(turn: Turn, assistant: Assistant, unknown: str | None = None) -> CitedAnswer:
    """The refusal naming the nearest papers; for an `unknown` name, the closest names."""
    if unknown is not None:
        return name_refusal(turn.question, turn.standalone, unknown, turn.sources, assistant)
    reason = turn.verdict.refusal if turn.verdict is not None else "no_coverage"
    refused = abstention(turn.question, turn.standalone, turn.sources, assistant, reason)
    refused.scope_note = turn.scope_note
    if turn.verdict is not None:  # which judge found nothing, and how many it checked
        refused.judged_by, refused.checked = turn.verdict.by, turn.verdict.checked
    return refused


def pieces(text: str) -> Iterator[str]:
    """An already complete answer, line by line, so the UI streams it the same way."""
    yield from re.findall(r"[^\n]*\n|[^\n]+$", text)
