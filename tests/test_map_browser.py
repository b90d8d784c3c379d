"""The Map view on a laptop (1280x800) and a phone (390x844), in real Chromium.

`streamlit run ui/app.py` offline over 200-odd real papers (every 12th of the bundle, the
attention-for-long-sequences ones, and BitStack). After an answer and a comparison: no two
visible map labels overlap, every cited paper's [n] is visible, the plot fills the phone, the
page never scrolls sideways, and a tap on a cited point opens that paper's card. BitStack's
card and a comparison with it show no raw LaTeX. Screenshots land in tests/artifacts/.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rag.index.ingest import build_index
from testkit.streamlit_app import cited_point, offline_app, tap_until_open, wait_idle
from tests.helpers import ARTIFACTS, CORPUS_JSONL, make_settings, read_jsonl

pytestmark = pytest.mark.slow
TIMEOUT = 180_000
BITSTACK = "lBntjGbyv0"  # "... from $\textit{capability}$ to $\textit{availability}$ ..."
QUESTION = "Which sparse attention methods speed up long-context LLM inference?"
RAW_LATEX = re.compile(r"\$\\|\\%|\\textbf|\\textit")
VIEWPORTS = {"laptop": (1280, 800), "phone": (390, 844)}


def chosen_papers() -> list[dict[str, Any]]:
    picked: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(read_jsonl(CORPUS_JSONL)):
        text = r["abstract"]
        long_attention = re.search(r"attention", text, re.I) and re.search(
            r"long[- ](context|sequence)", text, re.I
        )
        if long_attention or r["id"] == BITSTACK or i % 12 == 0:
            picked[r["id"]] = r
    return list(picked.values())


@pytest.fixture(scope="module")
def map_app(tmp_path_factory: pytest.TempPathFactory, embeddings: Any) -> Iterator[str]:
    root = tmp_path_factory.mktemp("map-browser")
    corpus = root / "papers.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in chosen_papers()), encoding="utf-8")
    index = root / "index"
    build_index(make_settings(index), [corpus], embeddings=embeddings)
    with offline_app(index, root) as url:
        yield url


def open_page(browser: Any, url: str, viewport: str) -> Any:
    from playwright.sync_api import expect

    width, height = VIEWPORTS[viewport]
    phone = viewport == "phone"
    context = browser.new_context(
        viewport={"width": width, "height": height}, has_touch=phone, accept_downloads=True
    )
    page = context.new_page()
    page.goto(url)
    expect(page.get_by_test_id("stSidebar")).to_contain_text("papers", timeout=TIMEOUT)
    return page


def scrolls_sideways(page: Any) -> bool:
    return bool(page.evaluate("() => document.documentElement.scrollWidth > window.innerWidth"))


def visible_labels(page: Any) -> list[dict[str, Any]]:
    """Each map annotation drawn inside the plot area: its text and box."""
    return list(
        page.evaluate(
            """() => {
                const gd = document.querySelector('.st-key-map-box .js-plotly-plot');
                const area = gd.querySelector('.nsewdrag').getBoundingClientRect();
                return Array.from(gd.querySelectorAll('.annotation')).map(a => {
                    const bg = a.querySelector('.bg') || a;
                    const r = bg.getBoundingClientRect();
                    return {text: a.textContent, left: r.left, top: r.top, right: r.right,
                            bottom: r.bottom, width: r.width};
                }).filter(b => b.width > 0 && b.right > area.left && b.left < area.right
                              && b.bottom > area.top && b.top < area.bottom);
            }"""
        )
    )


def overlapping(labels: list[dict[str, Any]]) -> list[tuple[str, str]]:
    pairs = []
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            if (
                a["left"] < b["right"] - 0.5
                and b["left"] < a["right"] - 0.5
                and a["top"] < b["bottom"] - 0.5
                and b["top"] < a["bottom"] - 0.5
            ):
                pairs.append((a["text"], b["text"]))
    return pairs


def cited_trace(page: Any) -> dict[str, Any]:
    page.wait_for_function(
        "() => (document.querySelector('.st-key-map-box .js-plotly-plot')?.data || [])"
        ".some(t => t.name === 'cited')",
        timeout=TIMEOUT,
    )
    return dict(
        page.evaluate(
            """() => { const t = document.querySelector('.st-key-map-box .js-plotly-plot').data
                        .find(t => t.name === 'cited');
                       return {customdata: Array.from(t.customdata), x: Array.from(t.x),
                               y: Array.from(t.y), hovertext: Array.from(t.hovertext)}; }"""
        )
    )


def drawn_points(page: Any) -> list[tuple[float, float]]:
    """Where every marker of the last chart is drawn, in the page: the background papers' too
    (a finger on a cited marker drawn over another paper's marker may open either: three
    taps in CI, and here under load, opened the paper beneath)."""
    points = page.evaluate(
        """() => {
            const charts = document.querySelectorAll('.st-key-map-box .js-plotly-plot');
            const gd = charts[charts.length - 1];
            const traces = gd.querySelectorAll('.scatterlayer .trace');
            const out = [];
            (gd.data || []).forEach((t, i) => {
                if (!traces[i]) return;
                traces[i].querySelectorAll('.point').forEach(dot => {
                    const r = dot.getBoundingClientRect();
                    if (r.width > 0) out.push([r.left + r.width / 2, r.top + r.height / 2]);
                });
            });
            return out;
        }"""
    )
    return [(float(x), float(y)) for x, y in points]


def watch_map_charts(page: Any) -> None:
    """Count from now the map charts drawn: Streamlit remounts the whole page, the drawn map
    with it, when the end of a run changes what wraps the page (the browser's work for the map,
    done twice)."""
    page.evaluate(
        """() => {
            window.__mapCharts = new Set();
            const poll = () => {
                const gd = document.querySelector('.st-key-map-box .js-plotly-plot');
                if (gd && gd.querySelector('.scatterlayer .point')) window.__mapCharts.add(gd);
                requestAnimationFrame(poll);
            };
            requestAnimationFrame(poll);
        }"""
    )


def map_charts_drawn(page: Any, settle_ms: int = 5000) -> int:
    """How many map charts were drawn since `watch_map_charts`, once the run has ended."""
    page.get_by_test_id("stSelectbox").filter(has_text="Open a paper").wait_for(timeout=TIMEOUT)
    page.wait_for_timeout(settle_ms)
    return int(page.evaluate("() => window.__mapCharts.size"))


def finger_tap(page: Any, x: float, y: float) -> None:
    """A tap as a finger makes it: touch down, a tenth of a second, touch up (Playwright's own
    tap lifts at once, before Plotly has found the point under it)."""
    cdp = page.context.new_cdp_session(page)
    point = {"x": x, "y": y, "radiusX": 6, "radiusY": 6, "force": 1}
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
    page.wait_for_timeout(120)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_the_map_is_readable_and_a_tap_opens_the_cited_paper(
    map_app: str, browser: Any, viewport: str
) -> None:
    from playwright.sync_api import expect

    page = open_page(browser, map_app, viewport)
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(QUESTION)
    box.press("Enter")
    answer = page.get_by_test_id("stChatMessage").nth(1)
    expect(answer.get_by_test_id("stFeedback")).to_be_visible(timeout=TIMEOUT)
    answer.get_by_role("button", name=re.compile("Compare the")).click()
    table = page.locator("[class*='st-key-comparison-']").first
    expect(table).to_contain_text("Approach", timeout=TIMEOUT)
    assert not scrolls_sideways(page), "the chat scrolls sideways after a comparison"

    wait_idle(page)  # the comparison's rerun done: a click now is not on a replaced button
    watch_map_charts(page)
    started = time.perf_counter()
    answer.get_by_role("button", name="Show on map").click()
    cited = cited_trace(page)
    shown_after = time.perf_counter() - started
    assert map_charts_drawn(page) == 1, "the map was remounted and drawn a second time"
    page.wait_for_timeout(800)  # the annotations are drawn after the data
    chart = page.locator(".st-key-map-box .js-plotly-plot")
    plot = chart.bounding_box()
    width, height = VIEWPORTS[viewport]
    if viewport == "phone":  # as wide as the screen (less a hair) and 60% of its height
        assert plot["width"] >= width - 24 and plot["height"] >= 0.6 * height, plot
    else:
        assert plot["width"] >= 800, plot
    labels = visible_labels(page)
    assert overlapping(labels) == []
    numbers = sorted({int(m) for t in cited["hovertext"] for m in re.findall(r"\[(\d+)\]", t)})
    shown = {lab["text"] for lab in labels}
    assert numbers and all(f"[{n}]" in shown for n in numbers), (numbers, shown)
    assert len(shown - {f"[{n}]" for n in numbers}) >= 4  # topic labels too
    assert not scrolls_sideways(page), "the Map view scrolls sideways"
    ARTIFACTS.mkdir(exist_ok=True)
    chart.evaluate("el => el.scrollIntoView({block: 'center'})")
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / f"map-{viewport}.png"))
    print(f"{viewport}: Show on map {shown_after:.2f} s")

    # A tap (a click on the laptop) on two cited points opens each one's card: the two drawn
    # farthest from any other highlighted marker (two markers a few pixels apart are one to a
    # finger, and a tap there may open either; the layout is fitted anew for this index, so
    # which markers crowd each other differs from run to run: it failed so in CI).
    card = page.locator("[class*='st-key-paper-card-map']")
    drawn = [cited_point(page, k) for k in range(len(cited["customdata"]))]
    assert len(drawn) >= 2, cited["customdata"]
    others = drawn_points(page)

    def room(k: int) -> float:
        return min(
            (math.dist(drawn[k], p) for p in others if math.dist(drawn[k], p) > 0.5),
            default=math.inf,
        )

    for k in sorted(range(len(drawn)), key=room, reverse=True)[:2]:
        pid = cited["customdata"][k]
        # Not while a rerun (the last card's) is still redrawing the map: a tap then lands on
        # a chart about to be replaced (it failed so in CI under load), and is tapped again.
        wait_idle(page, settle_ms=500, timeout_ms=TIMEOUT)
        chart.scroll_into_view_if_needed()
        link = card.get_by_role("link", name="OpenReview")
        url = f"https://openreview.net/forum?id={pid}"
        try:
            tap_until_open(
                page,
                k,
                lambda ms, link=link, url=url: expect(link).to_have_attribute(
                    "href", url, timeout=ms
                ),
                (lambda x, y: finger_tap(page, x, y)) if viewport == "phone" else None,
            )
        except AssertionError:  # what the page showed, to read
            page.screenshot(path=str(ARTIFACTS / f"map-{viewport}-tap-{k}-failed.png"))
            raise
        # The "Open a paper" box names the card that is open.
        title = card.locator("h3").first.inner_text().strip()
        finder = page.get_by_test_id("stSelectbox").filter(has_text="Open a paper")
        expect(finder.get_by_role("combobox")).to_have_value(title)
    assert not scrolls_sideways(page)


def test_bitstacks_card_and_comparison_show_no_raw_latex(map_app: str, browser: Any) -> None:
    from playwright.sync_api import expect

    page = open_page(browser, map_app, "phone")
    page.get_by_test_id("stButtonGroup").get_by_text("Map", exact=True).click()
    finder = page.get_by_test_id("stSelectbox").filter(has_text="Open a paper")
    expect(finder).to_be_visible(timeout=TIMEOUT)
    combobox = finder.get_by_role("combobox")
    combobox.click()
    combobox.fill("BitStack")
    page.get_by_role("option", name=re.compile("BitStack")).first.click()
    card = page.locator("[class*='st-key-paper-card-map']")
    expect(card).to_contain_text("from capability to availability", timeout=TIMEOUT)
    assert not RAW_LATEX.search(card.inner_text())
    card.get_by_role("button", name="Add to comparison").click()
    expect(card.get_by_role("button", name="In comparison")).to_be_visible()
    card.locator("[class*='st-key-related-map-']").first.click()
    expect(card).not_to_contain_text("from capability to availability", timeout=TIMEOUT)
    card.get_by_role("button", name="Add to comparison").click()
    page.get_by_role("button", name="Compare", exact=True).click()
    table = page.locator("[class*='st-key-comparison-']").first
    expect(table).to_contain_text("BitStack", timeout=TIMEOUT)
    text = table.inner_text()
    assert not RAW_LATEX.search(text), text
    assert not scrolls_sideways(page)
    page.screenshot(path=str(ARTIFACTS / "map-phone-compare.png"), full_page=True)
