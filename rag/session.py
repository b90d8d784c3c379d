"""One conversation with the assistant: what the command line and the page both keep.

    session = Session(open_assistant(settings))       # or Session(settings)
    for piece in session.ask("Which papers make attention cheaper?"):
        ...                                             # text pieces, then the CitedAnswer
    answer = session.answer("summarize the second one")  # the same, drained

A session holds the chat so far (its last `KEPT_TURNS` answers, whose cited papers "all the
papers we discussed" means; the answerer reads the last `HISTORY_MESSAGES` messages), the
previous answer (whose numbered sources a follow-up points at: "the second one",
"[3]", "compare them"), and the filters and number of sources each question is asked with.
A turn is recorded when its answer is complete; a question that fails (or whose stream is
abandoned: the page reruns mid-answer) leaves the conversation as it was, and stays in
`unanswered` for asking again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.settings import Settings

if TYPE_CHECKING:
    from rag.answer.pipeline import Assistant, CitedAnswer
    from rag.types import Filters, Paper

# The answerer reads the last 8 messages of the chat (rag.answer.pipeline); the answers of the
# last 20 turns are kept, for "summarize all the papers we discussed".
HISTORY_MESSAGES = 8
KEPT_TURNS = 20


@dataclass(frozen=True)
class Exchange:
    """One answered question."""

    question: str
    answer: CitedAnswer


class Session:
    """One conversation: ask questions in turn, each follow-up seeing the answers before it."""

    def __init__(
        self,
        assistant: Assistant | Settings,
        *,
        filters: Filters | None = None,
        k: int | None = None,
    ) -> None:
        if isinstance(assistant, Settings):
            from rag.answer.pipeline import open_assistant

            assistant = open_assistant(assistant)
        self.assistant: Assistant = assistant
        self.filters = filters  # each question's filters and number of sources: the caller
        self.k = k  # may change them between questions (the page's sidebar does)
        self.exchanges: list[Exchange] = []  # the answered turns the history is made of
        self.unanswered: str | None = None  # the last question that got no answer

    @property
    def previous(self) -> CitedAnswer | None:
        """The last answer whose numbered sources a follow-up may point at. A refusal's are
        none: "who wrote the second one?" after one means the list before it."""
        return next((e.answer for e in reversed(self.exchanges) if not e.answer.abstained), None)

    @property
    def history(self) -> list[dict[str, str]]:
        """The chat so far as role/content messages, the last `HISTORY_MESSAGES` of them."""
        messages = []
        for turn in self.exchanges:
            messages.append({"role": "user", "content": turn.question})
            messages.append({"role": "assistant", "content": turn.answer.answer})
        return messages[-HISTORY_MESSAGES:]

    def ask(
        self, question: str, *, about: Paper | None = None, of: CitedAnswer | None = None
    ) -> Iterator[str | CitedAnswer]:
        """Text pieces as they are generated, then the final `CitedAnswer`, recorded as this
        session's newest turn before it is yielded. `about`: a paper the question is about
        (asked from its card); `of`: the answer a follow-up points at, when not the last one
        (a comparison asked from an earlier answer). Errors raise `RagError` (`AnswerError`,
        `StoreError`); the session is then unchanged."""
        from rag.answer.pipeline import CitedAnswer, stream_answer

        self.unanswered = question
        stream = stream_answer(
            question,
            self.history,
            assistant=self.assistant,
            filters=self.filters,
            k=self.k,
            previous=of or self.previous,
            about=about,
            conversation=[e.answer for e in self.exchanges],
        )
        for piece in stream:
            if isinstance(piece, CitedAnswer):
                self.record(question, piece)
            yield piece

    def answer(
        self, question: str, *, about: Paper | None = None, of: CitedAnswer | None = None
    ) -> CitedAnswer:
        """The final answer of `ask` (the pieces before it are dropped)."""
        final = None
        for piece in self.ask(question, about=about, of=of):
            if not isinstance(piece, str):
                final = piece
        if final is None:  # pragma: no cover - stream_answer ends with the answer
            raise AssertionError("stream_answer ends with the answer")
        return final

    def record(self, question: str, answer: CitedAnswer) -> None:
        """Add an answered turn (`ask` does; a caller restoring a chat may too)."""
        self.exchanges.append(Exchange(question, answer))
        # A long chat keeps its last turns only.
        del self.exchanges[:-KEPT_TURNS]
        self.unanswered = None

    def reset(self) -> None:
        """A new conversation with the same assistant, filters and k."""
        self.exchanges = []
        self.unanswered = None
