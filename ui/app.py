"""The web chat: ask about ICLR 2025 papers, read answers with [n] citations, check the sources.

    make run                                            # http://localhost:8501
    RAG_CONFIG=local-server .venv/bin/streamlit run ui/app.py   # any preset or config file

A thin caller of `rag`: settings from `rag.settings` (RAG_CONFIG, then RAG_* variables),
answers from `rag.answer`. The models and the index are opened once per process.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import streamlit as st
from langchain_core.embeddings import Embeddings

from rag.answer import AnswerError, Assistant, CitedAnswer, open_assistant, stream_answer
from rag.build_status import BuildStatus, read_build_status, recording_build
from rag.index import build_index
from rag.loaders import TIERS, LoadError
from rag.messages import MESSAGES
from rag.models import (
    OFFLINE_MODEL,
    ModelError,
    chat_model_name,
    make_chat_model,
    make_embeddings,
)
from rag.redact import redact
from rag.retrieve import Filters
from rag.settings import ConfigError, EmbeddingSettings, Settings, get_settings
from rag.store import IndexMismatchError, IndexMissingError, StoreError
from ui import explore
from ui.feedback import MAX_COMMENT, REASONS, RateLimit, append_feedback, feedback_record
from ui.model_menu import CONFIGURED, ModelChoice, model_choices
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
    highlighted_abstract,
    history,
    source_facts,
    source_line,
    source_rows,
)

PAGE_ICON = Path(__file__).with_name("icon.png")
# Our own static CSS (no untrusted text): source titles the size of a line of bold text.
CARD_STYLE = """<style>
[class*="st-key-card-"] h3 { font-size: 1rem; padding: 0.5rem 0 1rem 0; }
[class*="st-key-card-"] { gap: 0.2rem; }
</style>"""
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
NOT_SENT = "Not sent: the index is not open (see above)."


# Settings are pydantic models: cached resources are keyed on their JSON, so equal settings
# share one resource.
BY_VALUE: dict[str | type[Any], Callable[[Any], Any]] = {
    Settings: lambda s: s.model_dump_json(),
    EmbeddingSettings: lambda s: s.model_dump_json(),
}


@st.cache_resource(show_spinner=False, hash_funcs=BY_VALUE)
def load_embeddings(settings: EmbeddingSettings) -> Embeddings:
    """The embedding model named in the settings, one per process (its weights load lazily)."""
    return make_embeddings(settings)


@st.cache_resource(show_spinner=False, hash_funcs=BY_VALUE)
def load_assistant(settings: Settings) -> Assistant:
    """Index, retriever and chat model for these settings, shared by every session."""
    assistant = open_assistant(settings, embeddings=load_embeddings(settings.embedding))
    assistant.warm_up()  # load the model and BM25 now, not at the first question
    return assistant


@st.cache_resource(show_spinner=False, hash_funcs=BY_VALUE)
def load_model_assistant(settings: Settings, _base: Assistant) -> Assistant:
    """The assistant for another model menu choice: the base one's index, this chat model."""
    try:
        chat_model = make_chat_model(settings.llm)
    except ModelError as e:
        raise AnswerError(str(e)) from None
    return Assistant(settings, _base.retriever, chat_model, _base.embeddings)


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


def read_settings() -> Settings:
    try:
        return get_settings(os.environ.get("RAG_CONFIG") or None)
    except ConfigError as e:
        st.error(f"The configuration is invalid: {escape_message(e)}", icon=":material/error:")
        st.stop()


def build_the_index(settings: Settings, rebuild: bool) -> None:
    """Ingest the configured corpus with a progress bar, then start over with the new index."""
    bar = st.progress(0.0, text="Loading the corpus…")
    done = [0]

    def progress(papers: int, total: int) -> None:
        done[0] += papers
        share = min(done[0] / total, 1.0) if total else 1.0
        bar.progress(share, text=f"Indexed {done[0]:,} of {total:,} papers")

    try:
        embeddings = load_embeddings(settings.embedding)
        with recording_build(settings, progress) as record:
            report = build_index(settings, rebuild=rebuild, embeddings=embeddings, progress=record)
    except (LoadError, StoreError, ModelError, OSError) as e:
        st.error(f"The index could not be built. {escape_message(e)}")
        return
    st.session_state.notice = (
        f"Indexed {report.added + report.updated + report.unchanged:,} papers "
        f"({report.chunks:,} chunks) in {report.seconds:.0f} s."
    )
    st.rerun()


def build_message(status: BuildStatus) -> str:
    if not status.total:
        return "Building the index: loading the corpus…"
    if status.done >= status.total:
        return f"Building the index: {status.total:,} papers embedded, writing the keyword index…"
    eta = status.eta_seconds()
    left = f", about {eta:.0f} s left" if eta is not None else ""
    return f"Building the index: {status.done:,} of {status.total:,} papers embedded{left}"


@st.fragment(run_every=2)
def follow_the_build(settings: Settings) -> None:
    """Progress of a build running in another process (`make run`'s first start), until done."""
    status = read_build_status(settings)
    if status is None or not status.running:
        st.rerun()  # finished (or stopped): the whole page opens the index, or says why not
        return
    share = min(status.done / status.total, 1.0) if status.total else 0.0
    st.progress(share, text=build_message(status))
    st.caption(
        "The first start embeds the whole corpus on this machine (a progress bar runs in the "
        "terminal too). This page updates by itself and opens the chat when the index is ready."
    )


@st.fragment(run_every=2)
def watch_for_a_build(settings: Settings) -> None:
    """`make run` starts the build beside the server: follow it as soon as it is recorded."""
    if read_build_status(settings) is not None:
        st.rerun()


def open_or_explain(settings: Settings) -> Assistant | None:
    """The assistant, or None after saying why not (and offering to build a missing index)."""
    status = read_build_status(settings)
    if status is not None and status.running:
        follow_the_build(settings)
        return None
    if status is not None:
        st.warning(
            f"The last build of the index stopped at {status.done:,} of {status.total:,} "
            "papers. Finish it here, or with `rag ingest`: it goes on where it stopped.",
            icon=":material/database:",
        )
        if st.button("Finish building the index", type="primary", icon=":material/build:"):
            build_the_index(settings, rebuild=False)
        return None
    try:
        return load_assistant(settings)
    except IndexMissingError as e:
        corpus = ", ".join(escape_text(str(p)) for p in settings.corpus_paths())
        st.warning(escape_message(e), icon=":material/database:")
        st.caption(f"The button reads {corpus} and embeds it on this machine.")
        if st.button("Build the index", type="primary", icon=":material/build:"):
            build_the_index(settings, rebuild=False)
        else:
            watch_for_a_build(settings)
    except IndexMismatchError as e:
        st.error(escape_message(e), icon=":material/sync_problem:")
        if st.button("Rebuild the index", type="primary", icon=":material/build:"):
            build_the_index(settings, rebuild=True)
    except (StoreError, AnswerError, ModelError, OSError) as e:
        st.error(escape_message(e), icon=":material/error:")
    return None


def new_chat() -> None:
    st.session_state.turns = []


def use_example(question: str) -> None:
    st.session_state.example = question


def ask_again(turn_id: str) -> None:
    turns: list[Turn] = st.session_state.turns
    failed = next((t for t in turns if t.id == turn_id), None)
    if failed is not None:
        turns.remove(failed)
        use_example(failed.question)


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
    if not limit.allow(time.monotonic()):
        st.toast(
            "Feedback not saved: too many ratings from this page; try again in a few minutes.",
            icon=":material/hourglass:",
        )
        return
    record = feedback_record(turn, st.session_state.session_id, rating, reasons, comment)
    try:
        append_feedback(path, record)
    except OSError as e:
        st.toast(f"Feedback not saved: {escape_message(e)}", icon=":material/error:")
        return
    st.toast("Thanks, feedback saved.", icon=":material/thumb_up:")


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


def show_source(turn_index: int, row: SourceRow, abstained: bool) -> None:
    """One line of the source list ([n] title, tier, link) and its card on demand: authors,
    keywords, the abstract with the cited sentences highlighted, related papers."""
    paper = row.source.paper
    with st.container(key=f"card-{turn_index}-{row.n}"):
        # A refusal cites nothing, so its papers get no [n] anchor to link to.
        st.subheader(
            source_line(row), anchor=False if abstained else card_anchor(turn_index, row.n)
        )
        st.markdown(source_facts(row, abstained))
        if row.supported is False:
            st.warning(
                "Not found in this abstract: no sentence of it supports the claim citing it.",
                icon=":material/report:",
            )
        elif row.supported is None:
            st.caption("Not checked against the abstract: the sentence marked is only the nearest.")
        with st.expander("Card", expanded=False, icon=":material/article:"):
            details = card_details(paper)
            if details:
                st.markdown(details)
            st.markdown(highlighted_abstract(paper.abstract, row.quotes))
            # Only where the reader is likely to go on from (a page of 15 sources would
            # otherwise carry 75 more buttons per answer).
            if row.cited or abstained:
                explore.related_in_card(assistant, paper.id, f"{turn_index}-{row.n}")


def refusal_text(answer: CitedAnswer) -> str:
    """A refusal without the library's list of nearest titles (the page lists them below)."""
    headings = {messages["nearest"] for messages in MESSAGES.values()}
    lines = answer.answer.splitlines()
    cut = next((i for i, line in enumerate(lines) if line.strip() in headings), len(lines))
    return "\n".join(lines[:cut]).rstrip()


def show_reply(turn: Turn, index: int, settings: Settings, last: bool) -> None:
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
        st.markdown(display_answer(refusal_text(answer)))
    else:
        st.markdown(answer_markdown(answer, index))
    notes = [f"Answered by {escape_text(answer.model)}"]
    if answer.dropped_citations:
        notes.append(f"{answer.dropped_citations} citation(s) to no source were removed")
    if turn.tiers:
        notes.append("decision: " + ", ".join(turn.tiers))
    st.caption(" · ".join(notes))
    rows = source_rows(answer)
    if rows:
        cited = sum(row.cited for row in rows)
        st.markdown(
            "**Closest papers, low match**"
            if answer.abstained
            else f"**Sources** · {cited} cited of {len(rows)} retrieved"
        )
    for row in rows:
        show_source(index, row, answer.abstained)
    explore.answer_tools(turn, index, assistant)
    show_feedback(turn, settings.ui.feedback_path)


def text_pieces(stream: Iterator[str | CitedAnswer], result: list[CitedAnswer]) -> Iterator[str]:
    """The streamed text, escaped; the final CitedAnswer goes into `result`."""
    for item in stream:
        if isinstance(item, str):
            yield escape_answer(item)
        else:
            result.append(item)


def ask(question: str, assistant: Assistant, turns: list[Turn], settings: Settings) -> None:
    """Answer `question` into the chat, streaming; whatever fails, the question stays."""
    tiers, k = list(st.session_state.tiers), int(st.session_state.k)
    past = history(turns)
    # The last answer's numbered sources, which a follow-up may point at ("the second one").
    previous = next((t.answer for t in reversed(turns) if t.answer is not None), None)
    turn = Turn(question, tiers=tiers, k=k)
    turns.append(turn)
    with st.chat_message("user"):
        st.markdown(escape_text(question))
    with st.chat_message("assistant"):
        result: list[CitedAnswer] = []
        slot = st.empty()
        try:
            with slot.container():
                stream = stream_answer(
                    question,
                    past,
                    assistant=assistant,
                    filters=Filters(tiers=tiers),
                    k=k,
                    previous=previous,
                )
                st.write_stream(text_pieces(stream, result))
        except (AnswerError, StoreError) as e:
            turn.error = redact(str(e), settings)
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
        show_reply(turn, len(turns) - 1, settings, last=True)


st.set_page_config(
    page_title="ICLR 2025 research assistant",
    # A file of ours: a :material/...: icon makes the browser fetch its glyph from a font host.
    page_icon=str(PAGE_ICON),
    layout="centered",
)
st.html(CARD_STYLE)
st.session_state.setdefault("turns", [])
st.session_state.setdefault("session_id", uuid.uuid4().hex[:16])  # names this chat in feedback
turns: list[Turn] = st.session_state.turns
base_settings = read_settings()
choices: dict[str, ModelChoice] = {c.key: c for c in model_choices(base_settings, os.environ)}
if st.session_state.get("model_choice") not in choices:
    st.session_state.model_choice = CONFIGURED

with st.sidebar:
    st.header("Model")
    st.selectbox(
        "Answers written by",
        list(choices),
        format_func=lambda key: choices[key].label,
        key="model_choice",
        help="The configured model and the model presets in config/ that can run here "
        "(OpenAI's needs `OPENAI_API_KEY`). Switching keeps the chat.",
    )
    model_slot = st.container()
    st.header("Corpus")
    corpus_slot = st.container()
    st.header("Filters")
    st.multiselect(
        "Decision",
        TIERS,
        key="tiers",
        placeholder="All decisions",
        help="Answer only from papers with these decisions.",
    )
    st.slider(
        "Sources per answer",
        1,
        max(15, base_settings.retrieval.k),  # a configured k above 15 (up to MAX_K) still fits
        base_settings.retrieval.k,
        key="k",
        help="How many papers are retrieved and shown to the answerer.",
    )
    st.divider()
    chat_actions = st.container()  # filled last, when this run's question is in the chat

choice = choices[st.session_state.model_choice]
settings = choice.settings  # only [llm] differs from base_settings
model = chat_model_name(settings.llm)
offline = model == OFFLINE_MODEL

st.title("ICLR 2025 research assistant")
st.caption("Answers grounded in the abstracts of ICLR 2025 papers; every [n] links to its source.")
explore.view_switch()
if offline:
    with st.expander("Offline: quoted extracts · Connect a model", icon=":material/cloud_off:"):
        st.markdown(
            "Answers are extractive summaries quoted from the abstracts, with no language "
            "model. To have a model write them, pick one in the sidebar's model menu, or start "
            f"the app with `OPENAI_API_KEY` set (then `{settings.llm.auto_model}` answers), with "
            "`RAG_CONFIG=local-server` for a local OpenAI-compatible server (Ollama, vLLM, "
            "llama.cpp, LM Studio), or with `RAG_LLM__MODEL=openai:MODEL` and "
            "`RAG_LLM__BASE_URL=http://HOST:PORT/v1`."
        )
if notice := st.session_state.pop("notice", None):
    st.success(notice, icon=":material/check_circle:")

prompt = st.chat_input("Ask about ICLR 2025 papers…")
assistant = open_or_explain(base_settings)
if assistant is not None and choice.key != CONFIGURED:
    try:
        assistant = load_model_assistant(settings, assistant)
    except AnswerError as e:
        model_slot.error(escape_message(e), icon=":material/error:")
        assistant = None

if assistant is not None:
    # Questions refused while the index was missing: it is open now, so they are stale.
    turns[:] = [t for t in turns if t.error != NOT_SENT]
    with corpus_slot:
        try:
            stats = assistant.stats()
            st.markdown(
                f"**{stats['papers']:,}** papers · **{stats['chunks']:,}** chunks  \n"
                f"Embeddings: {escape_text(str(stats['embedding_model']))}"
            )
        except StoreError as e:
            st.error(escape_message(e))
else:
    corpus_slot.caption("No index open.")

if explore.show_map_view(assistant, turns, prompt):
    with chat_actions:
        explore.sidebar_bibtex(turns)
    st.stop()

for i, turn in enumerate(turns):
    with st.chat_message("user"):
        st.markdown(escape_text(turn.question))
    with st.chat_message("assistant"):
        show_reply(turn, i, settings, last=i == len(turns) - 1)

prompt = prompt or st.session_state.pop("example", None)
if prompt and assistant is None:
    turns.append(Turn(prompt, error=NOT_SENT))
    with st.chat_message("user"):
        st.markdown(escape_text(prompt))
    with st.chat_message("assistant"):
        show_reply(turns[-1], len(turns) - 1, settings, last=True)
elif prompt and assistant is not None:
    ask(prompt, assistant, turns, settings)
elif not turns and assistant is not None:
    try:
        generation = assistant.retriever.index.current_generation()
        examples = answerable_examples(settings.store.model_dump_json(), generation, assistant)
    except StoreError:
        examples = []
    if examples:
        st.markdown("**Try one of these:**")
    for example in examples:
        st.button(
            example,
            key=f"example-{example}",
            icon=":material/chat:",
            on_click=use_example,
            args=(example,),
        )

with chat_actions:
    st.button(
        "New chat",
        on_click=new_chat,
        icon=":material/add_comment:",
        disabled=not turns,
        width="stretch",
    )
    st.download_button(
        "Download chat",
        data=explore.chat_export(turns),
        file_name="iclr2025-chat.md",
        mime="text/markdown",
        on_click="ignore",
        disabled=not turns,
        icon=":material/download:",
        width="stretch",
    )
    explore.sidebar_bibtex(turns)
