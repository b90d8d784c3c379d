"""The Map view in a real browser: `streamlit run ui/app.py` driven by Debian's Chromium.

Over the seed papers plus the hostile QuokkaNet paper (tests/helpers.py): after a question the
map highlights the cited paper with its [1], its hover shows the title as text, clicking the
point opens its card, the card's BibTeX download parses back, a comparison table appears and
goes into the chat export. Screenshots land in tests/artifacts/ (ignored by git).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bibtexparser
import pytest
from bibtexparser import middlewares

from testkit.streamlit_app import ask_in_page, chromium, cited_point, open_app, tap_until_open
from tests.helpers import ARTIFACTS, QUOKKA_PAPER, QUOKKA_QUESTION, SCRIPT

pytestmark = pytest.mark.slow
QUOKKA = QUOKKA_PAPER["id"]


def plot_data(page: Any) -> list[dict[str, Any]]:
    return page.evaluate(
        """() => document.querySelector('.st-key-map-box .js-plotly-plot').data.map(t => ({
            name: t.name, customdata: Array.from(t.customdata),
            hovertext: Array.from(t.hovertext), x: Array.from(t.x), y: Array.from(t.y)}))"""
    )


def test_the_map_highlights_the_cited_paper_and_opens_its_card(
    quokka_app: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    with chromium() as browser:
        page, dialogs = open_app(browser, quokka_app, ready="39 papers", height=1500)
        ask_in_page(page, QUOKKA_QUESTION)
        answer = page.get_by_test_id("stChatMessage").nth(1)
        expect(answer.get_by_test_id("stFeedback")).to_be_visible(timeout=120_000)

        answer.get_by_role("button", name="Show on map").click()
        # One map with its traces: while Streamlit swaps the view in, the old and the new
        # chart can both be in the page for a moment (CI under load saw two).
        page.wait_for_function(
            """() => {
                const charts = document.querySelectorAll('.st-key-map-box .js-plotly-plot');
                return charts.length === 1 && (charts[0].data || []).length >= 2;
            }""",
            timeout=120_000,
        )
        chart = page.locator(".st-key-map-box .js-plotly-plot")
        expect(chart).to_be_visible()
        expect(page.get_by_text("the answer cites 1 paper(s) from 1 topic(s)")).to_be_visible()
        traces = {t["name"]: t for t in plot_data(page)}
        cited = traces["cited"]
        assert cited["customdata"] == [QUOKKA]
        assert len(traces["papers"]["customdata"]) == 39
        assert set(traces["retrieved, not cited"]["customdata"]).isdisjoint({QUOKKA})
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in cited["hovertext"][0]
        expect(chart.locator(".annotation-text", has_text="[1]")).to_have_count(1)

        # Hovering the cited point shows its title as text (nothing in it runs).
        x, y = cited_point(page)
        page.mouse.move(x, y)
        hover = chart.locator(".hoverlayer")
        expect(hover).to_contain_text(f"QuokkaNet {SCRIPT}: counting", timeout=10_000)
        expect(hover).to_contain_text("Spotlight")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "explore-map.png"))

        # Clicking the point opens its card.
        card = page.locator("[class*='st-key-paper-card-map']")
        title = f"QuokkaNet {SCRIPT}: counting quokkas"
        tap_until_open(page, 0, lambda ms: expect(card).to_contain_text(title, timeout=ms))
        expect(card).to_contain_text("Spotlight")
        expect(card).to_contain_text("Related papers")
        expect(card.get_by_role("link", name="OpenReview")).to_have_attribute(
            "href", QUOKKA_PAPER["url"]
        )

        # The card's BibTeX parses back with the title as written.
        with page.expect_download() as download:
            card.get_by_role("button", name="Download BibTeX").click()
        saved = tmp_path / "card.bib"
        download.value.save_as(saved)
        library = bibtexparser.parse_string(
            saved.read_text(encoding="utf-8"),
            append_middleware=[middlewares.LatexDecodingMiddleware()],
        )
        assert not library.failed_blocks
        [entry] = library.entries
        assert entry.fields_dict["title"].value == QUOKKA_PAPER["title"]
        assert entry.fields_dict["url"].value == QUOKKA_PAPER["url"]
        assert entry.fields_dict["author"].value == "A. Tester"  # one author: in order

        # Two papers into a comparison: this one and its nearest neighbour.
        card.get_by_role("button", name="Add to comparison").click()
        expect(card.get_by_role("button", name="In comparison")).to_be_visible()
        related = card.locator("[class*='st-key-related-map-']").first
        # The button's text: its icon's name on a line, then the title (and " · tier").
        related_title = related.inner_text().strip().splitlines()[-1].rsplit("·", 1)[0].strip()
        assert related_title
        related.click()
        expect(card).to_contain_text(related_title, timeout=30_000)
        card.get_by_role("button", name="Add to comparison").click()
        page.get_by_role("button", name="Compare", exact=True).click()
        table = page.locator("[class*='st-key-comparison-']").first
        expect(table).to_contain_text("Problem", timeout=60_000)
        expect(table).to_contain_text("Approach")
        expect(table).to_contain_text("We introduce QuokkaNet")
        page.screenshot(path=str(ARTIFACTS / "explore-compare.png"), full_page=True)

        # A question typed on the map goes to the chat; the export holds the comparison.
        ask_in_page(page, "Which papers count animals from drone images?")
        expect(
            page.get_by_test_id("stChatMessage").nth(3).get_by_test_id("stFeedback")
        ).to_be_visible(timeout=120_000)
        with page.expect_download() as download:
            page.get_by_test_id("stSidebar").get_by_role("button", name="Download chat").click()
        exported = tmp_path / "chat.md"
        download.value.save_as(exported)
        text = exported.read_text(encoding="utf-8")
        assert "## Comparisons" in text and "| **Approach** |" in text
        assert "We introduce QuokkaNet" in text
        with page.expect_download() as download:
            page.get_by_test_id("stSidebar").get_by_role("button", name="Download BibTeX").click()
        cited_bib = tmp_path / "cited.bib"
        download.value.save_as(cited_bib)
        entries = bibtexparser.parse_string(cited_bib.read_text(encoding="utf-8")).entries
        assert [e.fields_dict["url"].value for e in entries][0] == QUOKKA_PAPER["url"]
        assert page.locator("img[src='x']").count() == 0
        assert dialogs == []
