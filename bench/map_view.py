"""Map view: what highlighting an answer's papers adds to building the figure, at 2,143 and
11,600 papers.

    .venv/bin/python bench/map_view.py --index DIR      # DIR: the 2,143-paper index

For the map of the index and for a synthetic 11,600-paper map (points and topics copied from
it, shifted), times `ui.map_view.map_figure` plus the figure's JSON (what Streamlit sends;
the first build of a map's points is cached, as in the app):
without highlights (the baseline) and with 5 retrieved papers of which 3 are cited. Median of
20 runs each; the difference is what highlighting adds after an answer.

    .venv/bin/python bench/map_view.py --index DIR --browser

also serves the app on the index (`streamlit run`, offline answerer) and drives Debian's
Chromium: asks a question, clicks "Show on map" and times until the map's points are drawn,
in a new server process (the first map reads every paper vector from Chroma) and again after
a second question (the map is cached).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import plotly.io
import plotly.tools

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag.explore.topicmap import TopicMap, load_topic_map  # noqa: E402
from rag.index.papers import PaperIndex  # noqa: E402
from rag.index.vectors import PaperVectors, read_paper_vectors  # noqa: E402
from rag.models.factory import make_embeddings  # noqa: E402
from rag.settings import get_settings, with_overrides  # noqa: E402
from rag.types import Paper  # noqa: E402
from ui.explore import Explorer, make_explorer  # noqa: E402
from ui.map_view import map_figure  # noqa: E402


def timed(found: Explorer, cited: dict[str, int], retrieved: set[str], runs: int = 20) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        figure = map_figure(found, (), cited, retrieved)
        # What st.plotly_chart does with it: validate into a Figure, then JSON.
        checked = plotly.tools.return_figure_from_figure_or_data(figure, validate_figure=True)
        plotly.io.to_json(checked, validate=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def bigger(found: Explorer, n: int) -> Explorer:
    """`n` papers: the real ones repeated with a small shift, same topics."""
    topic_map, corpus = found.topic_map, found.corpus
    rng = np.random.default_rng(0)
    picks = np.arange(n) % len(topic_map)
    ids = [f"{topic_map.paper_ids[i]}-{k}" for k, i in enumerate(picks)]
    xy = topic_map.xy[picks] + rng.normal(0, 0.01, (n, 2)).astype(np.float32)
    papers = []
    for pid, i in zip(ids, picks, strict=True):
        p = corpus.get(topic_map.paper_ids[i])
        assert p is not None
        papers.append(Paper(pid, p.title, p.abstract, decision=p.decision))
    vectors = corpus.vectors[[corpus.position(topic_map.paper_ids[i]) or 0 for i in picks]]
    return make_explorer(
        TopicMap(ids, xy, topic_map.topics[picks], topic_map.topic_list),
        PaperVectors(papers, vectors),
    )


QUESTIONS = (
    "How are LLM agents evaluated on software engineering tasks?",
    "Which papers make attention cheaper for long sequences?",
)


def browser_times(index: Path) -> list[float]:
    """Seconds from "Show on map" to the drawn map, for each of QUESTIONS in one session."""
    import os

    from playwright.sync_api import expect

    from tests.streamlit_app import chromium, streamlit

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.pop("OPENAI_API_KEY", None)
    env.update(RAG_STORE__INDEX_DIR=str(index), RAG_LLM__MODEL="offline")
    times = []
    with streamlit(env) as served, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1500})
        page.goto(served.url)
        for turn, question in enumerate(QUESTIONS):
            box = page.get_by_test_id("stChatInputTextArea")
            expect(box).to_be_enabled(timeout=300_000)
            box.fill(question)
            box.press("Enter")
            answer = page.get_by_test_id("stChatMessage").nth(2 * turn + 1)
            expect(answer.get_by_test_id("stFeedback")).to_be_visible(timeout=300_000)
            started = time.perf_counter()
            answer.get_by_role("button", name="Show on map").click()
            page.wait_for_function(
                """() => { const gd = document.querySelector('.js-plotly-plot');
                    return gd && gd.data && gd.data.length >= 2
                        && gd.querySelectorAll('.scatterlayer .point, canvas').length > 0; }""",
                timeout=300_000,
            )
            times.append(time.perf_counter() - started)  # a question asked on the map goes
            # to the chat
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--large", type=int, default=11_600)
    parser.add_argument("--browser", action="store_true", help="also time the map in Chromium")
    args = parser.parse_args()
    settings = with_overrides(get_settings(), {"store": {"index_dir": str(args.index)}})
    index = PaperIndex.open(settings, make_embeddings(settings.embedding))
    corpus = read_paper_vectors(index)
    found = make_explorer(load_topic_map(index, corpus=corpus), corpus)
    print("| papers | figure without highlights | with 3 cited + 2 retrieved | added |")
    print("|---|---|---|---|")
    for explorer in (found, bigger(found, args.large)) if args.large else (found,):
        ids = explorer.topic_map.paper_ids
        step = len(ids) // 5
        retrieved = {ids[i * step] for i in range(5)}
        cited = {pid: n for n, pid in enumerate(sorted(retrieved)[:3], start=1)}
        base = timed(explorer, {}, set())
        lit = timed(explorer, cited, retrieved)
        print(f"| {len(ids):,} | {base:.1f} ms | {lit:.1f} ms | {lit - base:+.1f} ms |")
    if args.browser:
        first, cached = browser_times(args.index)
        print(
            f"Chromium, {len(found.topic_map):,} papers, from 'Show on map' to the drawn map: "
            f"{first:.2f} s in a new server process, {cached:.2f} s after the next answer"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
