"""The check stage: a model's reply made an answer. Its markers are checked against the
sources it was given (rag.answer.citations), each cited claim gets the abstract sentence that
best supports it and a support score (rag.answer.support), and a reply that grounds nothing
(no claim a quote can back: bare markers, bare titles) is asked again once, then handed back
as a `Fallback`: the writer puts the offline answer in its place, saying why
(rag.answer.grounding). The check reads and judges; it never calls back into a writer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import CitedAnswer, check_citations, cite, numbered
from rag.answer.grounding import (
    FALLBACK_NOTE,
    OVERRULED_NOTE,
    grounded,
    strict_messages,
    uncited_sentences,
)
from rag.answer.judge import verdict_fields
from rag.answer.model_refusal import is_refusal, model_refusal
from rag.answer.support import best_quotes
from rag.errors import AnswerError, StoreError

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

Ask = Callable[["list[BaseMessage]"], str]


@dataclass(frozen=True)
class Fallback:
    """The reply grounds nothing: the offline answer stands in, with the note that says why."""

    notes: dict[str, str]


def checked_answer(turn: Turn, text: str, assistant: Assistant, ask: Ask) -> CitedAnswer | Fallback:
    """The answer from the model's `text`; an ungrounded one is asked again with `ask`, once,
    then handed back as a `Fallback` for the offline answer to stand in."""
    result = finish(turn, text, assistant)
    if result.grounding == "refused" and _judged_answerable(turn):
        return Fallback(OVERRULED_NOTE)
    if grounded(result):
        return _mark(result, "cited")
    try:
        again = finish(turn, ask(strict_messages(turn.messages)), assistant)
    except Exception:  # noqa: BLE001 - a failed second try falls back like an uncited one
        again = None
    # Asked again with an example, a small model copies the example (SmolLM2: "FlexPrefill
    # chooses a sparse attention pattern ... [1]" for any question): the second reply stands
    # only when one of its claims is found in the abstract it cites (or is not measured).
    if again is not None and grounded(again) and _found(again):
        return _mark(again, "reasked")
    return Fallback(FALLBACK_NOTE)


def _judged_answerable(turn: Turn) -> bool:
    """The judge found the paper the question names first, or a list's papers on its subject:
    a model's refusal is then its mistake (a small model refuses "explain X in simple terms"
    and most lists), and the offline answer from those papers stands in."""
    verdict = turn.verdict
    if verdict is None or not verdict.answers:
        return False
    listing = turn.intent is not None and turn.intent.listing
    return verdict.named is not None or (listing and verdict.matched > 0)


def _found(result: CitedAnswer) -> bool:
    return result.abstained or any(c.supported is not False for c in result.citations)


def _mark(result: CitedAnswer, how: str) -> CitedAnswer:
    if not result.abstained:
        result.grounding = how
        result.uncited = len(uncited_sentences(result.answer))
    return result


def finish(turn: Turn, text: str, assistant: Assistant) -> CitedAnswer:
    """The model's reply with its markers checked and each cited claim's quote and support."""
    if not text.strip():
        raise AnswerError(
            f"The language model failed: {assistant.model} returned an empty answer.",
            turn.question,
            code="model_failed",
            hint="retry_or_offline",
        )
    citable = turn.citable if turn.citable is not None else len(turn.sources)
    checked = check_citations(text, set(range(1, citable + 1)))
    papers = {n: turn.sources[n - 1].paper for n in checked.cited}
    quotes = best_quotes(
        checked.text,
        papers,
        assistant.sentence_embeddings,
        fallback_claim=None,  # a bare "[1]" claims nothing: never measured against the question
        idf=_corpus_idf(assistant),
        # The floor was measured with the bundled English model's similarities.
        measure_support=assistant.settings.embedding.provider == "local",
        calibration=assistant.retriever.calibration,
    )
    ordered = [quotes[n] for n in checked.cited if n in quotes]
    if is_refusal(checked.text, cited=bool(checked.cited)):
        return model_refusal(turn, assistant)  # in the question's language, deterministically
    result = numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer=checked.text.strip(),
            citations=cite(ordered, turn.sources),
            sources=turn.sources,
            abstained=False,
            model=assistant.model,
            dropped_citations=checked.dropped,
            offline=False,
            scope_note=turn.scope_note,
            compare=turn.compare,
            **verdict_fields(turn.verdict, turn.intent, turn.question),
        ),
        turn.seen,
    )
    return result


def _corpus_idf(assistant: Assistant) -> Callable[[str], float] | None:
    """How rare a term is in the index (what the support floor was measured with)."""
    try:
        return assistant.retriever.index.keyword_index().idf
    except StoreError:  # the store went away after retrieval: rarity among the abstract's own
        return None
