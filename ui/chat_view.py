"""The Chat view: one turn of the chat (the question, the streamed answer, its source cards,
feedback), and the example questions an empty chat offers.
"""

from __future__ import annotations

import re
import sys
import time
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import streamlit as st

from rag import MESSAGES, Assistant, CitedAnswer, Session, own_macros, question_language, redact
from rag.errors import AnswerError, StoreError
from rag.settings import Settings
from rag.types import Filters
from ui import papers_view
from ui.explore import CHAT_KEYS
from ui.feedback import (
    MAX_COMMENT,
    PROCESS_RATE_LIMIT,
    REASONS,
    FeedbackRefused,
    RateLimit,
    append_feedback,
    feedback_record,
)
from ui.render import (
    SourceRow,
    Turn,
    answer_markdown,
    card_anchor,
    card_details,
    display_answer,
    escape_answer,
    escape_message,
    escape_text,
    first_numbers,
    highlighted_abstract,
    no_abstract,
    source_facts,
    source_line,
    source_rows,
    streamed_markdown,
)

# Offered when the loaded index answers them (checked once per index generation).
EXAMPLE_CANDIDATES = [
    "How can attention masks be supported efficiently in FlashAttention?",
    "Summarize the work on evaluating LLM unlearning",
    "Which papers make attention cheaper for long sequences?",
    "Which benchmark detects dark patterns in large language models?",
    "Do frontier models have the spatial intelligence of animals?",
    "How are LLM agents evaluated on software engineering tasks?",
]
EXAMPLES_SHOWN = 3
REDRAW_SECONDS = 0.25  # the streamed answer is redrawn at most this often
# How a follow-up's "the second one" is read (issue 23): in the newest list, the one above it.
# The conversation (rag.Session: the history and the previous answer the next question sees),
# kept in st.session_state across reruns beside the turns the page draws.
CONVERSATION_KEY = "conversation"


@st.cache_data(show_spinner=False, max_entries=8)
def answerable_examples(index: str, generation: str, _assistant: Assistant) -> list[str]:
    """The example questions this index answers: their top paper passes the relevance floor.

    Cached per index and generation, so a rebuilt index is checked again.
    """
    retriever = _assistant.retriever
    kept = []
    for question in EXAMPLE_CANDIDATES:
        try:
            sources = retriever.search(question)
        except (StoreError, ValueError):
            continue
        if sources and retriever.is_relevant(question, sources):
            kept.append(question)
        if len(kept) == EXAMPLES_SHOWN:
            break
    return kept


def new_chat() -> None:
    """A chat with nothing of the last one: turns, comparisons, the comparison basket, the
    open card and the highlighted answer (the export is made from these)."""
    st.session_state.turns = []
    if (session := st.session_state.get(CONVERSATION_KEY)) is not None:
        session.reset()
    st.session_state.session_id = uuid.uuid4().hex[:16]  # feedback names the new chat apart
    for key in CHAT_KEYS:
        st.session_state.pop(key, None)


def use_example(question: str) -> None:
    st.session_state.example = question


def ask_again(turn_id: str) -> None:
    turns: list[Turn] = st.session_state.turns
    failed = next((t for t in turns if t.id == turn_id), None)
    if failed is not None:
        turns.remove(failed)
        use_example(failed.question)


@st.cache_resource(show_spinner=False)
def process_feedback_limit() -> RateLimit:
    """The feedback allowance of the whole process: new sessions share it."""
    return RateLimit(limit=PROCESS_RATE_LIMIT)


def save_feedback(turn_id: str, path: Path, details: bool = False) -> None:
    """Append the rating of one answer (and, from the thumbs-down form, its reasons and
    comment) to the JSONL log; it supersedes this turn's earlier rating."""
    turn = next((t for t in st.session_state.turns if t.id == turn_id), None)
    if turn is None:
        return
    value = st.session_state.get(f"feedback-{turn_id}")
    rating = None if value is None else "up" if value == 1 else "down"
    reasons: list[str] = []
    comment = ""
    if details and rating == "down":
        reasons = list(st.session_state.get(f"reasons-{turn_id}") or [])
        comment = str(st.session_state.get(f"comment-{turn_id}") or "")
    limit: RateLimit = st.session_state.setdefault("feedback_limit", RateLimit())
    now = time.monotonic()
    for allowance, whose in ((limit, "from this page"), (process_feedback_limit(), "on this app")):
        if not allowance.allow(now):
            st.toast(
                f"Feedback not saved: too many ratings {whose}; try again in a few minutes.",
                icon=":material/hourglass:",
            )
            return
    record = feedback_record(turn, st.session_state.session_id, rating, reasons, comment)
    try:
        append_feedback(path, record)
    except (OSError, FeedbackRefused) as e:
        st.toast(f"Feedback not saved: {escape_message(e)}", icon=":material/error:")
        return
    if rating is None:
        st.toast("Rating withdrawn.", icon=":material/undo:")
    else:
        icon = ":material/thumb_up:" if rating == "up" else ":material/thumb_down:"
        st.toast("Thanks, feedback saved.", icon=icon)


def show_feedback(turn: Turn, path: Path) -> None:
    """Thumbs up/down; a thumbs-down opens reason chips and an optional comment."""
    st.feedback("thumbs", key=f"feedback-{turn.id}", on_change=save_feedback, args=(turn.id, path))
    if st.session_state.get(f"feedback-{turn.id}") != 0:
        return
    with st.form(key=f"why-{turn.id}", border=False, enter_to_submit=False):
        st.pills("What went wrong?", REASONS, selection_mode="multi", key=f"reasons-{turn.id}")
        st.text_input(
            "Comment (optional)",
            key=f"comment-{turn.id}",
            max_chars=MAX_COMMENT,
            placeholder="What should the answer have said?",
        )
        st.form_submit_button("Send", on_click=save_feedback, args=(turn.id, path, True))


def show_source(
    turn_index: int,
    row: SourceRow,
    abstained: bool,
    assistant: Assistant | None,
    first: tuple[int, int] | None = None,
    language: str = "en",
) -> None:
    """One line of the source list ([n] title, tier, link) and its card on demand: authors,
    keywords, the abstract with the cited sentences highlighted, related papers; its labels
    in the `language` of the question it answers."""
    paper = row.source.paper
    said = MESSAGES[language]
    with st.container(key=f"card-{turn_index}-{row.n}"):
        # A refusal cites nothing, so its papers get no [n] anchor to link to.
        st.subheader(
            source_line(row), anchor=False if abstained else card_anchor(turn_index, row.n)
        )
        st.markdown(source_facts(row, abstained, first, said))
        if row.supported is False:
            st.warning(said["page_unsupported"], icon=":material/report:")
        elif row.supported is None:
            st.caption(said["page_unchecked"])
        with st.expander(said["page_card"], expanded=False, icon=":material/article:"):
            details = card_details(paper)
            if details:
                st.markdown(details)
            macros = own_macros([(paper.title, paper.abstract)])
            st.markdown(
                highlighted_abstract(paper.abstract, row.quotes, macros)
                if paper.has_abstract
                else no_abstract(said)
            )
            # Only where the reader is likely to go on from (a page of 15 sources would
            # otherwise carry 75 more buttons per answer).
            if row.cited or abstained:
                papers_view.related_in_card(
                    assistant, paper.id, f"{turn_index}-{row.n}", said["page_related"]
                )


def show_reply(
    turn: Turn, index: int, settings: Settings, assistant: Assistant | None, last: bool
) -> None:
    """The assistant's side of one turn: answer, source cards, feedback; or the error."""
    if turn.answer is None:
        # No error either: the page changed (a click, a new question) while it was answering.
        error = turn.error or "The answer was interrupted before it was finished."
        st.error(escape_message(error), icon=":material/error:")
        if last:
            st.button(
                "Ask again",
                key=f"retry-{turn.id}",
                on_click=ask_again,
                args=(turn.id,),
                icon=":material/refresh:",
            )
        return
    answer: CitedAnswer = turn.answer
    if answer.abstained:
        # The refusal alone: its nearest papers are listed below as source lines.
        st.markdown(display_answer(answer.refusal or answer.answer))
    else:
        st.markdown(answer_markdown(answer, index))
    # The answer's own labels in its question's language (the fixed text of the answer is)
    language = question_language(answer.question)
    said = MESSAGES[language]
    notes = [said["page_answered_by"].format(model=escape_text(answer.model))]
    if answer.dropped_citations:
        notes.append(f"{answer.dropped_citations} citation(s) to no source were removed")
    if turn.tiers:
        notes.append("decision: " + ", ".join(turn.tiers))
    if answer.scope_note:
        notes.append(escape_text(answer.scope_note))
    if answer.judge_note:  # a list's "checked 10, 7 match": what was left out
        notes.append(escape_text(answer.judge_note))
    st.caption(" · ".join(notes))
    rows = source_rows(answer)
    if rows:
        cited = sum(row.cited for row in rows)
        st.markdown(
            said["page_closest"]
            if answer.abstained
            # "shown", not "retrieved": a list's judge checked more (its note says how many)
            else said["page_sources"].format(cited=cited, shown=len(rows))
        )
        if not answer.abstained:
            st.caption(said["page_ordinals"])
    first_seen = first_numbers(st.session_state.get("turns", [])[:index])
    if answer.compare:  # "compare them": the comparison table, as the button builds it
        papers_view.compared_in_answer(turn, answer, assistant)
    # Uncited papers already listed under an earlier answer are folded away: a follow-up
    # otherwise repeats the whole list each turn.
    listed = listed_before(index)
    repeats = [r for r in rows if not r.cited and r.source.paper.id in listed]
    for row in rows:
        if answer.abstained or row not in repeats:
            first = first_seen.get(row.source.paper.id)
            show_source(index, row, answer.abstained, assistant, first, language)
    if repeats and not answer.abstained:
        # its numbers, so the list above does not seem to skip them ("[1] [2] [3] [5]")
        numbers = ", ".join(f"\\[{row.n}\\]" for row in repeats)  # Markdown: "[4]" as text
        label = MESSAGES[language]["page_repeats"].format(n=len(repeats), numbers=numbers)
        if st.toggle(label, key=f"repeats-{turn.id}"):
            for row in repeats:
                first = first_seen.get(row.source.paper.id)
                show_source(index, row, False, assistant, first, language)
    papers_view.answer_tools(turn, index, assistant)
    show_feedback(turn, settings.ui.feedback_path)


def listed_before(index: int) -> set[str]:
    """The papers listed under the answers before turn `index`."""
    turns: list[Turn] = st.session_state.get("turns", [])
    return {s.paper.id for t in turns[:index] if t.answer for s in t.answer.sources}


# A marker still open at the end of the streamed text ("[1", "[1, 2]"): held back until more
# text follows, so the stream never shows it half-made ("[1](streamdown:incomplete-link)").
_OPEN_MARKER = re.compile(r"\[[\d,;\s\-–]*\]?$")


def text_pieces(
    stream: Iterator[str | CitedAnswer], result: list[CitedAnswer], waiting: Any = None
) -> Iterator[str]:
    """The streamed text, escaped; the final CitedAnswer goes into `result`. `waiting` (a
    placeholder saying the model is reading) is cleared when the first text arrives."""
    held = ""
    for item in stream:
        if waiting is not None:
            waiting.empty()
            waiting = None
        if isinstance(item, str):
            text = held + item
            match = _OPEN_MARKER.search(text)
            held = match.group(0) if match else ""
            if text[: len(text) - len(held)]:
                yield escape_answer(text[: len(text) - len(held)])
        else:
            result.append(item)
    if held:
        yield escape_answer(held)


def show_streamed(pieces: Iterator[str]) -> None:
    """The streamed answer, redrawn at most every `REDRAW_SECONDS`: each redraw sends and
    renders the whole text so far, so one per piece made a long reply quadratic (1.2 MB kept
    a session busy for minutes)."""
    box = st.empty()
    shown: list[str] = []
    drawn = 0.0
    for piece in pieces:
        shown.append(piece)
        if time.monotonic() - drawn >= REDRAW_SECONDS:
            box.markdown(streamed_markdown("".join(shown)))
            drawn = time.monotonic()
    box.markdown(streamed_markdown("".join(shown)))


def conversation(assistant: Assistant) -> Session:
    """This chat's conversation, kept across reruns, asked with `assistant` (the model menu's
    choice of this run: switching models keeps the chat)."""
    session: Session | None = st.session_state.get(CONVERSATION_KEY)
    if session is None:
        session = st.session_state[CONVERSATION_KEY] = Session(assistant)
    session.assistant = assistant
    return session


def ask(question: str, assistant: Assistant, turns: list[Turn], settings: Settings) -> None:
    """Answer `question` into the chat, streaming; whatever fails, the question stays (the
    conversation records a turn only when its answer is complete)."""
    tiers, k = list(st.session_state.tiers), int(st.session_state.k)
    session = conversation(assistant)
    session.filters, session.k = Filters(tiers=tiers), k
    # A follow-up points at the last answer's numbered sources ("the second one"); a
    # comparison button names its own answer, which need not be the last one.
    of = st.session_state.pop("compare_of", None)
    named = next((t.answer for t in turns if of is not None and t.id == of), None)
    about = st.session_state.pop("about", None)  # "Ask about this paper" on a card
    turn = Turn(question, tiers=tiers, k=k)
    turns.append(turn)
    with st.chat_message("user"):
        st.markdown(escape_text(question))
    with st.chat_message("assistant"):
        result: list[CitedAnswer] = []
        slot = st.empty()
        try:
            with slot.container():
                waiting = st.empty()  # the model reads the prompt before it writes (15-20 s)
                waiting.caption(f"Reading up to {k} sources…")
                stream = session.ask(question, about=about, of=named)
                show_streamed(text_pieces(stream, result, waiting))
        except (AnswerError, StoreError) as e:
            turn.error = redact(e.worded("action"), settings)  # the page's advice, not the CLI's
        except Exception as e:  # the user gets one line; the traceback goes to the log
            print(redact(traceback.format_exc(), settings), file=sys.stderr)
            turn.error = redact(
                f"Something went wrong while answering ({type(e).__name__}: {e}).", settings
            )
        slot.empty()
        if result:
            turn.answer = result[-1]
        elif turn.error is None:
            turn.error = "No answer came back."
        show_reply(turn, len(turns) - 1, settings, assistant, last=True)
