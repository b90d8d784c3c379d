"""A model's reply read as it streams, and what to do when a server streams nothing.

Separate from `rag.answer.pipeline`, which decides what to ask; this only reads the reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import TYPE_CHECKING, Any

from rag.common.side_files import without_surrogates
from rag.models import budget as llm_budget
from rag.models.budget import Budget

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage


def streamed(model: BaseChatModel, messages: list[BaseMessage], budget: Budget) -> Iterator[str]:
    """The reply's pieces as they come, up to `budget.reply_bytes` (the stream is then closed:
    a server that ignores max_tokens or never stops is not read on); an empty stream is asked
    again whole, once.

    llama-cpp-python answers a streamed prompt longer than its window with an empty stream
    (HTTP 200, no event); asked without streaming it refuses with the 400 that says so, which
    the caller then refits (rag.models.context.is_context_error). A prompt that fits is answered
    whole.
    """
    got = False
    try:
        for piece in capped(model, messages, budget):
            got = True
            yield piece
    except ValueError as e:  # LangChain's "No generation chunks were returned"
        if got or "no generation chunks" not in str(e).lower():
            raise
    if not got:
        whole = _whole(model, messages, budget)
        if whole:
            yield within(whole, budget.reply_bytes)[0]


def capped(model: BaseChatModel, messages: list[BaseMessage], budget: Budget) -> Iterator[str]:
    """The streamed reply's pieces up to `budget.reply_bytes`; then the stream is closed."""
    left = budget.reply_bytes
    with closing(llm_budget.stream(model, messages, budget)) as chunks:
        for chunk in chunks:
            piece, left = within(reply_text(chunk.content), left)
            if piece:
                yield piece
            if left == 0:
                return


def within(text: str, left: int | None) -> tuple[str, int | None]:
    """`text` cut to `left` bytes of UTF-8 (at a character), and the bytes left after it."""
    if left is None:
        return text, None
    data = text.encode()
    if len(data) <= left:
        return text, left - len(data)
    return data[:left].decode(errors="ignore"), 0


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
    """A message's text, whether its content is a string or a list of parts; a lone surrogate
    in it (valid JSON, no UTF-8 output can carry it) as U+FFFD."""
    return without_surrogates(_text_of(content))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content or "")
