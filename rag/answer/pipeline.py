"""Answer a question about the indexed papers, with [n] citations that resolve to quotes.

    assistant = open_assistant(get_settings())
    for piece in stream_answer(question, history, assistant=assistant): ...
    result = answer("Which papers make FlashAttention handle arbitrary masks?", assistant=assistant)
    answer("summarize the second one", history, assistant=assistant, previous=result)

One path, stage by stage, each in its own module:

1. **the conversation** (`rag.answer.conversation`): which earlier papers a follow-up points
   at ("the second one", "compare them"), answered from those alone (`rag.answer.followup`);
   else the question made standalone;
2. **understand** (`rag.lang.intent`): what it asks, read once into a frozen `Intent`;
3. **answer from records** (`rag.answer.records`): a person's papers, a paper's authors or
   tier, a count, a paper known only by its title;
4. **retrieve** (`rag.retrieval.retriever`): the candidates, under the question's filters;
5. **judge** (`rag.answer.judge`, `rag.answer.model_judge`): which candidates belong, and
   whether any does;
6. **write** (`rag.answer.writer`): the model or the extractive answerer, or the refusal;
7. **check** (`rag.answer.check`): a model's markers, quotes and support.

`answer()` is `stream_answer()` read to its end. Errors raise `AnswerError`; the caller's
question and history are never changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from rag.answer.assistant import Assistant, Turn, open_assistant
from rag.answer.citations import CitedAnswer, merged
from rag.answer.conversation import (
    MAX_QUESTION_CHARS,
    Earlier,
    History,
    all_shown,
    cited_before,
    clean_history,
    compared_with,
    described_beside,
    discussed,
    earlier,
    more_like,
    question_text,
    rest_of,
    standalone,
    their_authors,
)
from rag.answer.counts import count_answer
from rag.answer.followup import follow_up, searched_instead
from rag.answer.judge import Judge, compared_papers, judged_on_topic, kept, left_out
from rag.answer.model_judge import ModelJudge
from rag.answer.records import (
    IN_CHINESE,
    all_shown_answer,
    aside_unrecorded,
    by_authors_answer,
    in_chinese,
    question_filters,
    record_answer,
    title_records_answer,
    unrecorded_answer,
    unrecorded_kind,
)
from rag.answer.writer import refuse, write
from rag.lang.intent import understand

if TYPE_CHECKING:
    from rag.models.budget import Budget
    from rag.types import Filters, Paper

# What callers import from here; the other types live in their stage's module.
__all__ = [
    "MAX_QUESTION_CHARS",
    "Assistant",
    "CitedAnswer",
    "answer",
    "open_assistant",
    "stream_answer",
]


def answer(
    question: str,
    history: History = (),
    *,
    assistant: Assistant,
    filters: Filters | None = None,
    k: int | None = None,
    previous: CitedAnswer | None = None,
    about: Paper | None = None,
    conversation: Sequence[CitedAnswer] = (),
) -> CitedAnswer:
    """Answer `question` with checked citations: `stream_answer` read to its end, so what is
    measured is what the page and the CLI run.

    A follow-up is read in the light of `history` and of `previous`, the last answer, whose
    numbered sources it may point at ("the second one"). A question asked `about` one paper
    (from its card) is answered from that paper alone.
    """
    result = None
    for piece in stream_answer(
        question,
        history,
        assistant=assistant,
        filters=filters,
        k=k,
        previous=previous,
        about=about,
        conversation=conversation,
    ):
        if isinstance(piece, CitedAnswer):
            result = piece
    assert result is not None  # stream_answer ends with the answer or raises
    return result


def stream_answer(
    question: str,
    history: History = (),
    *,
    assistant: Assistant,
    filters: Filters | None = None,
    k: int | None = None,
    previous: CitedAnswer | None = None,
    about: Paper | None = None,
    conversation: Sequence[CitedAnswer] = (),
) -> Iterator[str | CitedAnswer]:
    """Text pieces as they are generated, then the final `CitedAnswer` (whose text is checked).
    `conversation`: the chat's earlier answers, oldest first, for "the papers we discussed"."""
    budget = assistant.budget()
    turn = _prepare(question, history, assistant, filters, k, budget, previous, about, conversation)
    yield from write(turn, assistant, budget)


def _prepare(
    question: str,
    history: History,
    assistant: Assistant,
    filters: Filters | None,
    k: int | None,
    budget: Budget,
    previous: CitedAnswer | None = None,
    about: Paper | None = None,
    conversation: Sequence[CitedAnswer] = (),
) -> Turn:
    """The turn up to the write stage: its sources and what the judge kept, or its result."""
    text = question_text(question).removesuffix(IN_CHINESE)
    # A follow-up's words as meant too ("secnd one?"): the index's spelling, as for a search.
    spelling = assistant.retriever.spelling()
    meant = spelling.text(text)
    said = discussed(meant, conversation)  # "summarize all the papers we discussed"
    if len(said) > 1:
        previous = merged(said)
    again = None if said else rest_of(meant, previous, history)
    if again is not None:  # "show me the other 4": the earlier question, for all it found
        text = meant = again[0]
        depth = again[1] or assistant.retriever.calibration.list_pool  # 0: as a list is judged
        k, previous = assistant.wanted(depth, None), None
    elif previous is not None and not said and all_shown(meant, previous):  # none left to show
        turn = Turn(question, meant, [], meant=meant)
        turn.result = all_shown_answer(turn, previous, assistant)
        return turn
    rest, aside = aside_unrecorded(meant)  # "...? i think it got an outstanding paper award"
    unrecorded = "" if rest else unrecorded_kind(meant)
    if rest:
        text = meant = rest
    elif unrecorded == "reply_language" and assistant.chat_model is None and conversation:
        # Offline "and in chinese?": the previous question again, as it was asked, its text
        # around the quotes in Chinese (the quotes stay as the abstracts write them).
        last, before_it = conversation[-1], conversation[:-1]
        shown = next((a for a in reversed(before_it) if not a.abstained), None)
        return _prepare(
            in_chinese(last.question),
            history[:-2],
            assistant,
            filters,
            k,
            budget,
            shown,
            about,
            before_it,
        )
    elif unrecorded and not (
        unrecorded == "reply_language" and assistant.chat_model is not None  # a model writes it
    ):  # "the most citations?", "book me a hotel", offline "and in chinese?"
        turn = Turn(question, meant, [], meant=meant)
        turn.result = unrecorded_answer(turn, assistant, unrecorded)
        return turn
    before = earlier(meant, previous, about)
    theirs = their_authors(meant, before)
    if theirs is not None:  # "any others by them?": their other papers, from the records
        turn = Turn(question, meant, [], meant=meant)
        turn.previous_papers = before.papers
        turn.result = by_authors_answer(turn, *theirs, assistant, filters)
        return turn
    beside = compared_with(meant, before)
    if beside:  # "compare it with SCBench": the paper named, found by its name
        found = assistant.retriever.search(meant, k=assistant.wanted(0, k))
        earlier_ids = {s.paper.id for s in beside}
        other = next((s for s in found if s.asked_by and s.paper.id not in earlier_ids), None)
        if other is not None:
            # "DuoAttention and the other KV cache methods": the one named first
            both = [*beside, other] if len(beside) == 1 else [other, *beside]
            compared = tuple(range(1, len(both) + 1))
            turn = Turn(question, meant, both, meant=meant, compare=compared, citable=len(both))
            turn.previous_papers = before.papers
            turn.result = title_records_answer(turn, assistant)  # none has an abstract
            return turn
    like = more_like(meant, before)  # "more like that": a new search, by their titles
    leave_out = like[1] if like is not None else frozenset()
    others = cited_before(meant, before)  # "any other papers on X": judged, then left out
    if others:  # other than any this chat cited ("5 more papers on X" after two answers)
        others |= {c.paper_id for said in conversation for c in said.citations}
    if like is not None:
        searched, before = like[0], Earlier(before.shown, before.cited)
    elif before.again:
        searched = before.again
    elif before.reference is not None and assistant.chat_model is None:
        searched = text  # the papers are known: nothing to join or search
    else:
        turns = clean_history(history)
        searched = standalone(text, turns, assistant, question, budget, before.papers)
    if before.reference is not None:
        turn = follow_up(
            question,
            text,
            searched,
            before.reference,
            before.shown,
            before.cited,
            assistant,
            filters,
        )
        turn.previous_papers = before.papers
        if turn.result is None and not turn.compare:  # papers known by their titles alone
            turn.result = title_records_answer(turn, assistant)
        if not (turn.off_topic and previous is not None):
            return turn
        # "which of them are about fairness?", none of them is: the earlier question on it
        searched, instead = searched_instead(turn, previous.standalone_question, before.shown)
        aside = f"{aside} {instead}"
    # What the question asks, read once, its mistyped words as meant ("difusion models"),
    # and the answer says how it read them. The standalone question (`asked`) keeps its tier
    # words: "show more" asks it again, under them.
    asked = spelling.text(searched)
    intent = understand(asked)
    filters, note = question_filters(intent.asked, filters, text, spelling.changes(text))
    note = f"{aside} {note}".strip()
    # The offline judge checks more candidates for a list than the sources setting shows
    # (list_pool), and keeps k: one search at that depth (its first k are the search for k).
    wanted = assistant.wanted(intent.asked.number, k)
    judge = judge_for(assistant, budget)
    calibration = assistant.retriever.calibration
    pool = max(calibration.list_pool, wanted)
    depth = pool if intent.listing and judge is assistant.judge and pool > wanted else wanted
    # A list checks the title records closest to it too, after the papers found.
    records = calibration.list_records if intent.listing and like is None else 0
    candidates = assistant.retriever.search(
        intent.search, k=depth, filters=filters, read_names=like is None, with_records=records
    )
    if leave_out:  # not the papers it asks for more like
        candidates = [c for c in candidates if c.paper.id not in leave_out]
    sources = candidates[:wanted]
    turn = Turn(question, asked, sources, scope_note=note, intent=intent, meant=meant)
    turn.previous_papers = before.papers
    if like is None:  # a search made of titles asks no record ("Markov" there is no person)
        turn.result = record_answer(turn, intent.asked, assistant, filters)
    if turn.result is None and intent.kind == "count":  # "how many papers on Y": counted
        turn.result = count_answer(turn, intent.asked, filters, assistant)
    if turn.result is not None:
        return turn
    unknown = assistant.retriever.names.unknown_name(intent.search)
    if unknown is not None:
        turn.result = refuse(turn, assistant, unknown)
        return turn
    # Which candidates belong, and whether any does.
    # A filtered list ("oral papers on diffusion language models") is judged by what the
    # papers on its subject hold, found without the filter: the few orals found are no guide.
    leaders = []
    if intent.listing and (filters.tiers or filters.keywords):
        leaders = assistant.retriever.search(intent.search, k=calibration.list_lead)
    turn.verdict = judge.judge(intent, candidates, leaders)
    if not turn.verdict.answers:  # before refusing: the question's topic alone
        on_topic = judged_on_topic(judge, assistant.retriever, intent, depth, filters, leaders)
        if on_topic is not None:
            candidates, turn.verdict, searched = on_topic
            turn.sources = candidates[:wanted]
            turn.scope_note = f"{turn.scope_note} {searched}".strip()
    if others:
        candidates, turn.verdict = left_out(turn.verdict, candidates, others)
        turn.sources = candidates[:wanted]
    if len(candidates) > wanted:
        turn.sources, turn.verdict = kept(turn.verdict, candidates, wanted)
    if not turn.verdict.answers:
        turn.result = refuse(turn, assistant)
    elif intent.compare and len(named := compared_papers(turn.sources)) >= 2:
        if named == list(range(len(named))):  # retrieval put them first, as it does
            # "compare X with Y": those papers side by side, as "compare them" after a list
            turn.compare = tuple(n + 1 for n in named)
            turn.citable = len(named)
    elif intent.compare and described_beside(meant, turn.sources, assistant.retriever.search):
        turn.compare, turn.citable = (1, 2), 2  # "compare X with the Y paper": X and that one
    return turn


def judge_for(assistant: Assistant, budget: Budget) -> Judge:
    """The model judges a list when one answers (`llm.judge`), within the answer's budget;
    else the index's signals do."""
    model = assistant.chat_model
    if model is None or assistant.settings.llm.judge != "model":
        return assistant.judge
    return ModelJudge(model, assistant.model, assistant.judge, budget)
