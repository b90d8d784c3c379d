"""The Map view, paper cards, comparison and BibTeX in the Streamlit app, driven by AppTest over
a real index of 24 real papers (offline answerer). The browser test is test_explore_browser.py.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from rag.explore.compare import Cell, Comparison, Row
from rag.explore.topicmap import Topic, TopicMap
from rag.index.vectors import PaperVectors
from rag.types import Paper
from tests.test_ui_apptest import (  # noqa: F401 (fixtures)
    DARK_QUESTION,
    DARKBENCH,
    EVAL_QUESTION,
    app_env,
    ask,
    corpus_file,
    index_dir,
    plain,
    start,
    turns,
)
from ui.explore import CHAT_KEYS, COMPARISONS_KEY, Explorer, make_explorer
from ui.map_labels import AREA_HEIGHT, MIN_WIDTH, Frame, overlaps, text_box
from ui.map_view import _base_trace, _picked, map_figure
from ui.papers_view import chat_export, reference_numbers


def figure(at: AppTest) -> dict[str, Any]:
    [chart] = at.get("plotly_chart")
    return json.loads(chart.proto.spec)


def traces(at: AppTest) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in figure(at)["data"]}


def button(at: AppTest, label: str) -> Any:
    return next(b for b in at.button if b.label == label)


def show_on_map(at: AppTest) -> AppTest:
    button(at, "Show on map").click().run()
    assert not at.exception, at.exception
    return at


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_the_map_highlights_the_answers_papers() -> None:
    at = start()
    # The first Map view computes the map (with a progress bar); the chat never waits for it.
    at.segmented_control[0].set_value("Map").run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    at.segmented_control[0].set_value("Chat").run()
    ask(at, DARK_QUESTION)
    [turn] = turns(at)
    answer = turn.answer
    assert answer is not None
    cited = {c.paper_id: c.n for c in answer.citations}
    assert cited[DARKBENCH] == 1
    # Under the answer: the topics the cited papers come from.
    captions = " ".join(c.value for c in at.chat_message[1].caption)
    assert "Topics: " in captions and "\\[1\\]" in captions

    show_on_map(at)
    assert at.segmented_control[0].value == "Map"
    assert not at.chat_message  # the map replaces the chat; the chat input stays
    assert len(at.chat_input) == 1
    shown = traces(at)
    assert len(shown["papers"]["customdata"]) == 24
    assert shown["cited"]["customdata"] == sorted(cited, key=lambda p: cited[p])
    assert "[1]</b>" in shown["cited"]["hovertext"][0]
    assert "DarkBench" in shown["cited"]["hovertext"][0]
    uncited = {s.paper.id for s in answer.sources} - set(cited)
    assert set(shown["retrieved, not cited"]["customdata"]) == uncited
    assert shown["papers"]["marker"]["opacity"] < shown["cited"]["marker"]["opacity"]
    notes = [a["text"] for a in figure(at)["layout"]["annotations"]]
    assert "<b>[1]</b>" in notes
    assert len([n for n in notes if not n.startswith("<b>")]) >= 2  # topic labels
    caption = " ".join(c.value for c in at.caption)
    assert "24 papers in" in caption and f"cites {len(cited)} paper(s)" in caption

    # The decision filter applies to the map.
    at.sidebar.multiselect[0].set_value(["Oral"]).run()
    shown = traces(at)
    assert len(shown["papers"]["customdata"]) == 8
    assert shown["cited"]["customdata"] == [DARKBENCH]  # DarkBench is an Oral

    # A question typed on the map goes to the chat.
    at.chat_input[0].set_value(EVAL_QUESTION).run()
    at.run()
    assert not at.exception
    assert at.segmented_control[0].value == "Chat"
    assert [t.question for t in turns(at)] == [DARK_QUESTION, EVAL_QUESTION]


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_a_paper_card_has_related_papers_and_asks_about_the_paper() -> None:
    at = start()
    at.segmented_control[0].set_value("Map").run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    finder = next(s for s in at.selectbox if s.label == "Open a paper")
    finder.set_value(DARKBENCH).run()
    card = at.get_by_key("paper-card-map")
    assert plain(card.subheader[0].value).startswith("DarkBench: Benchmarking Dark Patterns")
    text = " ".join(m.value for m in card.markdown)
    assert ":red-badge[Oral]" in text and f"(https://openreview.net/forum?id={DARKBENCH})" in text
    assert "topic: " in text and "We introduce DarkBench" in plain(text)
    related = [b for b in card.button if b.key and b.key.startswith("related-map-")]
    assert len(related) == 5
    # The selected paper is marked on the map.
    assert "selected" in [a["text"] for a in figure(at)["layout"]["annotations"]]

    related[0].click().run()
    card = at.get_by_key("paper-card-map")
    opened = plain(card.subheader[0].value)
    assert opened == plain(related[0].label).rsplit(" · ", 1)[0]

    button(at, "Ask about this paper").click().run()
    at.run()
    assert at.segmented_control[0].value == "Chat"
    [turn] = turns(at)
    assert turn.question == f'Summarize the paper "{opened}"'
    assert turn.answer is not None and turn.answer.citations
    assert turn.answer.sources[turn.answer.citations[0].n - 1].paper.title == opened
    # Issue 20, item 5: answered from that paper alone, no other paper brought in.
    assert [s.paper.title for s in turn.answer.sources] == [opened]


def compared_papers(answer: Any) -> tuple[str, list[str]]:
    """The comparison button under an answer and the papers it compares: the cited ones, or,
    with one paper cited, that paper and the next sources."""
    cited = [
        s.paper.id for s in answer.sources if s.paper.id in {c.paper_id for c in answer.citations}
    ]
    if len(cited) >= 2:
        return "Compare the cited papers", cited[:4]
    others = [s.paper.id for s in answer.sources if s.paper.id not in cited]
    return "Compare the top sources", (cited + others)[:3]


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_comparing_the_cited_papers_shows_a_table_of_quotes() -> None:
    at = start()
    ask(at, EVAL_QUESTION)
    answer = turns(at)[0].answer
    assert answer is not None
    cited_ids = {c.paper_id for c in answer.citations}
    label, wanted = compared_papers(answer)
    button(at, label).click().run()
    assert not at.exception
    # The button asks its label about this answer (issue 31): one path with typing it.
    assert [t.question for t in turns(at)] == [EVAL_QUESTION, label]
    assert turns(at)[1].answer is not None and turns(at)[1].answer.compare
    [tables] = at.session_state["explore_comparisons"].values()
    table = tables[-1]
    cited = [s.paper.id for s in answer.sources if s.paper.id in cited_ids]
    cited += [s.paper.id for s in answer.sources if s.paper.id not in cited_ids]
    assert [p.id for p in table.papers] == wanted
    shown = next(m.value for m in at.chat_message[3].markdown if "**Problem**" in m.value)
    for row in table.rows:
        assert f"**{row.label}**" in shown
        for cell, paper in zip(row.cells, table.papers, strict=True):
            assert not cell.text or cell.quote in paper.abstract
    captions = " ".join(plain(c.value) for c in at.chat_message[3].caption)
    assert "Compared by offline:extractive" in captions

    # Cards from the map add papers to a comparison too.
    at.segmented_control[0].set_value("Map").run()
    finder = next(s for s in at.selectbox if s.label == "Open a paper")
    for pid in cited[:2]:
        finder.set_value(pid).run()
        button(at, "Add to comparison").click().run()
    button(at, "Compare").click().run()
    assert not at.exception
    basket = at.session_state["explore_comparisons"]["basket"][-1]
    assert [p.id for p in basket.papers] == cited[:2]
    assert any("**Approach**" in m.value for m in at.markdown)


def test_hover_text_and_labels_are_escaped() -> None:
    hostile = Paper(
        id="x1",
        title="<script>alert(1)</script> & <img src=x onerror=alert(2)>",
        abstract="An abstract.",
        decision="Accept (Oral)",
    )
    others = [Paper(id=f"x{i}", title="Plain", abstract="Another.") for i in (2, 3)]
    corpus = PaperVectors([hostile, *others], np.eye(3, dtype=np.float32))
    topic_map = TopicMap(
        ["x1", "x2", "x3"],
        np.array([[0, 0], [1, 1], [1, 0]], dtype=np.float32),
        np.array([0, 0, 0]),
        [Topic(0, "<b>bold</b> label", 3)],
    )
    found = make_explorer(topic_map, corpus)
    hover = found.hover[0]
    assert "<script>" not in hover and "<img" not in hover
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(2)&gt;" in hover
    assert "&lt;b&gt;bold&lt;/b&gt; label" in hover
    fig = map_figure(found, cited={"x1": 1})
    notes = [a["text"] for a in fig["layout"]["annotations"]]
    assert "&lt;b&gt;bold&lt;/b&gt; label" in notes and "<b>[1]</b>" in notes


def test_the_figure_cache_follows_the_index_generation_not_the_object_id() -> None:
    """A re-ingest makes a new explorer; CPython often gives it the freed one's id(). The base
    trace is cached per generation, so the new map always shows its own papers."""

    def explorer_of(ids: list[str], generation: str) -> Any:
        papers = [Paper(id=pid, title=f"Paper {pid}", abstract="An abstract.") for pid in ids]
        xy = np.arange(2 * len(ids), dtype=np.float32).reshape(-1, 2)
        topic_map = TopicMap(ids, xy, np.zeros(len(ids), int), [Topic(0, "one", len(ids))])
        topic_map.generation = generation
        corpus = PaperVectors(papers, np.eye(len(ids), dtype=np.float32), generation)
        return make_explorer(topic_map, corpus)

    def shown(fig: dict[str, Any]) -> list[str]:
        return list(fig["data"][0]["customdata"])

    first = explorer_of(["a1", "a2", "a3"], "generation-1")
    before = map_figure(first)
    assert shown(before) == ["a1", "a2", "a3"]
    again = explorer_of(["a1", "a2", "a3"], "generation-1")  # same index: the cached trace
    assert map_figure(again)["data"][0]["customdata"] is before["data"][0]["customdata"]
    # The re-ingested index's explorer, allocated right after the old one is freed: CPython
    # hands it the freed id (an id-keyed cache served the old trace here).
    fresh = explorer_of(["b1", "b2", "b3", "b4"], "generation-2")
    parts = [getattr(fresh, f.name) for f in dataclasses.fields(fresh)]
    freed = id(first)
    del first
    after = Explorer(*parts)
    assert shown(map_figure(after)) == ["b1", "b2", "b3", "b4"], f"id reused: {id(after) == freed}"
    unstored = explorer_of(["c1", "c2"], "")  # never stored: no generation, never cached
    assert shown(map_figure(unstored)) == ["c1", "c2"]


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_new_chat_leaves_nothing_of_the_last_chat_in_the_export() -> None:
    at = start()
    ask(at, EVAL_QUESTION)
    answer = turns(at)[0].answer
    assert answer is not None
    button(at, compared_papers(answer)[0]).click().run()
    at.segmented_control[0].set_value("Map").run()
    finder = next(s for s in at.selectbox if s.label == "Open a paper")
    finder.set_value(DARKBENCH).run()
    button(at, "Add to comparison").click().run()
    first = chat_export(turns(at), at.session_state[COMPARISONS_KEY])
    compared = at.session_state[COMPARISONS_KEY][turns(at)[1].id][-1].papers
    # The comparison cites with the export's numbers: the chat's [1] is the chat's paper.
    numbers = reference_numbers(turns(at))
    assert "## Comparisons" in first
    for paper in compared:
        n = numbers.get(paper.id)
        if n is not None:
            assert f"[{n}] {paper.title}" in first
    before_id = at.session_state["session_id"]

    at.segmented_control[0].set_value("Chat").run()
    button(at, "New chat").click().run()
    assert not at.exception
    assert turns(at) == [] and at.session_state["session_id"] != before_id
    for key in CHAT_KEYS:
        assert key not in at.session_state, key
    ask(at, DARK_QUESTION)
    text = chat_export(
        turns(at), at.session_state[COMPARISONS_KEY] if COMPARISONS_KEY in at.session_state else {}
    )
    assert EVAL_QUESTION not in text and "## Comparisons" not in text
    new_ids = {s.paper.id for t in turns(at) if t.answer for s in t.answer.sources}
    for paper in compared:
        if paper.id not in new_ids:
            assert paper.title not in text
    at.segmented_control[0].set_value("Map").run()
    assert not at.exception
    assert not any("**Approach**" in m.value for m in at.markdown)  # no old table under the map
    assert "explore_basket" not in at.session_state or not at.session_state["explore_basket"]


def test_export_tables_cite_with_the_chats_numbers() -> None:
    papers = [Paper(f"p{i}", f"Paper {i}", "x.") for i in range(3)]
    table = Comparison(
        papers[1:],
        [Row("approach", "Approach", (Cell(1, "We do A [1]"), Cell(2, "We do B [2]")))],
    )
    text = table.markdown(numbers=[7, 3])
    assert "| [7] Paper 1 | [3] Paper 2 |" in text
    assert "We do A [7]" in text and "We do B [3]" in text
    assert "[7] Paper 1" in text.splitlines()[-2] and text.splitlines()[-1].startswith("[3]")


def crowded_map() -> Explorer:
    """600 papers in 33 tight topics, like the bundle's map: more labels than fit a phone."""
    rng = np.random.default_rng(0)
    centres = rng.uniform(-40, 40, size=(33, 2))
    topics = np.repeat(np.arange(33), 600 // 33 + 1)[:600]
    xy = (centres[topics] + rng.normal(0, 2.5, size=(600, 2))).astype(np.float32)
    ids = [f"p{i}" for i in range(600)]
    papers = [Paper(id=pid, title=f"Paper {pid}", abstract="An abstract.") for pid in ids]
    labels = [
        Topic(t, f"term{t}a, longerterm{t}b, third{t}", int((topics == t).sum())) for t in range(33)
    ]
    topic_map = TopicMap(ids, xy, topics, labels)
    topic_map.generation = "crowded"
    return make_explorer(topic_map, PaperVectors(papers, np.eye(600, 4, dtype=np.float32), "g"))


def label_boxes(fig: dict[str, Any]) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Each annotation's box in pixels at the phone's width, as Plotly places it."""
    layout = fig["layout"]
    frame = Frame(tuple(layout["xaxis"]["range"]), tuple(layout["yaxis"]["range"]), 0, 0)
    x0, x1 = frame.x_range
    y0, y1 = frame.y_range
    frame = Frame(frame.x_range, frame.y_range, MIN_WIDTH / (x1 - x0), AREA_HEIGHT / (y1 - y0))
    boxes = []
    for note in layout["annotations"]:
        px, py = frame.pixels(note["x"], note["y"])
        if note.get("showarrow"):
            px, py = px + note["ax"], py + note["ay"]
        text = note["text"].replace("<b>", "").replace("</b>", "")
        boxes.append((text, text_box(px, py, text, note["font"]["size"])))
    return boxes


def test_no_map_label_covers_another_and_every_cited_number_is_shown() -> None:
    found = crowded_map()
    # Eight cited papers in one tight topic (as an answer's usually are).
    cited = {f"p{i}": n for n, i in enumerate(range(0, 33 * 8, 33), start=1)}
    fig = map_figure(found, cited=cited, retrieved=["p1", "p34"], selected="p2")
    boxes = label_boxes(fig)
    texts = [t for t, _ in boxes]
    assert all(f"[{n}]" in texts for n in cited.values()) and "selected" in texts
    assert 6 <= len(texts) - len(cited) - 1 < 33  # some topic labels, not all
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            assert not overlaps(box_a, box_b), (a, b)
    # Answer labels come last: Plotly draws them over everything else.
    assert texts[-len(cited) - 1 :] == [f"[{n}]" for n in cited.values()] + ["selected"]


def test_a_tap_next_to_a_cited_marker_opens_the_cited_paper() -> None:
    found = crowded_map()
    cited = {"p0": 1}
    fig = map_figure(found, cited=cited)
    frame = _base_trace(found, ()).frame
    xy = found.topic_map.xy
    # The nearest faint neighbour of p0, a few pixels away at the phone's scale.
    near = min(
        (i for i in range(1, 600) if found.topic_map.topics[i] == found.topic_map.topics[0]),
        key=lambda i: float(np.hypot(*(xy[i] - xy[0]))),
    )
    distance = np.hypot(*(np.array(frame.pixels(*xy[near])) - np.array(frame.pixels(*xy[0]))))
    assert distance < 22
    event = {"selection": {"points": [{"customdata": f"p{near}"}]}}
    assert _picked(event, found, fig, frame) == "p0"
    far = max(range(600), key=lambda i: float(np.hypot(*(xy[i] - xy[0]))))
    assert (
        _picked({"selection": {"points": [{"customdata": f"p{far}"}]}}, found, fig, frame)
        == f"p{far}"
    )
    assert _picked({"selection": {"points": [{"customdata": "p0"}]}}, found, fig, frame) == "p0"
    assert _picked({"selection": {"points": []}}, found, fig, frame) is None


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_a_follow_up_folds_the_uncited_sources_listed_above() -> None:
    at = start()
    ask(at, EVAL_QUESTION)
    ask(at, EVAL_QUESTION)
    first, second = turns(at)
    assert first.answer is not None and second.answer is not None
    cited = {c.paper_id for c in second.answer.citations}
    listed = {s.paper.id for s in first.answer.sources}
    repeated = [
        s for s in second.answer.sources if s.paper.id not in cited and s.paper.id in listed
    ]
    assert repeated
    reply = at.chat_message[3]
    assert len(reply.subheader) == len(second.answer.sources) - len(repeated)
    toggle = next(t for t in reply.toggle if t.key == f"repeats-{second.id}")
    # its numbers said, so the list above does not seem to skip them
    numbers = ", ".join(f"\\[{second.answer.sources.index(s) + 1}\\]" for s in repeated)
    assert str(toggle.label).startswith(f"{numbers}: {len(repeated)} more retrieved, not cited")
    toggle.set_value(True).run()
    assert len(at.chat_message[3].subheader) == len(second.answer.sources)
    assert len(at.chat_message[1].subheader) == len(first.answer.sources)  # the first: all


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_the_chat_loads_the_maps_scripts_and_data_before_map_is_clicked() -> None:
    """The browser's Plotly code (most of a first Map view) loads with the chat: a one-point
    chart out of sight; and the paper vectors the map needs are read in a thread meanwhile."""
    import ui.explore
    import ui.map_view

    # Read (or built, or failed) by earlier tests of this process.
    for cache in (ui.explore._corpora, ui.explore._explorers, ui.explore._failed):
        cache.clear()
    ui.map_view._warmed.clear()
    at = start()
    [chart] = at.get("plotly_chart")
    assert [t["x"] for t in json.loads(chart.proto.spec)["data"]] == [[0]]
    assert at.session_state["explore_view"] == "Chat"
    deadline = time.monotonic() + 30
    while not ui.explore._corpora and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ui.explore._corpora, "the map's paper vectors were not read while the chat was shown"
