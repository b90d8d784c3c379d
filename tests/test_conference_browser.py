"""The whole conference in real Chromium (issue 30): a paper without an abstract in the corpus
and a person's papers, asked in the chat page.

`streamlit run ui/app.py` over a small real index: papers with abstracts from the bundle, and
from the no-abstract list KAN and Max Tegmark's two other papers (title records), offline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag.index.ingest import build_index
from rag.settings import BUNDLED_CORPUS
from testkit.streamlit_app import ask_turn, offline_app
from tests.helpers import make_settings

pytestmark = pytest.mark.slow

TIMEOUT = 120_000
KAN = "KAN: Kolmogorov–Arnold Networks"


def bundled(name: str) -> list[dict[str, Any]]:
    text = (BUNDLED_CORPUS / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, embeddings: Any) -> Iterator[str]:
    root = tmp_path_factory.mktemp("conference-browser")
    corpus = root / "corpus"
    corpus.mkdir()
    papers = bundled("iclr2025.jsonl")[:40]
    titles = [
        r for r in bundled("iclr2025_accepted_no_abstract.jsonl") if "Max Tegmark" in r["authors"]
    ]
    (corpus / "papers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in papers))
    (corpus / "papers_no_abstract.jsonl").write_text("".join(json.dumps(r) + "\n" for r in titles))
    index = root / "index"
    build_index(make_settings(index), [corpus], embeddings=embeddings)
    with offline_app(index, root, PYTHONPATH=str(Path(__file__).resolve().parents[1])) as url:
        yield url


def ask(page: Any, question: str, turn: int) -> Any:
    return ask_turn(page, question, turn, TIMEOUT)


def test_kan_is_found_and_marked_and_tegmarks_papers_are_listed(app: str, browser: Any) -> None:
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.goto(app)
    expect(page.get_by_test_id("stSidebar")).to_contain_text("papers", timeout=TIMEOUT)

    first = ask(page, "What does the KAN paper propose?", 0)
    expect(first.locator("h3").first).to_contain_text(f"[1] {KAN}")
    card = page.locator(".st-key-card-0-1")
    expect(card).to_contain_text("abstract not in the bundled corpus")
    expect(card).to_contain_text("cited")
    assert "not cited" not in card.inner_text()
    expect(first).to_contain_text("Accept (Oral)")
    expect(first).to_contain_text("Max Tegmark")
    # Only KAN's record is cited: no other paper's abstract stands in for it.
    others = first.locator("[class*='st-key-card-0-']").all_inner_texts()[1:]
    assert all("retrieved, not cited" in text for text in others), others

    second = ask(page, "Which papers did Max Tegmark co-author?", 1)
    titles = [t.strip() for t in second.locator("h3").all_inner_texts()]
    assert len(titles) == 3, titles
    assert titles[0] == f"[1] {KAN}" or any(KAN in t for t in titles)
    expect(second).to_contain_text("Not All Language Model Features Are One-Dimensionally Linear")
    expect(second).to_contain_text("Efficient Dictionary Learning with Switch Sparse Autoencoders")
    page.close()
