"""Explore the conference beside the chat: the topic map, paper cards with related papers,
side-by-side comparison and BibTeX. Called from ui/app.py; only calls `rag`'s functions.

The map is a Plotly WebGL scatter shown with `st.plotly_chart(on_select="rerun")`, Streamlit's
own selection events: selecting a point opens that paper's card under the map. After an
answer, its cited papers are drawn large with their [n], the retrieved but uncited ones
outlined, everything else faint. Titles and abstracts are untrusted: hover text is HTML-escaped
(Plotly renders a subset of HTML there) and cards use `ui.render`'s Markdown escaping.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import streamlit as st

from rag.bibtex import bibtex
from rag.compare import MAX_PAPERS, CompareError, Comparison, compare_papers
from rag.loaders import Paper
from rag.related import RelatedPaper, related_papers
from rag.store import StoreError
from rag.topicmap import (
    PaperVectors,
    TopicMap,
    load_topic_map,
    map_path,
    read_cached_map,
    read_paper_vectors,
)
from ui.render import Turn, chat_markdown, escape_export, escape_text, safe_url, tier_badge

if TYPE_CHECKING:
    from rag.answer import Assistant, CitedAnswer

VIEWS = ["Chat", "Map"]
VIEW_KEY = "explore_view"
PAPER_KEY = "explore_paper"  # the paper whose card is open in the Map view
BASKET_KEY = "explore_basket"  # paper ids picked for comparison
COMPARISONS_KEY = "explore_comparisons"  # every table made in this chat, for the export
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


_lock = threading.Lock()
# (cache file, index generation) -> what was read or computed; sessions of a process share it.
_corpora: dict[tuple[str, str], PaperVectors] = {}
_explorers: dict[tuple[str, str], Explorer] = {}


def _key(assistant: Assistant) -> tuple[str, str]:
    index = assistant.retriever.index
    return str(map_path(index.settings)), index.current_generation()


def corpus_of(assistant: Assistant) -> PaperVectors:
    """Every paper with its vector, read once per index generation (about a second)."""
    key = _key(assistant)
    with _lock:
        if key not in _corpora:
            _corpora.clear()
            _corpora[key] = read_paper_vectors(assistant.retriever.index, key[1])
        return _corpora[key]


def _load_explorer(assistant: Assistant, compute: bool) -> Explorer | None:
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
    papers = [corpus.get(pid) for pid in topic_map.paper_ids]
    hover, tiers = [], []
    for paper, topic in zip(papers, topic_map.topics, strict=True):
        label = topic_map.topic_list[int(topic)].label
        title = paper.title if paper else "?"
        tier = (paper.tier or paper.decision or "decision unknown") if paper else ""
        hover.append(f"<b>{_hover(title)}</b><br>{_hover(tier)} · {_hover(label)}")
        tiers.append(paper.tier if paper else "")
    colours = [PALETTE[int(t) % len(PALETTE)] for t in topic_map.topics]
    return Explorer(topic_map, corpus, hover, colours, np.array(tiers))


def _hover(text: str, width: int = 70) -> str:
    """Escaped for Plotly's HTML subset, wrapped so long titles fit the hover box."""
    words, lines, line = text.split(), [], ""
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
        if compute:
            st.error(f"The topic map is not available: {escape_text(str(e))}")
        return None


# The view switch and hooks for the chat --------------------------------------------------


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
    if turn_id is not None:
        st.session_state["explore_turn"] = turn_id


def ask_about(paper: Paper) -> None:
    st.session_state["example"] = f'Summarize the paper "{paper.title}"'
    switch_to("Chat")


def show_map_view(assistant: Assistant | None, turns: list[Turn], prompt: str | None) -> bool:
    """Render the Map view if it is chosen; True when it was (the caller stops there).

    A question typed while the map is shown goes to the chat.
    """
    if st.session_state.get(VIEW_KEY) != "Map":
        return False
    if prompt:
        st.session_state["example"] = prompt
        switch_to("Chat")
        st.rerun()
    if assistant is None:
        return True
    found = explorer(assistant)
    if found is None:
        return True
    answered = [t for t in turns if t.answer is not None and t.answer.sources]
    turn = _highlighted_turn(answered)
    show_map(found, turn, list(st.session_state.get("tiers") or []))
    paper_id = st.session_state.get(PAPER_KEY)
    paper = found.corpus.get(paper_id) if paper_id else None
    if paper is not None:
        show_paper_card(found, paper, key="map")
    show_comparison_picker(found, assistant)
    return True


def _highlighted_turn(answered: list[Turn]) -> Turn | None:
    if not answered:
        return None
    wanted = st.session_state.get("explore_turn")
    labels = {t.id: f"{i}. {t.question[:80]}" for i, t in enumerate(answered, start=1)}
    ids = list(labels)
    default = ids.index(wanted) if wanted in ids else len(ids) - 1
    chosen = st.selectbox(
        "Highlight the papers of the answer to",
        ids,
        index=default,
        format_func=lambda i: labels[i],
        key="explore_turn_choice",
    )
    return next(t for t in answered if t.id == chosen)


# The map ------------------------------------------------------------------------------------


def highlight_of(answer: CitedAnswer | None) -> tuple[dict[str, int], set[str]]:
    """Cited paper id -> [n], and the retrieved papers that were not cited."""
    if answer is None:
        return {}, set()
    cited: dict[str, int] = {}
    for citation in answer.citations:
        cited.setdefault(citation.paper_id, citation.n)
    faint = {s.paper.id for s in answer.sources} - set(cited)
    return cited, faint


def map_figure(
    found: Explorer,
    tiers: Sequence[str] = (),
    cited: dict[str, int] | None = None,
    retrieved: Iterable[str] = (),
    selected: str | None = None,
) -> dict[str, Any]:
    """The scatter as a Plotly figure dict: topic colours, topic labels, cited papers with [n],
    retrieved ones outlined.

    A plain dict, not `plotly.graph_objects` (whose validation of thousands of points took
    most of the time); the points of a tier filter are built once and reused.
    """
    topic_map = found.topic_map
    cited = cited or {}
    retrieved = set(retrieved)
    base, show, indices = _base_trace(found, tuple(sorted(tiers)))
    highlighting = bool(cited or retrieved)
    data: list[dict[str, Any]] = [
        base | {"marker": base["marker"] | {"opacity": 0.25 if highlighting else 0.75}}
    ]
    xy = topic_map.xy
    for name, ids, size, opacity, edge in (
        ("retrieved, not cited", sorted(retrieved), 11, 0.6, "#888888"),
        ("cited", sorted(cited, key=lambda p: cited[p]), 15, 1.0, "#111111"),
    ):
        rows = [i for i in map(topic_map.position, ids) if i is not None and show[i]]
        if not rows:
            continue
        data.append(
            {
                "type": "scattergl",
                "x": xy[rows, 0].tolist(),
                "y": xy[rows, 1].tolist(),
                "mode": "markers",
                "marker": {
                    "size": size,
                    "color": [found.colours[i] for i in rows],
                    "opacity": opacity,
                    "line": {"width": 2, "color": edge},
                },
                "customdata": [topic_map.paper_ids[i] for i in rows],
                "hovertext": [
                    (f"<b>[{cited[topic_map.paper_ids[i]]}]</b> " if name == "cited" else "")
                    + found.hover[i]
                    for i in rows
                ],
                "hovertemplate": "%{hovertext}<extra></extra>",
                "name": name,
                "showlegend": True,
            }
        )
    annotations = list(_bases[(id(found), tuple(sorted(tiers)))][3])
    for rank, (pid, n) in enumerate(sorted(cited.items(), key=lambda item: item[1])):
        i = topic_map.position(pid)
        if i is not None and show[i]:
            annotations.append(_marker_label(xy[i], f"[{n}]", rank, bold=True))
    if selected is not None and (i := topic_map.position(selected)) is not None and show[i]:
        annotations.append(_marker_label(xy[i], "selected", len(cited), bold=False))
    layout = {
        "annotations": annotations,
        "height": 620,
        "margin": {"l": 0, "r": 0, "t": 10, "b": 0},
        "xaxis": {"visible": False},
        "yaxis": {"visible": False, "scaleanchor": "x"},
        "dragmode": "pan",
        "clickmode": "event+select",
        "legend": {"orientation": "h", "y": -0.02},
        "hoverlabel": {"align": "left"},
    }
    return {"data": data, "layout": layout}


_bases: dict[tuple[int, tuple[str, ...]], Any] = {}


def _base_trace(
    found: Explorer, tiers: tuple[str, ...]
) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Every paper of these tiers as one WebGL trace, built once per map and filter."""
    key = (id(found), tiers)
    if key not in _bases:
        topic_map = found.topic_map
        show = np.isin(found.tiers, list(tiers)) if tiers else np.ones(len(topic_map), bool)
        indices = np.flatnonzero(show)
        # NumPy arrays and numeric colours (topic ids on a stepped colour scale): Streamlit
        # validates the figure, and arrays of strings or lists are checked item by item.
        k = max(len(topic_map.topic_list), 1)
        steps = []
        for t in range(k):
            colour = PALETTE[t % len(PALETTE)]
            steps += [[t / k, colour], [(t + 1) / k, colour]]
        trace = {
            "type": "scattergl",
            "x": topic_map.xy[indices, 0],
            "y": topic_map.xy[indices, 1],
            "mode": "markers",
            "marker": {
                "size": 5,
                "color": topic_map.topics[indices].astype(np.float32) + 0.5,
                "colorscale": steps,
                "cmin": 0,
                "cmax": k,
            },
            "customdata": np.array(topic_map.paper_ids, dtype=object)[indices],
            "hovertext": np.array(found.hover, dtype=object)[indices],
            "hovertemplate": "%{hovertext}<extra></extra>",
            "name": "papers",
            "showlegend": False,
        }
        if len(_bases) > 16:
            _bases.clear()
        _bases[key] = (trace, show, indices, _topic_annotations(found, indices))
    trace, show, indices, _ = _bases[key]
    return trace, show, indices


def _topic_annotations(found: Explorer, indices: np.ndarray) -> list[dict[str, Any]]:
    """Each topic's label at the middle of its papers (median, so strays do not pull it)."""
    topic_map = found.topic_map
    shown = topic_map.topics[indices]
    notes = []
    for topic in topic_map.topic_list:
        members = indices[shown == topic.id]
        if len(members) < max(3, len(indices) // 400):
            continue
        x, y = np.median(topic_map.xy[members], axis=0)
        notes.append(
            {
                "x": float(x),
                "y": float(y),
                "text": html.escape(topic.label),
                "showarrow": False,
                "font": {"size": 11, "color": "#222222"},
                "bgcolor": "rgba(255,255,255,0.65)",
            }
        )
    return notes


# Where the labels of neighbouring highlighted points go, in turn, so they do not overlap.
_OFFSETS = [(18, -22), (-18, 22), (22, 18), (-22, -18), (0, -30), (0, 30), (30, 0), (-30, 0)]


def _marker_label(point: np.ndarray, text: str, rank: int, bold: bool) -> dict[str, Any]:
    ax, ay = _OFFSETS[rank % len(_OFFSETS)]
    return {
        "x": float(point[0]),
        "y": float(point[1]),
        "text": f"<b>{text}</b>" if bold else text,
        "showarrow": True,
        "arrowhead": 0,
        "ax": ax,
        "ay": ay,
        "font": {"size": 14 if bold else 11, "color": "#000000"},
        "bgcolor": "rgba(255,255,255,0.85)",
    }


def show_map(found: Explorer, turn: Turn | None, tiers: list[str]) -> None:
    answer = turn.answer if turn else None
    cited, retrieved = highlight_of(answer)
    fig = map_figure(found, tiers, cited, retrieved, st.session_state.get(PAPER_KEY))
    topics = {found.topic_map.topic_of(pid) for pid in cited}
    shown = int(np.isin(found.tiers, tiers).sum()) if tiers else len(found.topic_map)
    caption = f"{shown:,} papers in {len(found.topic_map.topic_list)} topics"
    if tiers:
        caption += f" ({', '.join(tiers)})"
    if cited:
        caption += (
            f" · the answer cites {len(cited)} paper(s) from {len(topics - {None})} topic(s); "
            "retrieved but uncited papers are outlined"
        )
    st.caption(caption + ". Select a point to open its card.")
    event = st.plotly_chart(
        fig,
        key="explore_map",
        on_select="rerun",
        selection_mode="points",
        config={"scrollZoom": True, "displaylogo": False},
    )
    picked = _picked(event)
    if picked and picked != st.session_state.get("explore_picked"):
        # A new selection opens its card; a card opened otherwise stays until then.
        st.session_state["explore_picked"] = picked
        st.session_state[PAPER_KEY] = picked
        st.rerun()
    _paper_finder(found)


def _picked(event: Any) -> str | None:
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in points or []:
        data = point.get("customdata")
        pid = data[0] if isinstance(data, list | tuple) else data
        if isinstance(pid, str):
            return pid
    return None


def _paper_finder(found: Explorer) -> None:
    """Open a card by title too (typing is faster than finding a point)."""
    corpus = found.corpus
    options = [p.id for p in sorted(corpus.papers, key=lambda p: p.title.lower())]
    current = st.session_state.get(PAPER_KEY)
    st.selectbox(
        "Open a paper",
        options,
        index=options.index(current) if current in options else None,
        format_func=lambda pid: (corpus.get(pid) or Paper(pid, pid, "")).title,
        placeholder="Type a title…",
        key="explore_finder",
        on_change=_open_found,
    )


def _open_found() -> None:
    pid = st.session_state.get("explore_finder")
    if pid:
        st.session_state[PAPER_KEY] = pid


# Cards, related papers, BibTeX, comparison ---------------------------------------------------


def show_paper_card(found: Explorer, paper: Paper, key: str) -> None:
    """Title, tier, link, topic, abstract, related papers and what to do with the paper."""
    with st.container(border=True, key=f"paper-card-{key}"):
        st.subheader(escape_text(paper.title), anchor=False)
        url = safe_url(paper.url)
        facts = [tier_badge(paper.tier) or escape_text(paper.decision or "Decision unknown")]
        facts.append(f"[OpenReview]({url})" if url else "no OpenReview link")
        topic = found.topic_map.topic_of(paper.id)
        if topic is not None:
            facts.append(f"topic: {escape_text(topic.label)}")
        st.markdown(" · ".join(facts))
        st.markdown(escape_text(paper.abstract))
        ask, add, download = st.columns(3)
        ask.button(
            "Ask about this paper",
            key=f"ask-{key}-{paper.id}",
            icon=":material/chat:",
            on_click=ask_about,
            args=(paper,),
        )
        basket: list[str] = st.session_state.setdefault(BASKET_KEY, [])
        add.button(
            "In comparison" if paper.id in basket else "Add to comparison",
            key=f"add-{key}-{paper.id}",
            icon=":material/compare_arrows:",
            on_click=toggle_basket,
            args=(paper.id,),
            disabled=paper.id not in basket and len(basket) >= MAX_PAPERS,
        )
        download.download_button(
            "Download BibTeX",
            data=bibtex([paper]),
            file_name=f"{paper.id}.bib",
            mime="application/x-bibtex",
            on_click="ignore",
            key=f"bib-{key}-{paper.id}",
            icon=":material/download:",
        )
        show_related(found, paper.id, key)


def show_related(found: Explorer, paper_id: str, key: str) -> None:
    """The 5 nearest papers by paper vector; each opens its card in the Map view."""
    related = related_papers(found.corpus, paper_id)
    if not related:
        return
    st.markdown("**Related papers**")
    for rank, r in enumerate(related, start=1):
        _related_button(r, f"related-{key}-{paper_id}-{rank}", f"similarity {r.similarity:.2f}")


def _related_button(related: RelatedPaper, key: str, help: str | None = None) -> None:
    """One related paper as a link-like button that opens its card on the map."""
    tier = f" · {escape_text(related.paper.tier)}" if related.paper.tier else ""
    st.button(
        f"{escape_text(related.paper.title)}{tier}",
        key=key,
        type="tertiary",
        icon=":material/article:",
        on_click=switch_to,
        args=("Map", related.paper.id),
        help=help,
    )


def toggle_basket(paper_id: str) -> None:
    basket: list[str] = st.session_state.setdefault(BASKET_KEY, [])
    if paper_id in basket:
        basket.remove(paper_id)
    elif len(basket) < MAX_PAPERS:
        basket.append(paper_id)


def show_comparison_picker(found: Explorer, assistant: Assistant) -> None:
    basket: list[str] = [
        pid for pid in st.session_state.setdefault(BASKET_KEY, []) if found.corpus.get(pid)
    ]
    st.markdown("**Compare papers**")
    if len(basket) < 2:
        st.caption(
            "Add 2 to 4 papers with “Add to comparison” on their cards, or use “Compare the "
            "cited papers” under an answer."
        )
    else:
        names = ", ".join(
            escape_text((found.corpus.get(p) or Paper(p, p, "")).title) for p in basket
        )
        st.caption(f"Chosen: {names}")
        left, right = st.columns(2)
        if left.button("Compare", key="compare-basket", type="primary", icon=":material/table:"):
            papers = [p for p in map(found.corpus.get, basket) if p is not None]
            make_comparison(papers, assistant, key="basket")
        right.button("Clear", key="compare-clear", on_click=st.session_state[BASKET_KEY].clear)
    for comparison in st.session_state.get(COMPARISONS_KEY, {}).get("basket", [])[-1:]:
        show_comparison(comparison)


def make_comparison(papers: list[Paper], assistant: Assistant, key: str) -> None:
    """Build the table (offline or with the chat's model) and keep it for the chat export."""
    try:
        with st.spinner("Comparing…"):
            table = compare_papers(
                papers,
                chat_model=assistant.chat_model,
                embeddings=assistant.sentence_embeddings,
                model_name=assistant.model,
            )
    except CompareError as e:
        st.error(escape_text(str(e)))
        return
    st.session_state.setdefault(COMPARISONS_KEY, {}).setdefault(key, []).append(table)


def show_comparison(table: Comparison) -> None:
    """One column per paper, a row per aspect; every cell escaped, [n] kept as text."""
    header = "| | " + " | ".join(
        f"\\[{n}\\] {escape_text(p.title)}" for n, p in enumerate(table.papers, start=1)
    )
    lines = [header + " |", "|---|" + "---|" * len(table.papers)]
    for row in table.rows:
        cells = " | ".join(escape_text(c.text) or "–" for c in row.cells)
        lines.append(f"| **{row.label}** | {cells} |")
    with st.container(border=True, key=f"comparison-{id(table)}"):
        st.markdown("\n".join(lines))
        note = f"Compared by {escape_text(table.model)}"
        if table.dropped_citations:
            note += f" · {table.dropped_citations} citation(s) to other papers were removed"
        st.caption(note)


def answer_tools(turn: Turn, turn_index: int, assistant: Assistant | None) -> None:
    """Under an answer: its topics, "Show on map", "Compare the cited papers", BibTeX."""
    answer = turn.answer
    if answer is None or not answer.sources or assistant is None:
        return
    found = explorer(assistant, compute=False)
    cited, _ = highlight_of(answer)
    by_topic: dict[str, list[int]] = {}
    for pid, n in sorted(cited.items(), key=lambda item: item[1]):
        topic = found.topic_map.topic_of(pid) if found else None
        if topic is not None:
            by_topic.setdefault(topic.label, []).append(n)
    if by_topic:
        st.caption(
            "Topics: "
            + " · ".join(
                f"{escape_text(label)} " + "".join(f"\\[{n}\\]" for n in ns)
                for label, ns in by_topic.items()
            )
        )
    papers = [s.paper for s in answer.sources if s.paper.id in cited]
    # With one paper cited, compare it with the next sources (there is nothing else to set
    # it against).
    compared, label = papers[:MAX_PAPERS], "Compare the cited papers"
    if len(compared) < 2:
        others = [s.paper for s in answer.sources if s.paper.id not in cited]
        compared, label = (compared + others)[:3], "Compare the top sources"
    show, compare, download = st.columns(3)
    show.button(
        "Show on map",
        key=f"show-map-{turn.id}",
        icon=":material/scatter_plot:",
        on_click=switch_to,
        args=("Map", None, turn.id),
    )
    if len(compared) >= 2 and compare.button(
        label, key=f"compare-{turn.id}", icon=":material/table:"
    ):
        make_comparison(compared, assistant, key=turn.id)
    if papers:
        download.download_button(
            "Download BibTeX",
            data=bibtex(papers),
            file_name=f"iclr2025-answer-{turn_index + 1}.bib",
            mime="application/x-bibtex",
            on_click="ignore",
            key=f"bib-answer-{turn.id}",
            icon=":material/download:",
        )
    for table in st.session_state.get(COMPARISONS_KEY, {}).get(turn.id, [])[-1:]:
        show_comparison(table)


def related_in_card(assistant: Assistant | None, paper_id: str, key: str) -> None:
    """The related papers inside a source card of the chat."""
    if assistant is None:
        return
    try:
        corpus = corpus_of(assistant)
    except (StoreError, OSError):
        return
    # A popover, not an expander: the card's one expander is its abstract.
    with st.popover("Related papers", icon=":material/hub:"):
        show_related_compact(corpus, paper_id, key)


def show_related_compact(corpus: PaperVectors, paper_id: str, key: str) -> None:
    for rank, r in enumerate(related_papers(corpus, paper_id), start=1):
        _related_button(r, f"related-{key}-{rank}")


def cited_papers(turns: Iterable[Turn]) -> list[Paper]:
    """Every paper cited in the chat, in order of first citation."""
    papers: dict[str, Paper] = {}
    for turn in turns:
        answer = turn.answer
        if answer is None:
            continue
        for citation in answer.citations:
            if 1 <= citation.n <= len(answer.sources):
                paper = answer.sources[citation.n - 1].paper
                papers.setdefault(paper.id, paper)
    return list(papers.values())


def sidebar_bibtex(turns: list[Turn]) -> None:
    papers = cited_papers(turns)
    st.download_button(
        "Download BibTeX",
        data=bibtex(papers) if papers else "",
        file_name="iclr2025-cited.bib",
        mime="application/x-bibtex",
        on_click="ignore",
        disabled=not papers,
        icon=":material/menu_book:",
        width="stretch",
        help="BibTeX entries of every paper cited in this chat",
        key="bib-chat",
    )


def chat_export(turns: list[Turn]) -> str:
    """The chat as Markdown, then the comparison tables made in it."""
    text = chat_markdown(turns)
    tables = [t for ts in st.session_state.get(COMPARISONS_KEY, {}).values() for t in ts]
    if not tables:
        return text
    parts = [text.rstrip(), "", "## Comparisons", ""]
    for i, table in enumerate(tables, start=1):
        parts += [f"### Comparison {i}", "", table.markdown(escape_export), ""]
        parts += [f"*Compared by {escape_export(table.model)}.*", ""]
    return "\n".join(parts).rstrip() + "\n"
