"""The Map view, paper cards, comparison and BibTeX in the Streamlit app, driven by AppTest over
a real index of 24 real papers (offline answerer). The browser test is test_explore_browser.py.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

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
from ui.explore import Explorer, make_explorer
from ui.map_view import map_figure


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


@pytest.mark.slow
@pytest.mark.usefixtures("app_env")
def test_comparing_the_cited_papers_shows_a_table_of_quotes() -> None:
    at = start()
    ask(at, EVAL_QUESTION)
    answer = turns(at)[0].answer
    assert answer is not None
    cited_ids = {c.paper_id for c in answer.citations}
    # The offline answer cites one paper here: it is compared with the next sources.
    assert len(cited_ids) == 1
    button(at, "Compare the top sources").click().run()
    assert not at.exception
    [tables] = at.session_state["explore_comparisons"].values()
    table = tables[-1]
    cited = [s.paper.id for s in answer.sources if s.paper.id in cited_ids]
    cited += [s.paper.id for s in answer.sources if s.paper.id not in cited_ids]
    assert [p.id for p in table.papers] == cited[:3]
    shown = next(m.value for m in at.chat_message[1].markdown if "**Problem**" in m.value)
    for row in table.rows:
        assert f"**{row.label}**" in shown
        for cell, paper in zip(row.cells, table.papers, strict=True):
            assert not cell.text or cell.quote in paper.abstract
    captions = " ".join(plain(c.value) for c in at.chat_message[1].caption)
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
