"""The chat in a real browser: `streamlit run ui/app.py` on a loopback port, driven by Chromium.

Debian's /usr/bin/chromium through Playwright (no browser is downloaded). The index holds
the seed papers plus one hostile paper whose title and abstract carry <script>, an
<img onerror> and Markdown/Streamlit markup; all of it must show as text, and nothing may run.
The screenshot lands in tests/artifacts/ (ignored by git).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testkit.streamlit_app import ask_in_page, open_app
from tests.helpers import ARTIFACTS, IMG, QUOKKA_PAPER, QUOKKA_QUESTION, SCRIPT

pytestmark = pytest.mark.slow


def test_question_streams_a_cited_answer_and_markup_stays_text(
    quokka_app: str, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    # Ready: the sidebar shows the corpus; the offline banner is one line, details folded.
    page, dialogs = open_app(browser, quokka_app, ready="39 papers")
    offline = page.get_by_test_id("stExpander").filter(has_text="Offline: quoted extracts")
    expect(offline.locator("summary")).to_contain_text("Offline: quoted extracts · Connect a model")
    expect(offline.get_by_test_id("stExpanderDetails")).to_be_hidden()
    ask_in_page(page, QUOKKA_QUESTION)

    # The streamed answer, its [1] link and the card it points to.
    messages = page.get_by_test_id("stChatMessage")
    expect(messages.nth(0)).to_contain_text(QUOKKA_QUESTION)
    answer = messages.nth(1)
    marker = answer.locator("a[href='#src-0-1']", has_text="[1]").first
    expect(marker).to_be_visible(timeout=120_000)
    expect(answer.get_by_test_id("stFeedback")).to_be_visible()
    # Hovering [1] shows the title, the tier and the quote (the link's title, as text).
    hover = marker.get_attribute("title") or ""
    assert hover.startswith(f"QuokkaNet {SCRIPT}: counting quokkas [from](javascript:alert(4))")
    assert "· Spotlight — “" in hover and "QuokkaNet counts quokkas with 97% accuracy" in hover
    card_title = page.locator("h3#src-0-1")
    expect(card_title).to_contain_text(f"[1] QuokkaNet {SCRIPT}: counting quokkas")
    expect(answer).to_contain_text(f"aerial drone photographs {SCRIPT} even under")
    card = page.locator(".st-key-card-0-1")
    expect(card).to_contain_text("Spotlight")
    expect(card.get_by_role("link", name="OpenReview")).to_have_attribute(
        "href", QUOKKA_PAPER["url"]
    )

    marker.click()
    expect(card_title).to_be_in_viewport()

    # Open the card's abstract: every piece of markup is there as text, the quote marked.
    details = card.get_by_test_id("stExpanderDetails")
    expect(details).to_be_hidden()
    card.get_by_test_id("stExpander").locator("summary").click()
    expect(details).to_be_visible()
    # As a reader sees it: the word joiner that keeps `:red[` and `javascript:` inert is invisible.
    shown = details.inner_text().replace("\u2060", "")
    for text in (SCRIPT, IMG, ":red[two]", "[a link](javascript:alert(3))"):
        assert text in shown, text
    # A record's Markdown emphasis is removed (issue 31): neither drawn bold nor shown as **.
    assert "with x2 bold cost" in " ".join(shown.split()) or "bold cost" in shown, shown
    assert "**" not in shown and details.locator("strong", has_text="bold").count() == 0
    expect(details.locator(".katex")).to_have_count(1)  # $x^2$ is math, drawn by KaTeX
    highlighted = details.locator(".stMarkdownColoredBackground")
    expect(highlighted).to_have_count(1)
    expect(highlighted).to_contain_text("QuokkaNet counts quokkas")

    ARTIFACTS.mkdir(exist_ok=True)
    card.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "browser-answer.png"), full_page=True)

    assert page.locator("img[src='x']").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    scripts = page.locator("script").evaluate_all("els => els.map(e => e.textContent)")
    assert not [s for s in scripts if "alert(" in s]
    assert dialogs == []

    # The download is the chat as Markdown with a numbered reference list.
    with page.expect_download() as download_info:
        page.get_by_test_id("stSidebar").get_by_role("button", name="Download chat").click()
    saved = tmp_path / "chat.md"
    download_info.value.save_as(saved)
    exported = saved.read_text(encoding="utf-8")
    assert f"## 1. {QUOKKA_QUESTION}" in exported
    references = exported.split("## References\n", 1)[1]
    assert (
        "1. QuokkaNet \\<script\\>alert(1)\\</script\\>: counting quokkas "
        "\\[from\\](javascript:\u2060alert(4)) the air (Spotlight). A. Tester. "
        "<https://openreview.net/forum?id=QuokkaXSS01>"
    ) in references
    assert dialogs == []


def test_chinese_question_gets_a_cited_answer_with_chinese_text(
    quokka_app: str, browser: Any
) -> None:
    from playwright.sync_api import expect

    from rag.lang.messages import MESSAGES

    question = "有没有用离线强化学习给数据中心制冷系统节能的论文？"
    page, _ = open_app(browser, quokka_app, ready="39 papers")
    ask_in_page(page, question)

    answer = page.get_by_test_id("stChatMessage").nth(1)
    marker = answer.locator("a[href='#src-0-1']", has_text="[1]").first
    expect(marker).to_be_visible(timeout=120_000)
    # The fixed text is Chinese; the quote is the abstract's own English sentence.
    expect(answer).to_contain_text(MESSAGES["zh"]["heading"])
    expect(answer).to_contain_text("offline reinforcement learning (RL) framework for energy")
    # An untitled seed abstract is named as one (issue 31), not by its file or first words.
    expect(page.locator("h3#src-0-1")).to_contain_text("[1] An unidentified seed abstract")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "browser-chinese.png"), full_page=True)
