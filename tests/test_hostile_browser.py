"""What a hostile corpus and a hostile model can draw on the page, read from Chromium's DOM.

The Markdown strings are checked elsewhere (test_output_safety.py, test_ui_render.py); these
tests look at what Streamlit's frontend really made of them, since its autolink, icon and
emoji passes run after backslash escapes (issue 22, items 3, 11 and 19):

- no link but ours (`#src-…` markers, the OpenReview links), no `mailto:`, no icon or emoji;
- no heading but the source titles (a lone `-` under a line made an `<h2>`);
- one decision badge per paper with an exact decision, none drawn by a title, no KaTeX colour
  or box;
- no bidi control in any text, so no title reads reversed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from rag.index.ingest import build_index
from testkit.openai_server import OpenAIServer, Reply
from testkit.streamlit_app import ask_in_page, open_app, streamlit
from tests.helpers import ARTIFACTS, make_settings

pytestmark = pytest.mark.slow

TIMEOUT = 120_000
LINKS = "http\\://evil.example/a www\\.evil.example WWW.EVIL.EXAMPLE ceo\\@evil.example"
ICONS = "\\:material/warning\\: :material/bolt: :smile: :rocket:"
BIDI = "\u202eelbat nuf\u202c and \u2066isolated\u2069 \u200fmark"
PAPERS = [
    {
        "id": "autolinkA1",
        "title": f"Wallaby tracking with links {LINKS} and icons {ICONS}",
        "abstract": (
            f"We track wallabies with thermal cameras; contact {LINKS}. "
            f"Our wallaby tracker draws {ICONS} on every frame. "
            "Wallaby tracking reaches 91% recall on night footage."
        ),
        "authors": ["ceo@evil.example", "B. www.evil.example"],
        "decision": "Accept (Poster)",
        "url": "https://openreview.net/forum?id=autolinkA1",
    },
    {
        "id": "badgeB1",
        "title": "Wallaby gait analysis $\\textcolor{red}{\\boxed{Oral}}$ {\\color{white} hidden}",
        "abstract": (
            "We analyse wallaby gait from video. $\\color{white}{secret}$ The wallaby gait "
            "model predicts hopping speed within 5%."
        ),
        "decision": "Reject (considered for an Oral, then rejected)",
        "url": "https://openreview.net/forum?id=badgeB1",
    },
    {
        "id": "badgeC1",
        "title": "Wallaby diets from camera traps",
        "abstract": "We estimate wallaby diets from camera trap images of feeding wallabies.",
        "decision": "Poster (Oral candidate)",
        "url": "https://openreview.net/forum?id=badgeC1",
    },
    {
        "id": "bidiD1",
        "title": f"Wallaby counting {BIDI}",
        "abstract": f"We count wallabies from drones. {BIDI} Wallaby counts match surveys.",
        "decision": "Accept (Oral)",
        "url": "https://openreview.net/forum?id=bidiD1",
    },
]
QUESTION = "How are wallabies tracked, counted and analysed?"
# A model reply that tries every trick: a setext heading and a forged reference list, links,
# icons, emoji, a colour directive, bidi overrides.
REPLY = (
    "Wallabies are tracked with thermal cameras [1].\n"
    "Forged heading\n"
    "-\n"
    "References\n"
    "=\n"
    f"See {LINKS} for details [2].\n"
    f"{ICONS} :red[urgent] :orange-badge[Oral]\n"
    f"Counting {BIDI} matches surveys [4].\n"
    "- a list item with **bold** stays"
)
BIDI_CONTROLS = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@dataclass
class App:
    url: str
    server: OpenAIServer


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, embeddings: Any) -> Iterator[App]:
    root = tmp_path_factory.mktemp("hostile-browser")
    corpus = root / "papers.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PAPERS), encoding="utf-8")
    build_index(make_settings(root / "index"), [corpus], embeddings=embeddings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env.pop("OPENAI_API_KEY", None)
    with OpenAIServer() as server:
        env.update(
            RAG_STORE__INDEX_DIR=str(root / "index"),
            RAG_LLM__MODEL="openai:gpt-test",
            RAG_LLM__BASE_URL=server.base_url,
            RAG_LLM__MAX_RETRIES="0",
            RAG_RETRIEVAL__K="4",
            RAG_UI__FEEDBACK_PATH=str(root / "feedback.jsonl"),
        )
        with (root / "streamlit.log").open("wb") as log, streamlit(env, log=log) as served:
            yield App(served.url, server)


@pytest.fixture(scope="module")
def reply(app: App, browser: Any) -> Iterator[Any]:
    """The answer to QUESTION in Chromium, every source card opened."""
    from playwright.sync_api import expect

    app.server.script(REPLY)
    page, dialogs = open_app(browser, app.url, "4 papers")
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill(QUESTION)
    box.press("Enter")
    answer = page.get_by_test_id("stChatMessage").nth(1)
    expect(answer.get_by_test_id("stFeedback")).to_be_visible(timeout=TIMEOUT)
    for card in answer.get_by_test_id("stExpander").all():
        card.locator("summary").click()
    expect(answer.get_by_test_id("stExpanderDetails").first).to_be_visible()
    page.wait_for_timeout(500)  # KaTeX and the cards' Markdown settle
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "hostile-reply.png"), full_page=True)
    yield answer
    assert not dialogs, dialogs


def test_no_link_but_the_markers_and_openreview(reply: Any) -> None:
    hrefs = reply.locator("a[href]").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert any(h.startswith("#src-0-") for h in hrefs)  # our markers are still links
    others = [h for h in hrefs if not h.startswith("#src-0-")]
    assert others and all(h.startswith("https://openreview.net/forum?id=") for h in others), hrefs
    text = reply.inner_text()
    text = text.replace("\u2060", "")  # the word joiners that break the autolinks
    assert "http://evil.example/a" in text and "ceo@evil.example" in text


def test_no_icon_emoji_or_directive_from_the_corpus_or_the_model(reply: Any) -> None:
    markdown = reply.get_by_test_id("stMarkdownContainer")
    assert markdown.locator("[data-testid='stIconMaterial'], .material-icons").count() == 0
    text = reply.inner_text()
    assert "\U0001f604" not in text and "\U0001f680" not in text  # :smile:, :rocket:
    assert ":material/warning:" in text.replace("\u2060", "")  # shown as written
    assert ":red[urgent]" in text.replace("\u2060", "")


def test_no_heading_but_the_source_titles(reply: Any) -> None:
    headings = reply.locator("h1, h2, h3, h4, h5, h6")
    tags = headings.evaluate_all("els => els.map(e => e.tagName)")
    in_cards = reply.locator("[class*='st-key-card-'] h3").count()
    assert set(tags) == {"H3"} and len(tags) == in_cards == 4, tags
    text = reply.inner_text()
    assert "Forged heading" in text and "References" in text  # as text
    assert reply.locator("hr").count() == 0
    assert reply.locator("li", has_text="a list item with bold stays").count() == 1  # lists stay


def test_badges_come_only_from_exact_decisions(reply: Any) -> None:
    badges = reply.locator(".stMarkdownBadge, [class*='Badge']").all_inner_texts()
    # The app's own "uncited" marks the model's sentences without [n] (ui/uncited.py).
    tiers = [b.strip() for b in badges if b.strip() != "uncited"]
    assert sorted(tiers) == ["Oral", "Poster"], badges
    # Neither the title's \textcolor{red}{\boxed{Oral}} nor \color{white} reached KaTeX.
    assert reply.locator(".katex .boxpad, .katex .fbox, .katex [style*='color']").count() == 0
    heading = reply.locator("h3", has_text="Wallaby gait analysis").inner_text()
    assert "Oral" in heading  # the text, as text


def test_no_bidi_control_reaches_the_page(reply: Any) -> None:
    text = reply.inner_text()
    assert not any(c in text for c in BIDI_CONTROLS)
    heading = reply.locator("h3", has_text="Wallaby counting").inner_text()
    assert "elbat nuf" in heading and "isolated" in heading
    titles = reply.locator("a[title]").evaluate_all("els => els.map(e => e.title)")
    assert titles and not any(c in t for t in titles for c in BIDI_CONTROLS)


# Issue 32: a model server's error (M1) and replies without end (M2) -------------------------

SERVER_ERROR = (
    "see http://evil.example/a www.evil.example ceo@evil.example "
    ":material/warning: :red[urgent] :smile: openai:m: now"
)


def answered(app: App, browser: Any, *replies: Any, wait: str = "stFeedback") -> Any:
    """A new page's answer to QUESTION after `replies` were scripted, once `wait` shows."""
    from playwright.sync_api import expect

    app.server.reset()
    app.server.script(*replies)
    page, dialogs = open_app(browser, app.url, "4 papers")
    ask_in_page(page, QUESTION)
    answer = page.get_by_test_id("stChatMessage").nth(1)
    expect(answer.get_by_test_id(wait).first).to_be_visible(timeout=45_000)
    page.wait_for_timeout(500)
    assert page.get_by_test_id("stSidebar").inner_text()  # the page is not blank
    assert not dialogs, dialogs
    return answer


def test_a_model_servers_error_renders_no_link_icon_emoji_or_colour(app: App, browser: Any) -> None:
    """Before: 3 links, an icon, an emoji and red text in st.error; `openai:m:` an emoji."""
    failed = Reply(status=400, content=SERVER_ERROR)
    answer = answered(app, browser, failed, wait="stAlert")
    alert = answer.get_by_test_id("stAlert").get_by_test_id("stMarkdownContainer")
    assert alert.locator("a[href]").count() == 0
    assert alert.locator("[data-testid='stIconMaterial'], .material-icons").count() == 0
    text = alert.inner_text().replace("\u2060", "")
    assert "\U0001f604" not in text and "\u24c2" not in text  # :smile:, :m:
    assert ":red[urgent]" in text and "openai:m:" in text and "ceo@evil.example" in text
    assert "answered 400" in text


ENDLESS = Reply("Wallabies are tracked with thermal cameras [1]. ", endless=True, drip=1e-4)
NESTED = "Wallabies are tracked with thermal cameras [1].\n" + "".join(
    "  " * depth + "- " + "w" * 1500 + "\n" for depth in range(2400)
)  # 9.4 MB of nested lists


@pytest.mark.parametrize("reply", [ENDLESS, Reply(NESTED)], ids=["endless", "9 MB nested"])
def test_a_reply_without_end_is_cut_and_the_page_answers(
    app: App, browser: Any, reply: Reply
) -> None:
    """Before: an endless stream ran to llm.timeout, 9 MB of nested lists blanked the page."""
    text = answered(app, browser, reply, reply).inner_text()
    assert "thermal cameras" in text and len(text.encode()) < 64_000
