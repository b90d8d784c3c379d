"""The Streamlit chat driven headless by AppTest, over a real index of real ICLR 2025 papers.

The app reads its settings from RAG_* variables, so each test points it at an index, a model
and a feedback file with monkeypatch.setenv. Rendering helpers are tested directly below.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.answer import Citation, CitedAnswer
from rag.index import build_index
from rag.loaders import Paper
from rag.retrieve import RetrievedPaper
from tests.helpers import CORPUS_JSONL, make_settings, read_jsonl
from tests.openai_server import OpenAIServer, Reply
from ui.render import (
    Turn,
    chat_markdown,
    escape_answer,
    escape_message,
    escape_text,
    highlighted_abstract,
    link_markers,
    safe_url,
)

APP = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
DARKBENCH = "odjMSBSWRt"
DARK_QUESTION = "Which benchmark detects dark patterns in large language models?"
EVAL_QUESTION = "How are large language models evaluated with benchmarks?"


def plain(markdown: str) -> str:
    """What a reader sees of escaped Markdown text: the backslash escapes removed."""
    return re.sub(r"\\(.)", r"\1", markdown)


def tiered_papers(per_tier: int = 8) -> list[dict[str, Any]]:
    """Real papers on language models, `per_tier` of each decision (DarkBench among them)."""
    records = read_jsonl(CORPUS_JSONL)
    picked: list[dict[str, Any]] = []
    for tier in ("Oral", "Spotlight", "Poster"):
        picked += [
            r
            for r in records
            if tier in r["decision"] and "language model" in r["abstract"].lower()
        ][:per_tier]
    return picked


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ui-corpus") / "tiered.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in tiered_papers()), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory, corpus_file: Path, embeddings: Any) -> Path:
    path = tmp_path_factory.mktemp("ui-index")
    build_index(make_settings(path), [corpus_file], embeddings=embeddings)
    return path


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, index_dir: Path, tmp_path: Path) -> Path:
    """Point the app at the test index, the offline answerer and a fresh feedback log."""
    for name in ("RAG_CONFIG", "OPENAI_API_KEY", "RAG_CORPUS", "RAG_LLM__BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", str(index_dir))
    monkeypatch.setenv("RAG_LLM__MODEL", "offline")
    feedback = tmp_path / "feedback.jsonl"
    monkeypatch.setenv("RAG_UI__FEEDBACK_PATH", str(feedback))
    return feedback


def start() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def ask(at: AppTest, question: str) -> AppTest:
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    return at


def turns(at: AppTest) -> list[Turn]:
    return list(at.session_state["turns"])


def card_titles(at: AppTest, turn_index: int) -> dict[str, str]:
    """Anchor -> visible title of every numbered source card under answer `turn_index`."""
    message = at.chat_message[2 * turn_index + 1]
    return {
        h.proto.anchor: plain(h.value)
        for h in message.subheader
        if h.proto.anchor.startswith(f"src-{turn_index}-")
    }


def test_offline_chat_cites_the_right_paper_and_logs_feedback(app_env: Path) -> None:
    at = start()
    banner = " ".join(i.value for i in at.info)
    assert "Offline" in banner and "OPENAI_API_KEY" in banner and "local-server" in banner
    sidebar = " ".join(plain(m.value) for m in at.sidebar.markdown)
    assert "**offline:extractive**" in sidebar and "**24** papers" in sidebar
    assert "all-MiniLM-L6-v2" in sidebar
    examples = [b.label for b in at.button if b.key and b.key.startswith("example-")]
    assert len(examples) == 3

    ask(at, DARK_QUESTION)
    [turn] = turns(at)
    answer = turn.answer
    assert answer is not None and not answer.abstained and answer.model == "offline:extractive"
    first = answer.citations[0]
    assert first.paper_id == DARKBENCH
    assert first.quote in answer.sources[first.n - 1].paper.abstract
    # The answer's [n] links to the card of that source, and the card names the paper.
    shown = at.chat_message[1].markdown[0].value
    assert f"[\\[{first.n}\\]](#src-0-{first.n})" in shown
    titles = card_titles(at, 0)
    assert titles[f"src-0-{first.n}"] == (
        f"[{first.n}] DarkBench: Benchmarking Dark Patterns in Large Language Models"
    )
    assert len(titles) == len({c.n for c in answer.citations})
    card_text = " ".join(m.value for m in at.chat_message[1].markdown)
    assert ":red-badge[Oral]" in card_text
    assert f"(https://openreview.net/forum?id={DARKBENCH})" in card_text
    # The abstract sits collapsed in an expander, the cited sentence highlighted.
    abstract = at.chat_message[1].expander[0]
    assert abstract.label == "Abstract"
    assert f":orange-background[{escape_text(first.quote)}]" in abstract.markdown[0].value

    # Thumbs up goes to the JSONL log with the question, the answer and its citations.
    at.feedback[0].set_value(1).run()
    [record] = read_jsonl(app_env)
    assert record["rating"] == "up" and record["question"] == DARK_QUESTION
    assert record["answer"] == answer.answer
    assert record["citations"][0]["paper_id"] == DARKBENCH
    assert record["citations"][0]["quote"] == first.quote

    # A second question: the first turn is replayed above it, the input stays.
    ask(at, EVAL_QUESTION)
    assert [t.question for t in turns(at)] == [DARK_QUESTION, EVAL_QUESTION]
    assert [m.name for m in at.chat_message] == ["user", "assistant"] * 2
    assert plain(at.chat_message[2].markdown[0].value) == EVAL_QUESTION
    assert card_titles(at, 0) == titles
    assert len(at.chat_input) == 1
    assert not [b for b in at.button if b.key and b.key.startswith("example-")]

    new_chat = next(b for b in at.sidebar.button if b.label == "New chat")
    new_chat.click().run()
    assert turns(at) == [] and not at.chat_message


def test_an_example_question_is_asked_when_clicked(app_env: Path) -> None:
    at = start()
    example = next(b for b in at.button if b.key and b.key.startswith("example-"))
    example.click().run()
    assert not at.exception
    [turn] = turns(at)
    assert turn.question == example.label and turn.answer is not None
    assert plain(at.chat_message[0].markdown[0].value) == example.label
    assert not [b for b in at.button if b.key and b.key.startswith("example-")]


def test_filters_and_source_count_change_the_sources(app_env: Path) -> None:
    at = start()
    ask(at, EVAL_QUESTION)
    unfiltered = turns(at)[0].answer
    assert unfiltered is not None
    assert {s.paper.tier for s in unfiltered.sources} - {"Poster"}

    at.sidebar.multiselect[0].set_value(["Poster"])
    at.sidebar.slider[0].set_value(3)
    ask(at, EVAL_QUESTION)
    filtered = turns(at)[1].answer
    assert filtered is not None and turns(at)[1].tiers == ["Poster"]
    assert len(filtered.sources) == 3
    assert {s.paper.tier for s in filtered.sources} == {"Poster"}
    assert {s.paper.id for s in filtered.sources}.isdisjoint(
        {s.paper.id for s in unfiltered.sources}
    )
    # Every card under the filtered answer carries the Poster badge, and only that one.
    cards = " ".join(m.value for m in at.chat_message[3].markdown)
    assert cards.count(":blue-badge[Poster]") == len(at.chat_message[3].subheader) > 0
    assert ":red-badge[" not in cards and ":orange-badge[" not in cards


@pytest.mark.parametrize("status", [401, 500])
def test_llm_error_is_shown_and_the_chat_kept(
    app_env: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    with OpenAIServer() as server:
        monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
        monkeypatch.setenv("RAG_LLM__BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM__MAX_RETRIES", "0")
        server.script(Reply(status=status, content="scripted failure"))
        at = start()
        assert not at.info  # no offline banner: a model is configured
        assert "openai:gpt-test" in " ".join(plain(m.value) for m in at.sidebar.markdown)

        ask(at, DARK_QUESTION)
        [error] = at.error
        expected = "rejected the API key" if status == 401 else "answered 500"
        assert expected in plain(error.value) and "gpt-test" in plain(error.value)
        assert [t.question for t in turns(at)] == [DARK_QUESTION]
        assert plain(at.chat_message[0].markdown[0].value) == DARK_QUESTION
        assert server.requests[0].model == "gpt-test"
        assert "DarkBench" in server.requests[0].prompt_text

        # The model is back: asking again answers in place of the failed turn.
        server.script("DarkBench is a benchmark of dark design patterns in LLMs [1].")
        next(b for b in at.button if b.label == "Ask again").click().run()
        assert not at.exception and not at.error
        [turn] = turns(at)
        assert turn.question == DARK_QUESTION and turn.answer is not None
        assert [c.paper_id for c in turn.answer.citations] == [DARKBENCH]
        assert card_titles(at, 0)["src-0-1"].startswith("[1] DarkBench")


def test_replay_shows_an_abstention_with_its_nearest_papers_and_a_failed_turn(
    app_env: Path,
) -> None:
    paper = Paper(
        id="p1",
        title="Nearest <b>one</b>",
        abstract="About something else.",
        decision="Accept (Poster)",
        url="https://openreview.net/forum?id=p1",
    )
    abstained = CitedAnswer(
        question="music?",
        standalone_question="music?",
        answer="No ICLR 2025 abstract in the index covers this question.",
        citations=[],
        sources=[RetrievedPaper(paper, 0.1, 0.1)],
        abstained=True,
        model="offline:extractive",
    )
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["turns"] = [
        Turn("music?", answer=abstained),
        Turn("again?", error="cannot connect to the server at http://127.0.0.1:9/v1"),
    ]
    at.run()
    assert not at.exception
    reply = at.chat_message[1]
    assert "**Nearest papers**" in [m.value for m in reply.markdown]
    [title] = reply.subheader
    assert plain(title.value) == "Nearest <b>one</b>" and not title.proto.anchor
    assert any(":blue-badge[Poster]" in m.value for m in reply.markdown)
    [error] = at.chat_message[3].error
    assert "Cannot connect to the server at http://127.0.0.1:9/v1" in plain(error.value)
    assert [b.label for b in at.chat_message[3].button] == ["Ask again"]


def test_missing_index_offers_to_build_it(
    app_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    corpus = tmp_path / "five.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in tiered_papers()[:5]), encoding="utf-8")
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", str(tmp_path / "not-built-yet"))
    monkeypatch.setenv("RAG_CORPUS", json.dumps([str(corpus)]))
    at = start()
    assert "no index" in at.warning[0].value.lower()
    assert not at.chat_message
    build = next(b for b in at.button if b.label == "Build the index")

    build.click().run()
    assert not at.exception and not at.warning
    assert "Indexed 5 papers" in at.success[0].value
    assert "**5** papers" in " ".join(plain(m.value) for m in at.sidebar.markdown)
    ask(at, DARK_QUESTION)
    answer = turns(at)[0].answer
    assert answer is not None and answer.citations[0].paper_id == DARKBENCH


def test_export_numbers_the_cited_papers_chat_wide(app_env: Path) -> None:
    at = start()
    download = at.sidebar.get("download_button")[0]
    assert download.label == "Download chat" and download.proto.disabled
    ask(at, DARK_QUESTION)
    ask(at, EVAL_QUESTION)
    download = at.sidebar.get("download_button")[0]
    assert not download.proto.disabled
    chat = turns(at)
    text = chat_markdown(chat)

    assert f"## 1. {DARK_QUESTION}" in text and f"## 2. {EVAL_QUESTION}" in text
    head, references = text.split("## References\n", 1)
    entries = re.findall(
        r"^(\d+)\. (.+)\. <(https://openreview\.net/forum\?id=\w+)>$", references, flags=re.M
    )
    cited = list(dict.fromkeys(c.paper_id for t in chat if t.answer for c in t.answer.citations))
    assert [int(n) for n, _, _ in entries] == list(range(1, len(cited) + 1))
    assert [url.rsplit("=", 1)[1] for _, _, url in entries] == cited
    assert entries[0][1].startswith("DarkBench: Benchmarking Dark Patterns")
    assert "(Oral)" in entries[0][1]
    # In the text, each answer's [n] became the chat-wide number of the same paper.
    number = {pid: i for i, pid in enumerate(cited, start=1)}
    second = head.split(f"## 2. {EVAL_QUESTION}", 1)[1]
    for citation in chat[1].answer.citations:  # type: ignore[union-attr]
        assert f"\\[{number[citation.paper_id]}\\]" in second


# Rendering helpers -----------------------------------------------------------------------

HOSTILE = (
    "Hi <script>alert(1)</script> <img src=x onerror=alert(2)> "
    "[x](javascript:alert(3)) :red[r] $x$ **b** &lt; `c`"
)


def test_escaped_text_has_no_markup_left() -> None:
    shown = escape_text(HOSTILE)
    assert plain(shown) == HOSTILE
    assert not re.search(r"(?<!\\)[<>\[\]$*:]", shown)


def test_answer_keeps_emphasis_and_links_only_known_markers() -> None:
    text = "**Paper** says <b>x</b> [1], see [2, 3] and [9](javascript:alert(1))."
    shown = link_markers(text, lambda n: f"#src-0-{n}" if n in (1, 3) else None)
    assert shown.startswith("**Paper** says \\<b\\>x\\</b\\> [\\[1\\]](#src-0-1)")
    assert "see \\[2\\][\\[3\\]](#src-0-3)" in shown
    assert "](javascript" not in shown.replace("\\]", "")
    assert escape_answer("$E=mc^2$ ~~no~~") == "\\$E\\=mc^2\\$ \\~\\~no\\~\\~"


def test_safe_url_accepts_only_plain_http() -> None:
    assert safe_url("https://openreview.net/forum?id=abc") == "https://openreview.net/forum?id=abc"
    assert safe_url("https://x.org/a(b)") == "https://x.org/a%28b%29"
    for bad in ("javascript:alert(1)", "data:text/html,hi", "https://x.org/a b", "", "x.org"):
        assert safe_url(bad) is None


def test_highlight_marks_each_quote_once() -> None:
    abstract = "First [a] sentence. Second <b> one. Third one."
    shown = highlighted_abstract(abstract, ["Second <b> one.", "Second <b> one.", "missing"])
    assert shown.count(":orange-background[") == 1
    assert ":orange-background[Second \\<b\\> one\\.]" in shown
    assert plain(shown) == "First [a] sentence. :orange-background[Second <b> one.] Third one."


def cited(paper: Paper, citation: Citation) -> CitedAnswer:
    """An answer "It works [1]." from `paper`, cited as `citation`."""
    return CitedAnswer(
        question="q",
        standalone_question="q",
        answer="It works [1].",
        citations=[citation],
        sources=[RetrievedPaper(paper, 1.0, 0.9)],
        abstained=False,
        model="offline:extractive",
    )


def test_export_of_a_failed_turn_and_a_paper_without_link() -> None:
    paper = Paper(id="p1", title="A <i>title</i>", abstract="It works.", decision="")
    answer = cited(paper, Citation(1, "p1", paper.title, "", "", "It works."))
    text = chat_markdown([Turn("why <b>?", error="the model failed"), Turn("q", answer=answer)])
    assert "## 1. why \\<b\\>?" in text and "*No answer: the model failed*" in text
    assert "It works \\[1\\]." in text
    assert "1. A \\<i\\>title\\</i\\>. OpenReview id p1" in text


def test_export_names_the_tier_the_citation_carries() -> None:
    """The tier comes from the Citation (as the loaders parsed it), not from the decision text."""
    paper = Paper(id="p2", title="Oral-free title", abstract="It works.", decision="Accept")
    citation = Citation(1, "p2", paper.title, "", "Accept", "It works.", tier="Spotlight")
    answer = cited(paper, citation)
    references = chat_markdown([Turn("q", answer=answer)]).split("## References\n", 1)[1]
    assert "1. Oral-free title (Spotlight). OpenReview id p2" in references


def test_error_messages_keep_code_and_lose_markup() -> None:
    shown = escape_message("no index at /x: build it with `rag ingest` <b>[now]</b>")
    assert shown == "No index at /x: build it with `rag ingest` \\<b\\>\\[now\\]\\</b\\>"
