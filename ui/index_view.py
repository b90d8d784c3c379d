"""The index behind the page: the models and the assistant opened once per process, a missing
index built here with a progress bar, or a build by `rag ingest` (`make run`'s first start)
followed until it is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import streamlit as st
from langchain_core.embeddings import Embeddings

from rag import (
    Assistant,
    BuildStatus,
    build_index,
    make_chat_model,
    make_embeddings,
    open_assistant,
    read_build_status,
    recording_build,
)
from rag.errors import (
    AnswerError,
    IndexMismatchError,
    IndexMissingError,
    ModelError,
    RagError,
    StaleVectorsError,
)
from rag.settings import EmbeddingSettings, Settings
from ui.render import escape_message, escape_text

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
        raise AnswerError(e) from None  # its problem, code and hint
    return Assistant(settings, _base.retriever, chat_model, _base.embeddings)


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
        with recording_build(settings, progress, keeps_index=not rebuild) as record:
            report = build_index(settings, rebuild=rebuild, embeddings=embeddings, progress=record)
    except (RagError, OSError) as e:
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
        return f"Building the index: {status.total:,} papers stored, writing the keyword index…"
    eta = status.eta_seconds()
    left = f", about {eta:.0f} s left" if eta is not None else ""
    # "stored", not "embedded": with the bundled corpus's shipped vectors nothing is embedded.
    return f"Building the index: {status.done:,} of {status.total:,} papers stored{left}"


@st.fragment(run_every=0.5)  # reads one small file: the chat opens within half a second
def follow_the_build(settings: Settings) -> None:
    """Progress of a build running in another process (`make run`'s first start), until done.

    Meanwhile the embedding model loads here, so the chat opens ready to search (a shipped
    build never loads it in the building process: there is no work twice)."""
    warm_embeddings(settings.embedding)
    status = read_build_status(settings)
    if status is None or not status.running:
        st.rerun()  # finished (or stopped): the whole page opens the index, or says why not
        return
    share = min(status.done / status.total, 1.0) if status.total else 0.0
    st.progress(share, text=build_message(status))
    st.caption(
        "The first start indexes the whole corpus on this machine, embedding only what the "
        "vectors shipped with the bundled corpus do not cover (a progress bar runs in the "
        "terminal too). This page updates by itself and opens the chat when the index is ready."
    )


@st.cache_resource(show_spinner=False, hash_funcs=BY_VALUE)
def warm_embeddings(settings: EmbeddingSettings) -> threading.Thread | None:
    """Load the local embedding model in a thread, once per process (a cached resource)."""
    if settings.provider != "local":
        return None  # a remote embedding API is not called just to warm up
    embeddings = load_embeddings(settings)
    thread = threading.Thread(target=embeddings.embed_query, args=("warm up",), daemon=True)
    thread.start()
    return thread


@st.fragment(run_every=2)
def watch_for_a_build(settings: Settings) -> None:
    """`make run` starts the build beside the server: follow it as soon as it is recorded."""
    if read_build_status(settings) is not None:
        st.rerun()


def serve_during_build(settings: Settings, status: BuildStatus) -> Assistant | None:
    """The open index while an ingest adds to it (or after one stopped): the chat goes on.

    Searches see each paper once it is whole; BM25, the names and the map move to the new
    generation at the first question after the ingest ends (rag.index.bm25). No fragment
    polls here: a rerun from one used to land in the middle of a streamed answer.
    """
    try:
        assistant = load_assistant(settings)
    except (RagError, OSError):
        return None
    if status.running:
        done = f" ({status.done:,} of {status.total:,} papers)" if status.total else ""
        if status.total and status.done >= status.total:
            done = f" ({status.total:,} papers stored; the topic map is being written)"
        st.caption(
            f"An ingest into this index is running{done}: answers come from the index as it "
            "is, and include the new papers once it has finished.",
        )
    else:
        st.caption(
            f"The last ingest into this index stopped at {status.done:,} of {status.total:,} "
            "papers; answers come from the papers stored. `rag ingest` finishes it."
        )
    return assistant


def open_or_explain(settings: Settings) -> Assistant | None:
    """The assistant, or None after saying why not (and offering to build a missing index)."""
    status = read_build_status(settings)
    if status is not None and status.serving:
        assistant = serve_during_build(settings, status)
        if assistant is not None:
            return assistant
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
    except StaleVectorsError as e:  # `make run` rebuilds it beside the page: follow that
        st.warning(escape_message(e), icon=":material/database:")
        if st.button("Rebuild the index", type="primary", icon=":material/build:"):
            build_the_index(settings, rebuild=False)
        else:
            watch_for_a_build(settings)
    except IndexMismatchError as e:
        st.error(escape_message(e), icon=":material/sync_problem:")
        if st.button("Rebuild the index", type="primary", icon=":material/build:"):
            build_the_index(settings, rebuild=True)
    except (RagError, OSError) as e:
        st.error(escape_message(e), icon=":material/error:")
    return None
