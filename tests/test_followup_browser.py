"""Found by a hands-on check of the page in Chromium (offline, 1280x800); each test failed on
the tree it was written against (74a8f6c), one defect each, numbered as in the docstrings:

1. In a chat that has just listed Max Tegmark's papers (all three without an abstract in the
   corpus), "What does the KAN paper propose?" comes back empty: the offline header ("every
   sentence below is quoted from the cited abstract") with nothing below it, "0 cited of 3
   retrieved", and no KAN record. Asked as the chat's first question, the same words answer
   with KAN's record (tests/test_title_records.py), so only the follow-up path loses it.
2. A question with HTML and Markdown pasted into it is shown escaped (good) but refused, while
   the same question without the markup is answered: the tag's words count against it.
3-7. Math glued to the word before it in a comparison cell; a comparison's text out of its
   numbers' order; a shell command with raw backticks in an author list; a pasted question
   over 4,000 characters lost without a word; a model error that names settings, not the page.

`streamlit run ui/app.py`, offline, over a small index of real papers: those on attention for
long sequences, with Tegmark's three title records from the no-abstract list. Screenshots land
in tests/artifacts/ (ignored by git).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from rag.index.ingest import build_index
from rag.settings import BUNDLED_CORPUS
from testkit.streamlit_app import ask_settled, offline_app, open_chat, wait_idle
from tests.helpers import CORPUS_JSONL, make_settings, read_jsonl

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TIMEOUT = 180_000
KAN_TITLE = "KAN: Kolmogorov–Arnold Networks"
LIST = "Which papers make attention cheaper for long sequences?"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, embeddings: Any) -> Iterator[str]:
    root = tmp_path_factory.mktemp("followup-browser")
    folder = root / "corpus"
    folder.mkdir()
    papers = [
        r
        for r in read_jsonl(CORPUS_JSONL)
        if re.search(r"attention", r["abstract"], re.I)
        and re.search(r"long[- ](context|sequence)", r["abstract"], re.I)
    ]
    no_abstract = read_jsonl(BUNDLED_CORPUS / "iclr2025_accepted_no_abstract.jsonl")
    titles = [r for r in no_abstract if "Max Tegmark" in r["authors"]]
    assert any(r["title"] == KAN_TITLE for r in titles)
    (folder / "papers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in papers))
    (folder / "papers_no_abstract.jsonl").write_text("".join(json.dumps(r) + "\n" for r in titles))
    index = root / "index"
    build_index(
        make_settings(index, embedding={"bundled_vectors": False}), [folder], embeddings=embeddings
    )
    with offline_app(index, root) as url:
        yield url


def open_page(browser: Any, url: str) -> Any:
    return open_chat(browser, url, timeout_ms=TIMEOUT)


ask = partial(ask_settled, timeout_ms=TIMEOUT)


def titles(reply: Any) -> list[str]:
    return [t.replace("\u2060", "").strip() for t in reply.locator("h3").all_inner_texts()]


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_a_paper_without_an_abstract_asked_after_an_author_list(app: str, browser: Any) -> None:
    page = open_page(browser, app)
    listed = ask(page, "Which papers did Max Tegmark co-author?", 0)
    assert any(KAN_TITLE in t for t in titles(listed)), titles(listed)

    kan = ask(page, "What does the KAN paper propose?", 1)
    shot(page, "followup-kan.png")
    text = kan.inner_text().replace("\u2060", "")
    shown = titles(kan)
    # Its record first, marked as having no abstract here: not an empty quoted summary.
    assert shown and shown[0] == f"[1] {KAN_TITLE}", (shown, text[:600])
    assert "not in the bundled corpus" in text, text[:600]
    assert "0 cited" not in text, text[:600]
    page.context.close()


def test_markup_in_a_question_is_shown_as_text_and_does_not_refuse_it(
    app: str, browser: Any
) -> None:
    page = open_page(browser, app)
    plain = ask(page, LIST, 0)
    assert len(titles(plain)) >= 2, titles(plain)

    marked = f"{LIST} <img src=x onerror=alert(1)> **bold** [link](http://x)"
    reply = ask(page, marked, 1)
    shot(page, "followup-markup.png")
    echo = page.get_by_test_id("stChatMessage").nth(2)
    assert echo.locator("img, strong, a").count() == 0  # shown as typed, nothing rendered
    assert "<img src=x onerror=alert(1)>" in echo.inner_text().replace("\u2060", "")
    text = reply.inner_text()
    assert "No ICLR 2025 abstract in the index covers this question" not in text, text[:400]
    assert titles(reply)[:2] == titles(plain)[:2], (titles(reply), titles(plain))
    page.context.close()


def test_math_in_a_comparison_cell_keeps_its_spaces(app: str, browser: Any) -> None:
    """3. The comparison table drops the spaces around inline math that the answer's text
    keeps: "the sequence length $N$, posing" shows as "lengthN," and "top-$k$ token" as
    "top-ktoken" (ui.papers_view._cell escapes each piece without `_spaced`)."""
    from playwright.sync_api import expect

    page = open_page(browser, app)
    ask(page, LIST, 0)
    compared = ask(page, "Compare the cited papers", 1)
    table = compared.locator("[class*='st-key-comparison-'] table")
    expect(table).to_be_visible(timeout=TIMEOUT)
    html = " ".join(c.inner_html() for c in table.locator("td").all())
    assert '<span class="katex">' in html, "no math in the compared cells"
    glued = re.findall(r'(\w+)<span class="katex">', html)
    shot(page, "followup-compare-math.png")
    assert not glued, glued  # "length" then the math, no space between
    page.context.close()


def test_a_comparison_reads_in_the_order_of_its_numbers(app: str, browser: Any) -> None:
    """4. "Compare the cited papers" typed: the table goes [1], [2], [3], [4], but the text
    above it went [2], [4], [1], [3] (each paper ranked by its sentences' match to the words
    "compare the cited papers"), so the reader meets the list's papers out of order."""
    page = open_page(browser, app)
    listed = ask(page, LIST, 0)
    assert len(titles(listed)) >= 3, titles(listed)
    compared = ask(page, "Compare the cited papers", 1)
    headings = compared.locator("[data-testid='stMarkdownContainer'] p strong + a")
    order = [int(t.strip("[]\u2060 ")) for t in headings.all_inner_texts()]
    assert len(order) >= 2, order
    assert order == sorted(order), order
    page.context.close()


def test_an_author_list_tells_a_researcher_nothing_to_run(app: str, browser: Any) -> None:
    """5. Tegmark's papers, all without an abstract: each line ended "`rag fetch openreview
    ICLR.cc/2025/Conference` gets it", a shell command, its backticks shown as typed (and, in
    words, a developer's command all the same, a later session found)."""
    page = open_page(browser, app)
    listed = ask(page, "Which papers did Max Tegmark co-author?", 0)
    text = listed.inner_text().replace("\u2060", "")
    assert "`" not in text, text[:500]  # no raw Markdown
    assert "rag fetch" not in text and "OpenReview page" in text
    page.context.close()


def test_a_pasted_question_over_the_limit_is_not_lost_silently(app: str, browser: Any) -> None:
    """6. Pasting 5,000 characters into the chat box leaves it empty, with no word about the
    4,000-character limit (typing stops at 4,000 and shows 4000/4000)."""
    page = open_page(browser, app)
    box = page.get_by_test_id("stChatInputTextArea")
    box.click()
    page.keyboard.insert_text(("What do ICLR 2025 papers say about long sequences? " * 100)[:5000])
    page.wait_for_timeout(500)
    held = len(box.input_value())
    said = page.get_by_text(re.compile(r"4,?000")).count()
    said += bool(re.search(r"4,?000", box.get_attribute("placeholder") or ""))  # the box says
    assert held > 0 or said > 0, "the pasted question vanished, and nothing says why"
    page.context.close()


def test_a_failed_model_says_what_to_do_on_the_page(app: str, browser: Any) -> None:
    """7. The unavailable local preset, chosen anyway: the reply says "start that server, or
    set llm.base_url (RAG_LLM__BASE_URL)", a setting the page has no place for."""
    from playwright.sync_api import expect

    page = open_page(browser, app)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stSelectbox").click()
    option = page.get_by_role("option").filter(has_text="Unavailable")
    expect(option.first).to_be_visible(timeout=TIMEOUT)
    option.first.click()
    wait_idle(page, timeout_ms=TIMEOUT)
    box = page.get_by_test_id("stChatInputTextArea")
    box.fill("What is FlexPrefill?")
    box.press("Enter")
    error = page.get_by_test_id("stChatMessage").nth(1).get_by_test_id("stAlert")
    expect(error).to_be_visible(timeout=TIMEOUT)
    text = error.inner_text().replace("\u2060", "")
    shot(page, "followup-model-error.png")
    assert "choose Offline in the model menu" in text or "choose another model" in text, text
    assert "RAG_" not in text and "llm.base_url" not in text and "--" not in text, text
    page.context.close()
