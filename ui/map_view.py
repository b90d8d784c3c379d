"""The Map view: the topic map as a Plotly SVG scatter, with the paper cards under it.

Shown with `st.plotly_chart(on_select="rerun")`, Streamlit's own selection events: selecting a
point opens that paper's card under the map. After an answer, its cited papers are drawn large
with their [n], the retrieved but uncited ones outlined, everything else faint.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import streamlit as st

from rag.errors import StoreError
from ui.explore import PALETTE, PAPER_KEY, VIEW_KEY, Explorer, explorer, highlight_of, switch_to
from ui.map_labels import (
    CITED_RADIUS,
    PLOT_HEIGHT,
    Frame,
    Placer,
    frame_of,
    nearest_within,
)
from ui.papers_view import show_comparison_picker, show_paper_card
from ui.render import ASK_PLACEHOLDER, Turn, without_bidi

if TYPE_CHECKING:
    from rag import Assistant

# SVG, not WebGL ("scattergl"): for 2,123 points SVG draws sooner, and a browser without a GPU
# (headless Chromium, many laptops' VMs) runs WebGL in software: a full map took 2.9-3.4 s to
# draw as scattergl and 1.6-2.8 s as scatter at load 8, and each new WebGL plot pays again.
TRACE = "scatter"


def show_map_view(assistant: Assistant | None, turns: list[Turn], slot: Any = None) -> bool:
    """Render the Map view if it is chosen; True when it was (the caller stops there).

    A question typed while the map is shown goes to the chat. `slot` (in the sidebar) gets
    the choice of the answer to highlight.
    """
    if st.session_state.get(VIEW_KEY) != "Map":
        return False
    # The page's bottom holds nothing here (app.py empties it): no strip over the map's foot.
    st.html('<style>[data-testid="stBottom"] { display: none; }</style>')
    if assistant is None:
        return True
    found = explorer(assistant)
    if found is None:
        return True
    answered = [t for t in turns if t.answer is not None and t.answer.sources]
    with slot or st.sidebar:  # out of the way: the map starts high on a laptop's screen
        turn = _highlighted_turn(answered)
    show_map(found, turn, list(st.session_state.get("tiers") or []))
    # In the page under the map, not floating over the plot's bottom.
    if asked := st.container().chat_input(ASK_PLACEHOLDER):
        st.session_state["example"] = asked
        switch_to("Chat")
        st.rerun()
    paper_id = st.session_state.get(PAPER_KEY)
    paper = found.corpus.get(paper_id) if paper_id else None
    if paper is not None:
        show_paper_card(found, paper, key="map")
    show_comparison_picker(found, assistant)
    return True


def preload_map(assistant: Assistant | None) -> None:
    """Ready the first Map view while the chat is read: the browser's Plotly code
    (`preload_map_scripts`) and, in a thread, the map of the index (reading every paper's
    vector, about 2 s), unless already read for this index generation."""
    preload_map_scripts()
    if assistant is None:
        return
    try:
        generation = assistant.retriever.index.current_generation()
    except StoreError:
        return
    with _warm_lock:
        if generation in _warmed:
            return
        _warmed.add(generation)
    # compute=False: never computes a map, never draws (no Streamlit call from the thread).
    threading.Thread(target=explorer, args=(assistant, False), daemon=True).start()


_warm_lock = threading.Lock()
_warmed: set[str] = set()  # index generations whose map a thread has read


def preload_map_scripts() -> None:
    """A one-point chart out of sight at the end of the chat, so the browser fetches and runs
    Streamlit's Plotly code (a 4.7 MB chunk it loads at the first chart) while the chat is read,
    not when Map or "Show on map" is clicked: running it was most of a first Map view (12 of
    16 s in headless Chromium at load 8; building the figure took 0.01 s, the server 2 s)."""
    st.html("<style>.st-key-map-preload { display: none; }</style>")
    with st.container(key="map-preload"):
        st.plotly_chart(
            {"data": [{"type": "scatter", "x": [0], "y": [0]}], "layout": {"height": 40}},
            key="map-preload-chart",
            config={"staticPlot": True, "displayModeBar": False},
        )


def _highlighted_turn(answered: list[Turn]) -> Turn | None:
    """The answer whose papers are highlighted: the one "Show on map" named, else the one
    chosen, else the last. Another answer closes the card of the last one's paper."""
    if not answered:
        return None
    labels = {t.id: f"{i}. {t.question[:80]}" for i, t in enumerate(answered, start=1)}
    ids = list(labels)
    wanted = st.session_state.pop("explore_turn", None)
    if wanted in ids:  # the box would keep its own choice otherwise
        st.session_state["explore_turn_choice"] = wanted
    elif st.session_state.get("explore_turn_choice") not in ids:
        st.session_state["explore_turn_choice"] = ids[-1]
    chosen = st.selectbox(
        "Highlight the papers of the answer to",
        ids,
        format_func=lambda i: labels[i],
        key="explore_turn_choice",
    )
    if st.session_state.get("explore_highlighted") not in (None, chosen):
        st.session_state.pop(PAPER_KEY, None)
    st.session_state["explore_highlighted"] = chosen
    return next(t for t in answered if t.id == chosen)


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
    most of the time); the points of a tier filter are built once and reused, and only the
    highlight and the labels are made per answer. No label covers another (`ui.map_labels`).
    """
    topic_map = found.topic_map
    cited = cited or {}
    retrieved = set(retrieved)
    base = _base_trace(found, tuple(sorted(tiers)))
    show, frame = base.show, base.frame
    highlighting = bool(cited or retrieved)
    data: list[dict[str, Any]] = [
        base.trace | {"marker": base.trace["marker"] | {"opacity": 0.25 if highlighting else 0.75}}
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
                "type": TRACE,
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
    # Answer labels first (each at a free offset around its point), then the topic labels
    # that cover nothing; drawn in that order reversed, so an answer label is on top.
    placer = Placer(frame)
    marked = [
        (i, f"[{n}]")
        for pid, n in sorted(cited.items(), key=lambda item: item[1])
        if (i := topic_map.position(pid)) is not None and show[i]
    ]
    if selected is not None and (i := topic_map.position(selected)) is not None and show[i]:
        marked.append((i, "selected"))
    for i, _ in marked:
        placer.block_point(float(xy[i, 0]), float(xy[i, 1]), CITED_RADIUS)
    answer_notes = []
    for i, text in marked:
        bold = text != "selected"
        size = 14 if bold else 11
        ax, ay = placer.place_marker_label(float(xy[i, 0]), float(xy[i, 1]), text, size)
        answer_notes.append(_marker_label(xy[i], text, ax, ay, bold))
    topic_notes = [
        note
        for note in base.topic_notes
        if placer.place_centred(note["x"], note["y"], note["text"], 11)
    ]
    layout = {
        "annotations": topic_notes + answer_notes,
        "height": PLOT_HEIGHT,
        "margin": {"l": 0, "r": 0, "t": 4, "b": 0},
        "xaxis": {"visible": False, "range": list(frame.x_range)},
        "yaxis": {"visible": False, "range": list(frame.y_range)},
        "dragmode": "pan",
        "clickmode": "event+select",
        "legend": {"orientation": "h", "y": 0, "yanchor": "top", "x": 0},
        "hoverlabel": {"align": "left"},
    }
    return {"data": data, "layout": layout}


@dataclass(frozen=True)
class _Base:
    """What every highlight of one map and filter shares."""

    trace: dict[str, Any]
    show: np.ndarray  # which map points the filter shows
    frame: Frame  # the axis ranges of the shown points
    topic_notes: list[dict[str, Any]]  # topic labels, largest topic first


# (map generation, paper-vector generation, tiers) -> the points and topic labels.
# Keyed by the index generation, never by id(): CPython gives a new explorer the id of a freed
# one, so after a re-ingest an id key could serve the old map's points.
_bases: dict[tuple[str, str, tuple[str, ...]], _Base] = {}


def _base_trace(found: Explorer, tiers: tuple[str, ...]) -> _Base:
    """Every paper of these tiers as one trace, with which points it shows and the topic
    labels; built once per index generation and filter (a map without a generation, never
    stored, each time)."""
    generation = found.topic_map.generation
    key = (generation, found.corpus.generation, tiers)
    cached = _bases.get(key) if generation else None
    if cached is None:
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
            "type": TRACE,
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
        frame = frame_of(topic_map.xy[indices])
        cached = _Base(trace, show, frame, _topic_annotations(found, indices))
        if generation:
            if len(_bases) > 16:
                _bases.clear()
            _bases[key] = cached
    return cached


def _topic_annotations(found: Explorer, indices: np.ndarray) -> list[dict[str, Any]]:
    """Each topic's label (its first two terms; hover shows all) at the middle of its papers
    (median, so strays do not pull it), largest topic first: the first to get a place."""
    topic_map = found.topic_map
    shown = topic_map.topics[indices]
    notes: list[tuple[int, dict[str, Any]]] = []
    for topic in topic_map.topic_list:
        members = indices[shown == topic.id]
        if len(members) < max(3, len(indices) // 400):
            continue
        x, y = np.median(topic_map.xy[members], axis=0)
        label = ", ".join(without_bidi(topic.label).split(", ")[:2])
        notes.append(
            (
                -len(members),
                {
                    "x": float(x),
                    "y": float(y),
                    "text": html.escape(label),
                    "showarrow": False,
                    "font": {"size": 11, "color": "#222222"},
                    "bgcolor": "rgba(255,255,255,0.7)",
                    "hovertext": html.escape(without_bidi(topic.label)),
                },
            )
        )
    notes.sort(key=lambda item: item[0])
    return [note for _, note in notes]


def _marker_label(point: np.ndarray, text: str, ax: int, ay: int, bold: bool) -> dict[str, Any]:
    return {
        "x": float(point[0]),
        "y": float(point[1]),
        "text": f"<b>{text}</b>" if bold else text,
        "showarrow": True,
        "arrowhead": 0,
        "ax": ax,
        "ay": ay,
        "font": {"size": 14 if bold else 11, "color": "#000000"},
        "bgcolor": "rgba(255,255,255,0.9)",
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
    # Keyed by the chat and the highlighted answer: a selection belongs to one of them, so a
    # new chat or another answer starts with none.
    chart_key = f"explore_map-{st.session_state.get('session_id', '')}-{turn.id if turn else ''}"
    with st.container(key="map-box"):
        event = st.plotly_chart(
            fig,
            key=chart_key,
            on_select="rerun",
            selection_mode="points",
            config={"scrollZoom": True, "displaylogo": False, "responsive": True},
        )
    picked = _picked(event, found, fig, _base_trace(found, tuple(sorted(tiers))).frame)
    if picked and picked != st.session_state.get("explore_picked"):
        # A new selection opens its card; a card opened otherwise stays until then.
        st.session_state["explore_picked"] = picked
        st.session_state[PAPER_KEY] = picked
        st.rerun()
    _paper_finder(found)


def _picked(event: Any, found: Explorer, fig: dict[str, Any], frame: Frame) -> str | None:
    """The paper a click or tap meant: the selected point, or the highlighted (cited or
    retrieved) paper whose marker is within a finger's reach of it (a tap on a cited point
    often lands on a faint neighbour drawn under it)."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in points or []:
        data = point.get("customdata")
        pid = data[0] if isinstance(data, list | tuple) else data
        if not isinstance(pid, str):
            continue
        i = found.topic_map.position(pid)
        highlighted = [t for t in fig["data"][1:] if t.get("customdata")]
        if i is None or any(pid in t["customdata"] for t in highlighted):
            return pid
        ids = [c for t in reversed(highlighted) for c in t["customdata"]]
        xy = found.topic_map.xy
        rows = [found.topic_map.position(c) for c in ids]
        near = nearest_within(
            frame,
            (float(xy[i, 0]), float(xy[i, 1])),
            [(float(xy[r, 0]), float(xy[r, 1])) for r in rows if r is not None],
        )
        return ids[near] if near is not None else pid
    return None


def _paper_finder(found: Explorer) -> None:
    """Open a card by title too (typing is faster than finding a point). The box always
    names the card that is open, however it was opened."""
    titles = found.finder
    current = st.session_state.get(PAPER_KEY)
    st.session_state["explore_finder"] = current if current in titles else None
    st.selectbox(
        "Open a paper",
        list(titles),
        format_func=lambda pid: titles.get(pid, pid),
        placeholder="Type a title…",
        key="explore_finder",
        on_change=_open_found,
    )


def _open_found() -> None:
    pid = st.session_state.get("explore_finder")
    if pid:
        st.session_state[PAPER_KEY] = pid
