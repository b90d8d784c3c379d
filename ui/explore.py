"""What the Map view and the paper cards share: the map of the index (read or computed once per
index generation, for every session of the process), the Chat/Map switch and the session keys.

The map is drawn by `ui.map_view`; cards, comparison and BibTeX are `ui.papers_view`. Titles are
untrusted: hover text is HTML-escaped here (Plotly renders a subset of HTML there).
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from rag.errors import StoreError

if TYPE_CHECKING:
    import numpy as np

    from rag import Assistant, CitedAnswer, PaperVectors, TopicMap

# The page's first run imports this module (the Chat/Map switch) before its chat box is drawn:
# the map's modules (NumPy, the index's, the text helpers') are imported where they are used.

VIEWS = ["Chat", "Map"]
VIEW_KEY = "explore_view"
PAPER_KEY = "explore_paper"  # the paper whose card is open in the Map view
BASKET_KEY = "explore_basket"  # paper ids picked for comparison
COMPARISONS_KEY = "explore_comparisons"  # every table made in this chat, for the export
# What belongs to one chat, cleared by "New chat".
CHAT_KEYS = (
    PAPER_KEY, BASKET_KEY, COMPARISONS_KEY, "explore_picked", "explore_turn", "explore_finder",
    "explore_turn_choice", "explore_map", "explore_highlighted",
)  # fmt: skip
# 60 distinguishable colours (Plotly's qualitative palettes), one per topic.
PALETTE = (
    "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf "
    "#3366cc #dc3912 #ff9900 #109618 #990099 #0099c6 #dd4477 #66aa00 #b82e2e #316395 "
    "#4c78a8 #f58518 #e45756 #72b7b2 #54a24b #eeca3b #b279a2 #ff9da6 #9d755d #bab0ac "
    "#aa0dfe #3283fe #85660d #782ab6 #565656 #1c8356 #16ff32 #f7e1a0 #e2e2e2 #1cbe4f "
    "#c4451c #dea0fd #fe00fa #325a9b #feaf16 #f8a19f #90ad1c #f6222e #1cffce #2ed9ff "
    "#b10da1 #c075a6 #fc1cbf #b00068 #fbe426 #fa0087 #636efa #ef553b #00cc96 #ab63fa"
).split()


@dataclass
class Explorer:
    """The map and the paper vectors of one index generation."""

    topic_map: TopicMap
    corpus: PaperVectors
    hover: list[str]  # escaped hover text per map point
    colours: list[str]
    tiers: np.ndarray  # tier per map point
    # Paper id -> title as text, by title: the "Open a paper" box's options, made once per
    # index generation, not at every Map run (2,123 titles took 40-90 ms of each run at load 5).
    finder: dict[str, str] = field(default_factory=dict)


_lock = threading.Lock()
# (cache file, index generation) -> what was read or computed; sessions of a process share it.
_corpora: dict[tuple[str, str], PaperVectors] = {}
_explorers: dict[tuple[str, str], Explorer] = {}
_failed: dict[tuple[str, str], str] = {}  # a read that failed for this key, not retried


def _key(assistant: Assistant) -> tuple[str, str]:
    from rag import map_path

    index = assistant.retriever.index
    return str(map_path(index.settings)), index.current_generation()


def corpus_of(assistant: Assistant) -> PaperVectors:
    """Every paper with its vector, read once per index generation (about a second).

    A failed read is remembered for its generation too: in a process that lived through an
    ingest by another one, Chroma's embeddings read fails ("Error executing plan"), and
    retrying it on every turn's redraw made each question take 17.7 s instead of 1.3 s.
    """
    key = _key(assistant)
    with _lock:
        failed = _failed.get(key)
        if failed is not None:
            raise StoreError(failed)
        if key not in _corpora:
            from rag import read_paper_vectors

            _corpora.clear()
            try:
                _corpora[key] = read_paper_vectors(assistant.retriever.index, key[1])
            except StoreError as e:
                _failed.clear()
                _failed[key] = str(e)
                raise
        return _corpora[key]


def _load_explorer(assistant: Assistant, compute: bool) -> Explorer | None:
    from rag import load_topic_map, read_cached_map

    key = _key(assistant)
    if key in _explorers:
        return _explorers[key]
    corpus = corpus_of(assistant)
    topic_map = read_cached_map(Path(key[0]), key[1])
    if topic_map is None:
        if not compute:
            return None
        bar = st.progress(0.0, text="Computing the topic map (once per index)…")

        def progress(stage: str, share: float) -> None:
            bar.progress(min(max(share, 0.0), 1.0), text=f"Topic map: {stage}…")

        topic_map = load_topic_map(assistant.retriever.index, progress=progress, corpus=corpus)
        bar.empty()
    found = make_explorer(topic_map, corpus)
    with _lock:
        _explorers.clear()
        _explorers[key] = found
    return found


def make_explorer(topic_map: TopicMap, corpus: PaperVectors) -> Explorer:
    import numpy as np

    from ui.latex import text_only

    papers = [corpus.get(pid) for pid in topic_map.paper_ids]
    hover, tiers = [], []
    for paper, topic in zip(papers, topic_map.topics, strict=True):
        label = topic_map.topic_list[int(topic)].label
        title = paper.shown_title if paper else "?"  # a seed is named as one (issue 31)
        unknown = "untitled abstract" if paper and paper.untitled else "decision unknown"
        tier = (paper.tier or paper.decision or unknown) if paper else ""
        hover.append(f"<b>{_hover(title)}</b><br>{_hover(tier)} · {_hover(label)}")
        tiers.append(paper.tier if paper else "")
    colours = [PALETTE[int(t) % len(PALETTE)] for t in topic_map.topics]
    finder = {
        p.id: text_only(p.shown_title) for p in sorted(corpus.papers, key=lambda p: p.title.lower())
    }
    return Explorer(topic_map, corpus, hover, colours, np.array(tiers), finder)


def _hover(text: str, width: int = 70) -> str:
    """Escaped for Plotly's HTML subset, wrapped so long titles fit the hover box."""
    from ui.latex import text_only
    from ui.render import without_bidi

    words, lines, line = text_only(without_bidi(text)).split(), [], ""
    for word in words:
        if line and len(line) + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "<br>".join(html.escape(part, quote=True) for part in lines if part)


def explorer(assistant: Assistant, compute: bool = True) -> Explorer | None:
    """The map of the index as it is now (computed if `compute`), or None.

    The chat never waits for a map to be computed: it uses one only when it is ready.
    """
    try:
        return _load_explorer(assistant, compute)
    except (StoreError, OSError, ValueError) as e:
        from ui.render import escape_message

        if compute:
            st.error(f"The topic map is not available: {escape_message(e)}")
        return None


# The Chat/Map switch ------------------------------------------------------------------------


def shown_view() -> str:
    """The view this run shows (a pending switch from a button included), before the switch
    is drawn: the page's layout depends on it."""
    pending = st.session_state.get("explore_switch")
    return str(pending if pending in VIEWS else st.session_state.get(VIEW_KEY, VIEWS[0]))


def view_switch() -> str:
    """Chat or Map, above the page; a pending switch (from a button) is applied first."""
    pending = st.session_state.pop("explore_switch", None)
    if pending in VIEWS:
        st.session_state[VIEW_KEY] = pending
    st.session_state.setdefault(VIEW_KEY, VIEWS[0])
    choice = st.segmented_control(
        "View",
        VIEWS,
        key=VIEW_KEY,
        label_visibility="collapsed",
        format_func=lambda v: {
            "Chat": ":material/chat: Chat",
            "Map": ":material/scatter_plot: Map",
        }[v],
    )
    return str(choice or VIEWS[0])


def switch_to(view: str, paper_id: str | None = None, turn_id: str | None = None) -> None:
    """A button callback: show `view` at the next run (optionally with a card open)."""
    st.session_state["explore_switch"] = view
    if paper_id is not None:
        st.session_state[PAPER_KEY] = paper_id
        st.session_state.pop("explore_highlighted", None)  # the card stays whatever is lit
    if turn_id is not None:
        st.session_state["explore_turn"] = turn_id


def highlight_of(answer: CitedAnswer | None) -> tuple[dict[str, int], set[str]]:
    """Cited paper id -> [n], and the retrieved papers that were not cited."""
    if answer is None:
        return {}, set()
    cited: dict[str, int] = {}
    for citation in answer.citations:
        cited.setdefault(citation.paper_id, citation.n)
    faint = {s.paper.id for s in answer.sources} - set(cited)
    return cited, faint
