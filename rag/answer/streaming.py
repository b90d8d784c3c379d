"""A model's reply read as it streams, and what to do when a server streams nothing.

Separate from `rag.answer.pipeline`, which decides what to ask; this only reads the reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rag.models import budget as llm_budget
from rag.models.budget import Budget

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage


def streamed(model: BaseChatModel, messages: list[BaseMessage], budget: Budget) -> Iterator[str]:
    """The reply's pieces as they come; an empty stream is asked again whole, once.

    llama-cpp-python answers a streamed prompt longer than its window with an empty stream
    (HTTP 200, no event); asked without streaming it refuses with the 400 that says so, which
    the caller then refits (rag.models.context.is_context_error). A prompt that fits is answered
    whole.
    """
    got = False
    try:
        for chunk in llm_budget.stream(model, messages, budget):
            piece = reply_text(chunk.content)
            if piece:
                got = True
                yield piece
    except ValueError as e:  # LangChain's "No generation chunks were returned"
        if got or "no generation chunks" not in str(e).lower():
            raise
    if not got:
        whole = _whole(model, messages, budget)
        if whole:
            yield whole


def _whole(model: BaseChatModel, messages: list[BaseMessage], budget: Budget) -> str:
    """The reply asked without streaming; once more on a new connection when the server reset
    the one its empty stream left open (llama-cpp-python does)."""
    import openai

    for attempt in (1, 2):
        try:
            return reply_text(llm_budget.invoke(model, messages, budget).content)
        except openai.APIConnectionError as e:
            if attempt == 2 or isinstance(e, openai.APITimeoutError):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def reply_text(content: Any) -> str:
    """A message's text, whether its content is a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content or "")
