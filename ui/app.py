"""The web chat: ask about ICLR 2025 papers, read answers with [n] citations, check the sources.

    make run                                            # http://localhost:8501
    RAG_CONFIG=local-server .venv/bin/streamlit run ui/app.py   # any preset or config file

A thin caller of `rag`: settings from `rag.settings` (RAG_CONFIG, then RAG_* variables),
answers from `rag.answer`. The models and the index are opened once per process.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import streamlit as st
from langchain_core.embeddings import Embeddings

from rag.answer import AnswerError, Assistant, CitedAnswer, open_assistant, stream_answer
from rag.build_status import BuildStatus, read_build_status, recording_build
from rag.index import build_index
from rag.loaders import TIERS, LoadError
from rag.models import OFFLINE_MODEL, ModelError, chat_model_name, make_embeddings
from rag.redact import display_url, redact
from rag.retrieve import Filters, RetrievedPaper
from rag.settings import ConfigError, EmbeddingSettings, Settings, get_settings, preset_names
from rag.store import IndexMismatchError, IndexMissingError, StoreError
from ui import explore
from ui.render import (
    Turn,
    answer_markdown,
    card_anchor,
    citations_by_number,
    escape_answer,
    escape_message,
    escape_text,
    feedback_record,
    highlighted_abstract,
    history,
    source_link,
    tier_badge,
)

PAGE_ICON = Path(__file__).with_name("icon.png")
LLM_PRESETS = [name for name in ("offline", "openai", "local-server") if name in preset_names()]
# Our own static CSS (no untrusted text): card titles the size of a small heading.
CARD_STYLE = """<style>
[class*="st-key-card-"] h3 { font-size: 1.15rem; padding: 0.25rem 0 0 0; }
</style>"""
# Answered (not abstained) from both the bundled seed papers and the full corpus.
EXAMPLES = [
    "How can attention masks be supported efficiently in FlashAttention?",
    "Summarize the work on evaluating LLM unlearning",
    "Do frontier models have the spatial intelligence of animals?",
]


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


def save_feedback(turn_id: str, path: Path) -> None:
    """Append the rating of one answer, with its question and citations, to the JSONL log."""
    rating = st.session_state.get(f"feedback-{turn_id}")
    turn = next((t for t in st.session_state.turns if t.id == turn_id), None)
    if turn is None or rating is None:
        return
    record = feedback_record(turn, "up" if rating == 1 else "down")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    except OSError as e:
        st.toast(f"Feedback not saved: {escape_message(e)}", icon=":material/error:")
        return
    st.toast("Thanks, feedback saved.", icon=":material/thumb_up:")


def show_card(
    turn_index: int,
    n: int,
    source: RetrievedPaper,
    quotes: list[str],
    rank: int = 0,
    supported: bool | None = True,
) -> None:
    """One source card: title, decision badge, OpenReview link, abstract with the quote marked.

    `supported`: False when the answer's claim citing it is not found in the abstract, None
    when that could not be checked (rag.verify).
    """
    paper = source.paper
    with st.container(border=True, key=f"card-{turn_index}-{n}-{rank}"):
        label = f"\\[{n}\\] {escape_text(paper.title)}" if n else escape_text(paper.title)
        st.subheader(label, anchor=card_anchor(turn_index, n) if n else False)
        facts = [tier_badge(paper.tier) or escape_text(paper.decision or "Decision unknown")]
        facts.append(source_link(paper.url))
        st.markdown(" · ".join(facts))
        if supported is False:
            st.warning(
                "Not found in this abstract: no sentence of it supports the claim citing it.",
                icon=":material/report:",
            )
        elif supported is None:
            st.caption("Not checked against the abstract: the sentence below is only the nearest.")
        for quote in quotes:
            st.markdown(f"> {escape_text(quote)}")
        with st.expander("Abstract", expanded=False, icon=":material/article:"):
            st.markdown(highlighted_abstract(paper.abstract, quotes))
        explore.related_in_card(assistant, paper.id, f"{turn_index}-{n}-{rank}")


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
    st.markdown(answer_markdown(answer, index))
    notes = [f"Answered by {escape_text(answer.model)}"]
    if answer.dropped_citations:
        notes.append(f"{answer.dropped_citations} citation(s) to no source were removed")
    if turn.tiers:
        notes.append("decision: " + ", ".join(turn.tiers))
    st.caption(" · ".join(notes))
    for n, citations in citations_by_number(answer).items():
        if 1 <= n <= len(answer.sources):
            verdicts = [c.supported for c in citations]
            supported = False if False in verdicts else None if None in verdicts else True
            quotes = [c.quote for c in citations if c.quote]
            show_card(index, n, answer.sources[n - 1], quotes, supported=supported)
    if answer.abstained and answer.sources:
        st.markdown("**Nearest papers**")
        for rank, source in enumerate(answer.sources, start=1):
            show_card(index, 0, source, [], rank)
    explore.answer_tools(turn, index, assistant)
    st.feedback(
        "thumbs",
        key=f"feedback-{turn.id}",
        on_change=save_feedback,
        args=(turn.id, settings.ui.feedback_path),
    )


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
turns: list[Turn] = st.session_state.turns
settings = read_settings()
model = chat_model_name(settings.llm)
offline = model == OFFLINE_MODEL

with st.sidebar:
    st.header("Model")
    server = display_url(settings.llm.base_url or "")
    where = f" at {escape_text(server)}" if server and not offline else ""
    st.markdown(f"**{escape_text(model)}**{where}")
    st.caption(
        "Change it with `llm.model` in a config file (run with `RAG_CONFIG=FILE`), a preset "
        f"(`RAG_CONFIG={'|'.join(LLM_PRESETS)}`), or `RAG_LLM__MODEL=provider:model` "
        "(OpenAI needs `OPENAI_API_KEY`; any OpenAI-compatible server: `RAG_LLM__BASE_URL`)."
    )
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
        max(15, settings.retrieval.k),  # a configured k above 15 (up to MAX_K) still fits
        settings.retrieval.k,
        key="k",
        help="How many papers are retrieved and shown to the answerer.",
    )
    st.divider()
    chat_actions = st.container()  # filled last, when this run's question is in the chat

st.title("ICLR 2025 research assistant")
st.caption("Answers grounded in the abstracts of ICLR 2025 papers; every [n] links to its source.")
explore.view_switch()
if offline:
    st.info(
        "**Offline:** answers are extractive summaries quoted from the abstracts, with no "
        "language model. To have a model write them, set `OPENAI_API_KEY` (then "
        f"`{settings.llm.auto_model}` answers), or run with `RAG_CONFIG=local-server` for a "
        "local OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio), or set "
        "`RAG_LLM__MODEL=openai:MODEL` and `RAG_LLM__BASE_URL=http://HOST:PORT/v1`.",
        icon=":material/cloud_off:",
    )
if notice := st.session_state.pop("notice", None):
    st.success(notice, icon=":material/check_circle:")

prompt = st.chat_input("Ask about ICLR 2025 papers…")
assistant = open_or_explain(settings)

if assistant is not None:
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
    turns.append(Turn(prompt, error="Not sent: the index is not open (see above)."))
    with st.chat_message("user"):
        st.markdown(escape_text(prompt))
    with st.chat_message("assistant"):
        show_reply(turns[-1], len(turns) - 1, settings, last=True)
elif prompt and assistant is not None:
    ask(prompt, assistant, turns, settings)
elif not turns and assistant is not None:
    st.markdown("**Try one of these:**")
    for example in EXAMPLES:
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
