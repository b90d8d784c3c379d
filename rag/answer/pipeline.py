"""Answer a question from the retrieved abstracts, with [n] citations that resolve to quotes.

    assistant = open_assistant(get_settings())
    result = answer("Which papers make FlashAttention handle arbitrary masks?", assistant=assistant)
    for piece in stream_answer(question, history, assistant=assistant): ...
    answer("summarize the second one", history, assistant=assistant, previous=result)

A follow-up that points at the previous answer's numbered sources ("the second one", "[3]",
"the FlexPrefill paper", "which of them are orals?", `rag.answer.references`) is answered from
those papers alone, and questions about their tier, link or authors from their records
(`rag.answer.followup`).
The LLM path rewrites a follow-up into a standalone question (with the chat history and the
previous source list), retrieves, and asks the model with the sources numbered and fenced
off as data; the markers in its reply are then checked (`rag.answer.support`). Without a model the
offline extractive answerer (`rag.answer.extractive`) quotes the abstracts. Both abstain when
nothing relevant is found. Errors raise `AnswerError`; the caller's question and history
are never changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from langchain_core.embeddings import Embeddings

from rag.answer.aspects import asked_aspect, aspect_answer
from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import Citation, CitedAnswer, cite, numbered
from rag.answer.counts import count_answer
from rag.answer.extractive import ExtractiveOptions, extractive_answer, without_name
from rag.answer.followup import follow_up
from rag.answer.judge import Judge, Verdict, kept, verdict_fields
from rag.answer.model_judge import ModelJudge
from rag.answer.model_reply import checked_answer, fit_prompt
from rag.answer.prompts import answer_messages, rewrite_messages
from rag.answer.records import question_filters, record_answer
from rag.answer.references import (
    MAX_FOLLOW_UP_TOPIC_TERMS,
    Reference,
    is_comparison,
    resolve,
    topic_terms,
)
from rag.answer.refusal import ENGLISH_ONLY, abstention, name_refusal
from rag.answer.rewrite_check import accepted, needs_rewrite
from rag.answer.streaming import capped, streamed
from rag.errors import AnswerError, ModelError
from rag.lang.gloss import english_query, language
from rag.lang.intent import understand
from rag.lang.messages import MESSAGES, question_language
from rag.lang.question_kind import HOW_IT_WORKS, is_list_request
from rag.models.budget import Budget
from rag.models.context import is_context_error
from rag.models.factory import make_chat_model, model_error_message
from rag.retrieval.retriever import open_retriever
from rag.settings import Settings
from rag.types import Filters, Paper, RetrievedPaper

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

# The types from rag.answer.citations and rag.answer.assistant too: callers import them from here.
__all__ = [
    "ENGLISH_ONLY",
    "NO_COVERAGE",
    "AnswerError",
    "Assistant",
    "Citation",
    "CitedAnswer",
    "abstention",
    "answer",
    "numbered",
    "offline_standalone",
    "open_assistant",
    "stream_answer",
]

History = Sequence[Mapping[str, str]]

NO_COVERAGE = MESSAGES["en"]["no_coverage"]
MAX_QUESTION_CHARS = 4000
MAX_HISTORY_MESSAGES = 8

_FOLLOW_UP = re.compile(
    r"^\s*(?:and|but|also|so|then|what about|how about)\b|"
    r"\b(?:it|its|they|them|their|this|that|these|those)\b|"
    # "the paper" points back; "the paper on X" names its own subject.
    r"\bthe (?:paper|method|model|approach)\b(?!\s+(?:on|about|called|named|that|which|by)\b)",
    re.IGNORECASE,
)


def open_assistant(
    settings: Settings,
    embeddings: Embeddings | None = None,
    chat_model: BaseChatModel | None = None,
) -> Assistant:
    """Open the index and build the models named in `settings`, unless given.

    The chat model is the one `llm.model` names; `llm.model = "offline"` means none (the
    offline extractive answerer).
    """
    from rag.models.factory import make_embeddings

    if chat_model is None:
        try:
            chat_model = make_chat_model(settings.llm)
        except ModelError as e:
            raise AnswerError(str(e)) from None
    embeddings = embeddings or make_embeddings(settings.embedding)
    return Assistant(settings, open_retriever(settings, embeddings), chat_model, embeddings)


def answer(
    question: str,
    history: History = (),
    *,
    assistant: Assistant,
    filters: Filters | None = None,
    k: int | None = None,
    previous: CitedAnswer | None = None,
    about: Paper | None = None,
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
) -> Iterator[str | CitedAnswer]:
    """Text pieces as they are generated, then the final `CitedAnswer` (whose text is checked)."""
    budget = _budget(assistant)
    turn = _prepare(question, history, assistant, filters, k, budget, previous, about)
    if turn.result is None and assistant.chat_model is None:
        turn.result = _offline(turn, assistant)
    if turn.result is not None:
        yield from _pieces(turn.result.answer)
        yield turn.result
        return
    model = assistant.chat_model
    assert model is not None

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
                if not (refit and _refit(turn, question, previous, assistant, e)):
                    raise
    except Exception as e:
        raise _model_error(e, assistant, question) from None
    yield checked_answer(turn, "".join(parts), assistant, ask, lambda: _offline(turn, assistant))


def _refit(
    turn: Turn,
    question: str,
    previous: CitedAnswer | None,
    assistant: Assistant,
    refused: Exception,
) -> bool:
    """After a context-length refusal: the prompt again, fitted to the server's window."""
    shown = previous.sources if previous is not None and not previous.abstained else []
    papers = [s.paper for s in shown]
    return fit_prompt(turn, assistant, question.strip(), papers, refused=refused)


def _prepare(
    question: str,
    history: History,
    assistant: Assistant,
    filters: Filters | None,
    k: int | None,
    budget: Budget,
    previous: CitedAnswer | None = None,
    about: Paper | None = None,
) -> Turn:
    text = question.strip() if isinstance(question, str) else ""
    if not text:
        raise AnswerError("The question is empty: type a question about ICLR 2025 papers.")
    if len(text) > MAX_QUESTION_CHARS:
        raise AnswerError(
            f"The question is {len(text)} characters long; keep it under {MAX_QUESTION_CHARS}.",
            question,
        )
    turns = _clean_history(history)
    shown = previous.sources if previous is not None and not previous.abstained else []
    shown_papers = [s.paper for s in shown]
    cited = max((c.n for c in previous.citations), default=0) if previous is not None else 0
    if previous is not None and previous.compare:  # "compare them" again: the same papers
        cited = max(cited, *previous.compare)
    reference = resolve(text, shown_papers, cited) if shown else None
    if reference is not None and _asked_anew(text, reference, previous):
        reference = None  # a new search, under the current filters and k
    if about is not None:  # asked from a paper's card: that paper alone, no search
        shown, shown_papers, cited = [RetrievedPaper(about, 1.0, 1.0)], [about], 1
        reference = Reference((1,), "about", focus=text)
    if reference is not None and assistant.chat_model is None:
        standalone = text  # the papers are known: nothing to join or search
    else:
        standalone = _standalone(text, turns, assistant, question, budget, shown_papers)
    if reference is not None:
        turn = follow_up(question, text, standalone, reference, shown, cited, assistant, filters)
        if turn.messages:
            fit_prompt(turn, assistant, text, shown_papers)
        return turn
    # The question's own filters ("oral papers on X") and record questions ("papers by X"),
    # read once (rag.lang.intent); the venue's name and a filtering tier word are not searched.
    intent = understand(standalone)  # what the question asks, read once (rag.lang.intent)
    filters, note = question_filters(intent.asked, filters, text)
    if intent.search != " ".join(standalone.split()):
        standalone = intent.search
    sources = assistant.retriever.search(standalone, k=k, filters=filters)
    turn = Turn(question, standalone, sources, scope_note=note, intent=intent)
    turn.result = record_answer(turn, intent.asked, assistant)
    if turn.result is None and intent.kind == "count":  # "how many papers on Y": counted
        turn.result = count_answer(turn, intent.asked, filters, assistant)
    if turn.result is not None:
        return turn
    unknown = assistant.retriever.names.unknown_name(standalone)
    if unknown is not None:
        turn.result = name_refusal(question, standalone, unknown, sources, assistant)
        return turn
    # Which candidates belong, and whether any does (rag.answer.judge); the offline judge
    # checks more candidates for a list than the sources setting shows (list_pool).
    judge, wanted = _judge(assistant, budget), k or assistant.settings.retrieval.k
    pool = assistant.retriever.calibration.list_pool
    if intent.listing and judge is assistant.judge and pool > wanted:
        sources = assistant.retriever.search(standalone, k=pool, filters=filters)
    turn.verdict = judge.judge(intent, sources)
    if len(sources) > wanted:
        turn.sources, turn.verdict = kept(turn.verdict, sources, wanted)
    if not turn.verdict.answers:
        turn.result = abstention(question, standalone, turn.sources, assistant)
        turn.result.scope_note = note
        return turn
    if assistant.chat_model is not None:
        if turn.verdict.by != "offline":  # the model judged: it writes from what it chose
            _belonging_first(turn, turn.verdict)
        offered = turn.sources[: turn.citable] if turn.citable else turn.sources
        turn.messages = answer_messages(standalone, offered, original=text, previous=shown_papers)
        fit_prompt(turn, assistant, text, shown_papers)
    return turn


def _judge(assistant: Assistant, budget: Budget) -> Judge:
    """The model judges a list when one answers (`llm.judge`), within the answer's budget."""
    model = assistant.chat_model
    if model is None or assistant.settings.llm.judge != "model":
        return assistant.judge
    return ModelJudge(model, assistant.model, assistant.judge, budget)


def _belonging_first(turn: Turn, verdict: Verdict) -> None:
    """The papers judged to belong first (in their retrieved order), and only they citable."""
    order = sorted(range(len(turn.sources)), key=lambda i: not verdict.judged[i].belongs)
    turn.sources = [turn.sources[i] for i in order]
    turn.verdict = replace(verdict, judged=tuple(verdict.judged[i] for i in order))
    turn.citable = verdict.matched


def _asked_anew(text: str, reference: Reference, previous: CitedAnswer | None) -> bool:
    """A new question, not a follow-up: the previous question asked again (after a filter
    or the sources setting changed), or "Which papers ...?" naming a title's words."""
    again = previous is not None and " ".join(text.split()) == " ".join(previous.question.split())
    again = again and previous is not None and not previous.compare  # "compare them" twice
    return again or (reference.how == "name" and is_list_request(text))


def _clean_history(history: History) -> list[tuple[str, str]]:
    turns = []
    for item in history or ():
        role = item.get("role") if isinstance(item, Mapping) else None
        content = item.get("content") if isinstance(item, Mapping) else None
        if role in ("user", "assistant") and isinstance(content, str) and content.strip():
            turns.append((role, content.strip()))
    return turns[-MAX_HISTORY_MESSAGES:]


def _standalone(
    question: str,
    turns: list[tuple[str, str]],
    assistant: Assistant,
    original: str,
    budget: Budget,
    previous: list[Paper] | None = None,
) -> str:
    foreign = language(question) != "en"  # rewritten into an English search query
    if not any(role == "user" for role, _ in turns) and not (foreign and assistant.chat_model):
        return question
    if assistant.chat_model is None:
        return offline_standalone(question, turns)
    if not needs_rewrite(question):  # already standalone: nothing to rewrite
        return question
    try:
        messages = rewrite_messages(question, turns, english=foreign, previous=previous or ())
        # Streamed, so a timeout closes the request and a local server stops working on it.
        reply = "".join(capped(assistant.chat_model, messages, budget))
    except Exception as e:
        raise _model_error(e, assistant, original) from None
    rewritten = _clean_rewrite(reply)
    titles = [p.title for p in previous or ()]
    return accepted(rewritten, question, turns, titles) or question


def offline_standalone(question: str, turns: list[tuple[str, str]]) -> str:
    """Without a model: a short follow-up ("and how fast is it?") joins the last user question;
    a question with a subject of its own ("Summarize the paper on masked diffusion scaling
    laws") is searched alone."""
    previous = next((content for role, content in reversed(turns) if role == "user"), "")
    short = len(question.split()) <= 12 and len(topic_terms(question)) <= MAX_FOLLOW_UP_TOPIC_TERMS
    if previous and short and _FOLLOW_UP.search(question):
        return f"{previous} {question}"
    return question


def _clean_rewrite(text: str) -> str:
    # A fence tag is not the question: small models echo "<question>" on a line of its own.
    text = re.sub(
        r"<\s*/?\s*(?:question|conversation|previous_sources)\s*>", "\n", text, flags=re.I
    )
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = re.sub(r"^(?:standalone question|question)\s*:\s*", "", lines[0], flags=re.I)
    return line.strip().strip("\"'“”").strip()[:MAX_QUESTION_CHARS]


def _offline(turn: Turn, assistant: Assistant) -> CitedAnswer:
    threshold = assistant.retriever.threshold
    calibration = assistant.retriever.calibration
    # The judge decided which retrieved papers belong (rag.answer.judge): a list names those,
    # the sources setting being a maximum, not a quota. A Chinese list question ("哪些论文…")
    # is a list too, though its gloss drops the frame.
    listing = turn.intent is not None and turn.intent.listing
    verdict = turn.verdict
    options = ExtractiveOptions(
        min_similarity=threshold,
        relevant=verdict.belongs if verdict is not None else None,
        calibration=calibration,
        mode="list" if listing and turn.intent and turn.intent.language != "en" else "auto",
    )
    named = verdict.named if verdict is not None else None  # its paper was retrieved first
    if named is not None:  # the question names a method: its paper leads (it was ranked 1)
        lead = next(
            (i for i, s in enumerate(turn.sources) if s.paper.id not in named.paper_ids),
            len(turn.sources),
        )
        options = replace(options, named=lead, named_only=named.whole_subject)
    # A follow-up was joined to the previous question to retrieve; its sentences answer
    # what is asked now ("and how fast is it?").
    focus = turn.question.strip() if turn.standalone != turn.question.strip() else turn.standalone
    sources = turn.sources
    if turn.reference is not None and turn.citable:
        # Only the papers pointed at; "summarize the second one" asks for its summary.
        sources = turn.sources[: turn.citable]
        focus = turn.reference.focus or focus
        options = ExtractiveOptions(
            max_papers=len(sources),
            summary_papers=len(sources),
            summary_margin=float("inf"),
            per_paper=3 if len(sources) == 1 else 2,
            max_sentences=max(6, 2 * len(sources)),
            mode="summary"
            if not topic_terms(english_query(focus)) or is_comparison(focus)
            else ("answer" if len(sources) == 1 else "list"),
            calibration=calibration,
        )
    # A question in another language picks its English sentences through its gloss.
    query = english_query(focus)
    if named is not None and not named.whole_subject and HOW_IT_WORKS.search(query):
        query = without_name(query, named.name)  # "How does X decide ...": the rest matters
    lang = question_language(turn.question)  # the heading and labels follow the question
    aspect = asked_aspect(turn.question) if turn.reference and len(sources) == 1 else None
    if aspect is not None:  # "and how fast is it?": its speed sentence, or "reports none"
        text, quotes = aspect_answer(aspect, sources[0], lang)
    else:
        result = extractive_answer(query, sources, assistant.sentence_embeddings, options, lang)
        text, quotes = result.text, result.quotes
    return numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer=text,
            citations=cite(quotes, turn.sources),
            sources=turn.sources,
            abstained=False,
            model=assistant.model,
            offline=True,
            scope_note=turn.scope_note,
            compare=turn.compare,
            **verdict_fields(verdict, turn.intent, turn.question),
        )
    )


def _pieces(text: str) -> Iterator[str]:
    """An already complete answer, line by line, so the UI streams it the same way."""
    yield from re.findall(r"[^\n]*\n|[^\n]+$", text)


def _budget(assistant: Assistant) -> Budget:
    """llm.timeout is the total for one answer: rewrite, answer, stream and retries; a reply is
    read up to a byte budget that llm.max_tokens sets."""
    llm = assistant.settings.llm
    return Budget(llm.timeout, llm.max_retries, max_tokens=llm.max_tokens)


def _model_error(error: Exception, assistant: Assistant, question: str) -> AnswerError:
    """One clear sentence saying what failed and what to set; the question is kept."""
    message = model_error_message(error, assistant.settings.llm, assistant.model)
    return AnswerError(
        f"The language model failed: {message} Your question and the chat are kept; ask "
        "again, or use --config offline.",
        question,
    )
