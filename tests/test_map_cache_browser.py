"""The Map view with a rewritten map cache, in real Chromium (issue 32, L5).

A cached map whose paper sits in topic 99 (of a handful) used to crash the Map view into
Streamlit's error box (IndexError); the cache is checked when read and recomputed instead.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rag.explore.topicmap import load_topic_map, map_path
from rag.index.papers import PaperIndex
from testkit.streamlit_app import chromium, open_app, streamlit, wait_idle
from tests.helpers import ARTIFACTS, make_settings

pytestmark = pytest.mark.slow
TIMEOUT = 180_000


@pytest.mark.parametrize("topic", [99, -7])
def test_a_bad_topic_id_in_the_map_cache_never_reaches_the_page(
    tmp_path: Path, seed_settings: Any, embeddings: Any, topic: int
) -> None:
    from playwright.sync_api import expect

    index_dir = tmp_path / "index"
    shutil.copytree(seed_settings.store.index_dir, index_dir)
    settings = make_settings(index_dir, embedding={"bundled_vectors": False})
    load_topic_map(PaperIndex.open(settings, embeddings))  # the cache, as the app writes it
    path = map_path(settings)
    cached = json.loads(path.read_text())
    cached["papers"][0]["topic"] = topic
    path.write_text(json.dumps(cached))

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.pop("OPENAI_API_KEY", None)
    env.update(
        RAG_STORE__INDEX_DIR=str(index_dir),
        RAG_LLM__MODEL="offline",
        RAG_EMBEDDING__BUNDLED_VECTORS="false",
        RAG_UI__FEEDBACK_PATH=str(tmp_path / "feedback.jsonl"),
    )
    with (
        (tmp_path / "streamlit.log").open("wb") as log,
        streamlit(env, log=log) as served,
        chromium() as browser,
    ):
        page, dialogs = open_app(browser, served.url, "papers")
        page.get_by_test_id("stButtonGroup").get_by_text("Map", exact=True).click()
        drawn = ".st-key-map-box .js-plotly-plot"
        page.wait_for_selector(f"{drawn}, [data-testid='stException']", timeout=TIMEOUT)
        wait_idle(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"map-bad-topic-{topic}.png"))
        expect(page.get_by_test_id("stException")).to_have_count(0)
        assert "IndexError" not in page.inner_text("body") and dialogs == []
        traces = page.evaluate(f"() => document.querySelector({drawn!r}).data.length")
        assert traces >= 1  # the map is drawn
    rewritten = json.loads(path.read_text())  # the map was computed again, and cached
    assert len(rewritten["papers"]) == 38 and rewritten["papers"][0]["topic"] != topic
