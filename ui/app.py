"""The web chat: ask about ICLR 2025 papers, read answers with [n] citations, check the sources.

    make run                                            # http://localhost:8501
    RAG_CONFIG=local-server .venv/bin/streamlit run ui/app.py   # any preset or config file

A thin caller of `rag`: settings from `rag.settings` (RAG_CONFIG, then RAG_* variables),
answers from `rag.answer.pipeline`. The models and the index are opened once per process
(`ui.index_view`); a turn of the chat is drawn by `ui.chat_view`, the Map view by `ui.map_view`.

The page opens first (issue 31): what is imported at the top is only what the header, the
sidebar's frame and the chat's box need (no pydantic, NumPy, Chroma, ONNX or LangChain). A
first visit's run draws the box, then reads the settings, imports the rest (`page_modules`) and
opens the index and the models under a spinner; a question typed meanwhile reruns the page,
which answers it once they are open.
"""

from __future__ import annotations

import os
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from rag import MAX_QUESTION_CHARS
from rag.errors import AnswerError, ConfigError, StoreError
from rag.types import OFFLINE_MODEL, TIERS
from ui import explore
from ui.serving import enforce_loopback
from ui.texts import APP_CAPTION, APP_TITLE, ASK_LIMITED, CHAT_FILE

if TYPE_CHECKING:
    from rag.settings import Settings
    from ui.render import Turn

PAGE_ICON = Path(__file__).with_name("icon.png")
# Our own static CSS (no untrusted text): source titles the size of a line of bold text;
# tables (comparisons) scroll inside their own box, so a phone's page never scrolls sideways;
# related-paper titles read left-aligned; on a phone the map takes the screen's full width and
# a comparison stacks (its papers' headings, then each aspect's cells, each ending with its [n]),
# so no column is cut at the screen's edge (issue 31).
CARD_STYLE = """<style>
[class*="st-key-card-"] h3 { font-size: 1rem; padding: 0.5rem 0 1rem 0; }
[class*="st-key-card-"] { gap: 0.2rem; }
[data-testid="stMarkdownContainer"] table { display: block; max-width: 100%; overflow-x: auto; }
[class*="st-key-related-"] button { justify-content: flex-start; text-align: left; }
[class*="st-key-related-"] button div { justify-content: flex-start; text-align: left; }
@media (max-width: 640px) {
  [data-testid="stMainBlockContainer"] { padding-left: 0.5rem !important;
    padding-right: 0.5rem !important; }
  .st-key-map-box { margin-left: -0.5rem !important; margin-right: -0.5rem !important;
    width: calc(100% + 1rem) !important; max-width: none !important; }
  [class*="st-key-comparison-"] :is(table, thead, tbody, tr, th, td) { display: block;
    width: auto; border: none; overflow-wrap: anywhere; }
  [class*="st-key-comparison-"] thead th:first-child { display: none; }
  [class*="st-key-comparison-"] tr { padding: 0.3rem 0; border-bottom: 1px solid #8884; }
  [class*="st-key-comparison-"] :is(th, td) { padding: 0.15rem 0.25rem; text-align: left; }
}
</style>"""
# Our own static script (no untrusted text): Plotly shows the hover on a finger's tap but
# never selects (its touch handler looks for a mouse position the touch end does not carry), so
# a short tap on the map is replayed as the mouse click that selects the point under it.
TAP_SCRIPT = """<script>
(() => {
  if (window.__mapTaps) return;
  window.__mapTaps = true;
  let start = null;
  document.addEventListener("touchstart", (e) => {
    const t = e.touches[0];
    const onMap = e.touches.length === 1 && e.target.closest && e.target.closest(".js-plotly-plot");
    start = onMap ? { x: t.clientX, y: t.clientY, time: Date.now() } : null;
  }, { capture: true, passive: true });
  document.addEventListener("touchend", (e) => {
    const t = e.changedTouches[0];
    const tap = start && Math.hypot(t.clientX - start.x, t.clientY - start.y) < 10
      && Date.now() - start.time < 700;
    start = null;
    if (!tap) return;
    const target = document.elementFromPoint(t.clientX, t.clientY);
    if (!target) return;
    const at = { bubbles: true, cancelable: true, view: window, clientX: t.clientX,
      clientY: t.clientY, button: 0 };
    target.dispatchEvent(new MouseEvent("mousemove", { ...at, buttons: 0 }));
    setTimeout(() => {
      target.dispatchEvent(new MouseEvent("mousedown", { ...at, buttons: 1 }));
      target.dispatchEvent(new MouseEvent("mouseup", { ...at, buttons: 0 }));
      target.dispatchEvent(new MouseEvent("click", { ...at, buttons: 0 }));
    }, 80);
  }, { capture: true, passive: true });
})();
</script>"""
NOT_SENT = "Not sent: the index is not open (see above)."
# Shown under the header (after 0.5 s) while a first run imports the rest and opens the index.
LOADING = "Opening the papers and the search models…"


@st.cache_resource(show_spinner=False)
def page_modules() -> bool:
    """Import the modules the page answers and draws with, once per process, one run at a time.

    A question typed while a first run imports them starts another run at once (Streamlit's
    fast reruns), and two runs importing the same modules together can meet one half imported
    (Python then hands out a partly initialised module instead of waiting). A run waiting here
    can still be stopped or rerun.
    """
    import ui.chat_view
    import ui.index_view
    import ui.map_view
    import ui.model_menu  # noqa: F401

    return True


def chat_box() -> str | None:
    """The chat's box, floating at the page's bottom: one widget wherever the run draws it."""
    return st.chat_input(ASK_LIMITED, max_chars=MAX_QUESTION_CHARS)


def chat_buttons(turns: list[Turn]) -> None:
    """New chat, Download chat and the chat's BibTeX, in the sidebar of both views."""
    from ui import papers_view
    from ui.chat_view import new_chat

    st.button(
        "New chat",
        on_click=new_chat,
        icon=":material/add_comment:",
        disabled=not turns,
        width="stretch",
    )
    st.download_button(
        "Download chat",
        data=papers_view.chat_export(turns, st.session_state.get(explore.COMPARISONS_KEY, {})),
        file_name=CHAT_FILE,
        mime="text/markdown",
        on_click="ignore",
        disabled=not turns,
        icon=":material/download:",
        width="stretch",
    )
    papers_view.sidebar_bibtex(turns)


def read_settings() -> Settings:
    from rag.settings import get_settings  # pydantic's: after the chat box

    try:
        return get_settings(os.environ.get("RAG_CONFIG") or None)
    except ConfigError as e:
        from ui.render import escape_message

        st.error(f"The configuration is invalid: {escape_message(e)}", icon=":material/error:")
        st.stop()


enforce_loopback()  # before anything is drawn: a careless config must not expose the chat
st.set_page_config(
    page_title=APP_TITLE,
    # The map uses the width it is given (a centred column left it about 530 px wide).
    layout="wide" if explore.shown_view() == "Map" else "centered",
)
st.html(CARD_STYLE)
st.html(TAP_SCRIPT, unsafe_allow_javascript=True)
st.session_state.setdefault("turns", [])
st.session_state.setdefault("session_id", uuid.uuid4().hex[:16])  # names this chat in feedback
turns: list[Turn] = st.session_state.turns
# A chat with no turns yet (a first visit) gets its box first of all, before anything heavy is
# imported or opened: the page can be used at once, and a question typed while the index opens
# is answered as soon as it is open. With turns, the box comes after them (see below).
box_first = explore.shown_view() != "Map" and not turns
typed = chat_box() if box_first else None

with st.sidebar:
    st.header("Model")
    menu_slot = st.container()  # the model menu, drawn once its modules are imported
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
    sources_slot = st.container()  # the number of sources, once the settings are read
    map_slot = st.container()  # the Map view's choice of answer to highlight
    st.divider()
    chat_actions = st.container()  # filled last, when this run's question is in the chat

st.title(APP_TITLE)
st.caption(APP_CAPTION)
explore.view_switch()
offline_slot = st.container()  # the offline note, once the chosen model is known (an empty
# container is not drawn at all: the Map view's layout is as it was)
if notice := st.session_state.pop("notice", None):
    st.success(notice, icon=":material/check_circle:")

# The Map view draws its own box, under the map, and holds the page's bottom (where the chat's
# box floats) empty from the start: Streamlit wraps the page in another element while a chat box
# floats there, so a bottom emptied only at the end of the run remounted the whole page, and the
# map, already drawn, was drawn a second time (0.5-1 s of the browser's time at load 5).
on_map = st.session_state.get(explore.VIEW_KEY) == "Map"
if on_map:
    st.bottom.empty()
with st.spinner(LOADING) if box_first else nullcontext():
    # A file of ours: a :material/...: icon makes the browser fetch its glyph from a font host.
    # Set after the box: Streamlit reads the file with PIL and imports NumPy for it (0.1-0.3 s).
    st.set_page_config(page_icon=str(PAGE_ICON))
    base_settings = read_settings()
    sources_slot.slider(
        "Sources per answer",
        1,
        max(15, base_settings.retrieval.k),  # a configured k above 15 (up to MAX_K) still fits
        base_settings.retrieval.k,
        key="k",
        help="How many papers are retrieved and shown to the answerer.",
    )
    page_modules()  # one run at a time; then the imports below only name what is loaded
    from rag import chat_model_name
    from ui import map_view
    from ui.chat_view import answerable_examples, ask, show_reply, use_example
    from ui.index_view import load_model_assistant, open_or_explain
    from ui.model_menu import CONFIGURED, ModelChoice, model_choices
    from ui.render import Turn, escape_message, escape_text

    choices: dict[str, ModelChoice] = {c.key: c for c in model_choices(base_settings, os.environ)}
    if st.session_state.get("model_choice") not in choices:
        st.session_state.model_choice = CONFIGURED
    with menu_slot:
        st.selectbox(
            "Answers written by",
            list(choices),
            format_func=lambda key: choices[key].label,
            key="model_choice",
            help="The configured model and the model presets in config/ that can run here "
            "(OpenAI's needs `OPENAI_API_KEY`). Switching keeps the chat.",
        )
    if unavailable := choices[st.session_state.model_choice].unavailable:  # said in full
        model_slot.warning(escape_text(unavailable), icon=":material/warning:")
    choice = choices[st.session_state.model_choice]
    settings = choice.settings  # only [llm] differs from base_settings
    model = chat_model_name(settings.llm)
    offline = model == OFFLINE_MODEL
    assistant = open_or_explain(base_settings)
    if assistant is not None and choice.key != CONFIGURED:
        try:
            assistant = load_model_assistant(settings, assistant)
        except AnswerError as e:
            model_slot.error(escape_message(e), icon=":material/error:")
            assistant = None

if offline and not on_map:
    with offline_slot.expander(
        "Offline: quoted extracts · Connect a model", icon=":material/cloud_off:"
    ):
        st.markdown(
            "Answers are extractive summaries quoted from the abstracts, with no language "
            "model. To have a model write them, pick one in the sidebar's model menu, or start "
            f"the app with `OPENAI_API_KEY` set (then `{settings.llm.auto_model}` answers), with "
            "`RAG_CONFIG=local-server` for a local OpenAI-compatible server (Ollama, vLLM, "
            "llama.cpp, LM Studio), or with `RAG_LLM__MODEL=openai:MODEL` and "
            "`RAG_LLM__BASE_URL=http://HOST:PORT/v1`."
        )

if assistant is not None:
    # Questions refused while the index was missing: it is open now, so they are stale.
    turns[:] = [t for t in turns if t.error != NOT_SENT]
    with corpus_slot:
        try:
            stats = assistant.stats()
            # "3,704 papers + 12 untitled abstracts": the conference's count, then the seeds'
            # (an index of mostly untitled abstracts, the seeds alone: "38 papers")
            untitled = stats.get("untitled", 0)
            apart = 0 < untitled < stats["papers"] - untitled
            papers = f"**{stats['papers'] - untitled * apart:,}** papers"
            papers += f" + **{untitled}** untitled abstracts" if apart else ""
            st.markdown(
                f"{papers} · **{stats['chunks']:,}** chunks  \n"
                f"Embeddings: {escape_text(str(stats['embedding_model']))}"
            )
        except StoreError as e:
            st.error(escape_message(e))
else:
    corpus_slot.caption("No index open.")

if map_view.show_map_view(assistant, turns, map_slot):
    with chat_actions:
        chat_buttons(turns)
    st.stop()

for i, turn in enumerate(turns):
    with st.chat_message("user"):
        st.markdown(escape_text(turn.question))
    with st.chat_message("assistant"):
        show_reply(turn, i, settings, assistant, last=i == len(turns) - 1)

# After the turns, not above them: the floating box changes what wraps the page (see above),
# and by now the Map view's chart is replaced, so it is not remounted and drawn again for nothing.
# Trimmed, and limited before it is echoed (the pipeline refuses longer); blank sends nothing.
if not box_first:
    typed = chat_box()
prompt = (typed or st.session_state.pop("example", None) or "").strip()
if prompt and assistant is None:
    turns.append(Turn(prompt, error=NOT_SENT))
    with st.chat_message("user"):
        st.markdown(escape_text(prompt))
    with st.chat_message("assistant"):
        show_reply(turns[-1], len(turns) - 1, settings, assistant, last=True)
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
    chat_buttons(turns)
map_view.preload_map(assistant)  # the Map's scripts and data load while the chat is read
