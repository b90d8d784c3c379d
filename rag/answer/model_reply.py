"""The model writer: the prompt built from the papers the judge kept and fitted to the
model's window (rag.answer.context_fit), the reply streamed, a context-length refusal asked
again once with fewer sources, and the reply handed to the check stage (rag.answer.check).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answer.assistant import Assistant, Turn
from rag.answer.check import Fallback, checked_answer
from rag.answer.context_fit import fit_prompt
from rag.answer.prompts import answer_messages
from rag.answer.streaming import streamed
from rag.models.budget import Budget
from rag.models.context import is_context_error

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from rag.answer.citations import CitedAnswer


def write_with_model(
    turn: Turn, assistant: Assistant, budget: Budget
) -> Iterator[str | CitedAnswer | Fallback]:
    """The reply's pieces as they come, then the checked `CitedAnswer` (or the `Fallback`
    that asks the writer for the offline answer in its place)."""
    model = assistant.chat_model
    assert model is not None
    text = turn.question.strip()
    if not turn.messages:  # a new search (a follow-up's prompt is built by rag.answer.followup)
        if turn.verdict is not None and turn.verdict.by != "offline":
            _judged_first(turn)  # the model judged: it writes from what it chose
        offered = turn.sources[: turn.citable] if turn.citable else turn.sources
        turn.messages = answer_messages(
            turn.standalone, offered, original=text, previous=turn.previous_papers
        )
    fit_prompt(turn, assistant, text, turn.previous_papers)

    def ask(messages: list[BaseMessage]) -> str:  # the second try, read whole (and streamed)
        return "".join(streamed(model, messages, budget))

    parts: list[str] = []
    try:
        for attempt in (1, 2):
            try:
                for piece in streamed(model, turn.messages, budget):
                    parts.append(piece)
                    yield piece
                break
            except Exception as e:
                refit = attempt == 1 and not parts and is_context_error(e)
                # After a context-length refusal: the prompt again, fitted to its window.
                if not (refit and fit_prompt(turn, assistant, text, turn.previous_papers, e)):
                    raise
    except Exception as e:
        raise assistant.model_failed(e, turn.question) from None
    yield checked_answer(turn, "".join(parts), assistant, ask)


def _judged_first(turn: Turn) -> None:
    """The papers judged to belong first (in their retrieved order), and only they citable."""
    verdict = turn.verdict
    assert verdict is not None
    order = sorted(range(len(turn.sources)), key=lambda i: not verdict.judged[i].belongs)
    turn.sources = [turn.sources[i] for i in order]
    turn.verdict = replace(verdict, judged=tuple(verdict.judged[i] for i in order))
    turn.citable = verdict.matched
