"""The Streamlit chat driven headless by AppTest, over a real index of real ICLR 2025 papers.

The app reads its settings from RAG_* variables, so each test points it at an index, a model
and a feedback file with monkeypatch.setenv. Rendering helpers are tested directly below.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.answer.citations import Citation, CitedAnswer
from rag.index.ingest import build_index
from rag.lang.messages import MESSAGES
from rag.types import Paper, RetrievedPaper
from testkit.openai_server import OpenAIServer, Reply
from tests.helpers import CORPUS_JSONL, make_settings, plain, point_app_at, read_jsonl
from ui.export import chat_markdown
from ui.feedback import RateLimit, latest_feedback
from ui.render import (
    Turn,
    display_text,
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
    feedback = tmp_path / "feedback.jsonl"
    point_app_at(monkeypatch, index_dir, feedback)
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


def banner(at: AppTest) -> Any:
    """The one-line offline banner (an expander holding the details), or None."""
    return next((e for e in at.main.expander if e.label.startswith("Offline")), None)


@pytest.mark.slow
def test_offline_chat_cites_the_right_paper_and_logs_feedback(app_env: Path) -> None:
    at = start()
    offline = banner(at)
    assert offline.label == "Offline: quoted extracts · Connect a model" and not at.info
    details = " ".join(m.value for m in offline.markdown)
    assert "OPENAI_API_KEY" in details and "local-server" in details
    assert at.sidebar.selectbox[0].value == "configured"
    assert at.sidebar.selectbox[0].format_func("configured") == "Offline: quoted extracts"
    sidebar = " ".join(plain(m.value) for m in at.sidebar.markdown)
    assert "**24** papers" in sidebar and "all-MiniLM-L6-v2" in sidebar

    ask(at, DARK_QUESTION)
    [turn] = turns(at)
    answer = turn.answer
    assert answer is not None and not answer.abstained and answer.model == "offline:extractive"
    first = answer.citations[0]
    assert first.paper_id == DARKBENCH
    assert first.quote in answer.sources[first.n - 1].paper.abstract
    # The answer's [n] links to the source of that number, with its title as hover text.
    shown = at.chat_message[1].markdown[0].value
    assert f'[\\[{first.n}\\]](#src-0-{first.n} "DarkBench' in shown
    # Every retrieved paper is listed under the answer, numbered by position, no gaps.
    titles = card_titles(at, 0)
    assert list(titles) == [f"src-0-{n}" for n in range(1, len(answer.sources) + 1)]
    assert titles[f"src-0-{first.n}"] == (
        f"[{first.n}] DarkBench: Benchmarking Dark Patterns in Large Language Models"
    )
    card_text = " ".join(m.value for m in at.chat_message[1].markdown)
    assert ":red-badge[Oral]" in card_text
    assert f"(https://openreview.net/forum?id={DARKBENCH})" in card_text
    # Each card sits collapsed in an expander, the cited sentence highlighted in the abstract;
    # the quote is not repeated beside it.
    cards = at.chat_message[1].expander
    assert [c.label for c in cards] == ["Card"] * len(answer.sources)
    abstract = cards[first.n - 1].markdown[-1].value
    assert f":orange-background[{display_text(first.quote)}]" in abstract
    assert not [m for m in at.chat_message[1].markdown if m.value.startswith("> ")]

    # Thumbs up goes to the JSONL log with ids, the question, the answer and its citations.
    at.feedback[0].set_value(1).run()
    [record] = read_jsonl(app_env)
    assert record["rating"] == "up" and record["question"] == DARK_QUESTION
    assert record["session"] == at.session_state["session_id"] and record["turn"] == turn.id
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


@pytest.mark.slow
def test_every_example_shown_is_answered_by_the_loaded_index(app_env: Path) -> None:
    at = start()
    labels = [b.label for b in at.button if b.key and b.key.startswith("example-")]
    # This 24-paper index on language models answers the DarkBench example, not FlashAttention.
    assert "Which benchmark detects dark patterns in large language models?" in labels
    assert not [q for q in labels if "FlashAttention" in q or "spatial intelligence" in q]
    for i in range(len(labels)):
        at = start()
        next(b for b in at.button if b.label == labels[i]).click().run()
        assert not at.exception
        [turn] = turns(at)
        assert turn.question == labels[i] and turn.answer is not None
        assert not turn.answer.abstained, labels[i]
        assert plain(at.chat_message[0].markdown[0].value) == labels[i]
        assert not [b for b in at.button if b.key and b.key.startswith("example-")]


@pytest.mark.slow
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
    # Every source under the filtered answer carries the Poster badge, and only that one.
    cards = " ".join(m.value for m in at.chat_message[3].markdown)
    assert cards.count(":blue-badge[Poster]") == len(at.chat_message[3].subheader) == 3
    assert ":red-badge[" not in cards and ":orange-badge[" not in cards
    # The header counts the sources shown (a list's judge may have checked more).
    cited = sum(c.paper_id in {s.paper.id for s in filtered.sources} for c in filtered.citations)
    assert f"**Sources** · {cited} cited of 3 shown" in cards


@pytest.mark.slow
def test_a_chinese_answers_labels_and_buttons_are_chinese(app_env: Path) -> None:
    at = start()
    ask(at, "大语言模型是如何用基准来评测的？")
    answer = turns(at)[0].answer
    assert answer is not None and not answer.abstained
    cards = " ".join(m.value for m in at.chat_message[1].markdown)
    assert "**来源** · 显示" in cards and "**Sources**" not in cards
    captions = " ".join(c.value for c in at.chat_message[1].caption)
    assert "回答者：" in captions and "编号以此列表为准" in captions
    # and so are its buttons and cards (a session in Chromium found them English)
    buttons = {b.label for b in at.chat_message[1].button}
    assert "在地图上显示" in buttons and buttons & {"比较所引论文", "比较排名靠前的来源"}
    assert not buttons & {"Show on map", "Compare the cited papers", "Compare the top sources"}
    assert {e.label for e in at.chat_message[1].expander} == {"卡片"}
    # each source's line too ("cited", "retrieved, not cited" stayed English)
    assert "**已引用**" in cards and "cited" not in cards.replace("uncited", "")
    ask(at, "有没有关于蛋白质折叠的古典音乐论文？")  # refused: its nearest papers, in Chinese
    assert turns(at)[1].answer is not None and turns(at)[1].answer.abstained
    assert "**最接近的论文（匹配度低）**" in " ".join(m.value for m in at.chat_message[3].markdown)
    ask(at, EVAL_QUESTION)  # an English question's labels stay English
    assert "**Sources** · " in " ".join(m.value for m in at.chat_message[5].markdown)
    assert "Show on map" in {b.label for b in at.chat_message[5].button}
    assert {e.label for e in at.chat_message[5].expander} == {"Card"}


@pytest.mark.slow
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
        assert banner(at) is None  # no offline banner: a model is configured
        menu = at.sidebar.selectbox[0]
        server_at = server.base_url.removesuffix("/v1")  # scheme, host and port only
        assert menu.format_func(menu.value) == f"openai:gpt-test at {server_at}"

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
    papers = [
        Paper(
            id=f"p{i}",
            title=f"Nearest <b>{i}</b>",
            abstract="About something else.",
            decision="Accept (Poster)",
            url=f"https://openreview.net/forum?id=p{i}",
        )
        for i in range(1, 6)
    ]
    refusal = ["No ICLR 2025 abstract in the index covers this question.", ""]
    refusal += [MESSAGES["en"]["nearest"], *(f"- {p.title}" for p in papers[:3])]
    sources = [RetrievedPaper(p, 0.1, 0.1) for p in papers]
    abstained = CitedAnswer(
        question="music?",
        standalone_question="music?",
        answer="\n".join(refusal),
        citations=[],
        sources=sources,
        abstained=True,
        model="offline:extractive",
        refusal=refusal[0],
        nearest=sources[:3],  # as rag.answer.pipeline.abstention keeps them
    )
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["turns"] = [
        Turn("music?", answer=abstained),
        Turn("again?", error="cannot connect to the server at http://127.0.0.1:9/v1"),
    ]
    at.run()
    assert not at.exception
    reply = at.chat_message[1]
    # The refusal, then the 3 closest papers once: not also as a list in the text.
    shown = [m.value for m in reply.markdown]
    assert plain(shown[0]) == "No ICLR 2025 abstract in the index covers this question."
    assert "**Closest papers, low match**" in shown
    titles = [plain(t.value) for t in reply.subheader]
    assert titles == [f"[{i}] Nearest <b>{i}</b>" for i in (1, 2, 3)]
    assert not [t for t in reply.subheader if t.proto.anchor]
    assert sum("Nearest <b>" in plain(v) for v in shown) == 0
    assert sum(":blue-badge[Poster]" in v and "closest, low match" in v for v in shown) == 3
    # Low-match papers are not worth a table: no "Compare the top sources" under a refusal.
    assert not [b for b in reply.button if str(b.label).startswith("Compare")]
    [error] = at.chat_message[3].error
    assert "Cannot connect to the server at http://127.0.0.1:9/v1" in plain(error.value)
    assert [b.label for b in at.chat_message[3].button] == ["Ask again"]


@pytest.mark.slow
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
    # A question asked before the index exists is not sent, and says why.
    ask(at, DARK_QUESTION)
    assert "Not sent: the index is not open" in plain(at.chat_message[1].error[0].value)
    build = next(b for b in at.button if b.label == "Build the index")

    build.click().run()
    assert not at.exception and not at.warning
    assert "Indexed 5 papers" in at.success[0].value
    assert "**5** papers" in " ".join(plain(m.value) for m in at.sidebar.markdown)
    # The index is open: the "Not sent ... (see above)" turn, pointing at a warning that is
    # gone, has gone too.
    assert not at.error and not at.chat_message and turns(at) == []
    ask(at, DARK_QUESTION)
    answer = turns(at)[0].answer
    assert answer is not None and answer.citations[0].paper_id == DARKBENCH


@pytest.mark.slow
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
        g = number[citation.paper_id]
        assert f"[{g}]" in second and "\\[" not in second.split("Quoted:")[0].replace(
            "\\[\u2060", ""
        )
        assert f"- [{g}] “{citation.quote}”" in plain(second)  # the quote, exact
    assert "\n---\n\n## References\n" in text


# Rendering helpers -----------------------------------------------------------------------

HOSTILE = (
    "Hi <script>alert(1)</script> <img src=x onerror=alert(2)> "
    "[x](javascript:alert(3)) :red[r] $x$ **b** &lt; `c`"
)


def test_the_page_draws_its_box_before_the_heavy_modules_load() -> None:
    """Issue 31: the modules ui/app.py imports at its top (those its header, its sidebar's frame
    and the chat box are drawn with) import no NumPy, Chroma, ONNX, LangChain or answer stage:
    those load after the box is on the page."""
    root = Path(APP).parents[1]
    tree = ast.parse(Path(APP).read_text(encoding="utf-8"))
    imports = [
        ast.unparse(node)
        for node in tree.body
        if isinstance(node, ast.Import)
        or (isinstance(node, ast.ImportFrom) and node.module != "__future__")
    ]
    heavy = ["pydantic", "numpy", "chromadb", "onnxruntime", "tokenizers", "langchain_core"]
    heavy += ["rag.answer", "rag.models.factory", "rag.index.papers", "ui.render", "ui.chat_view"]
    report = f"print([m for m in {heavy} if m in sys.modules])"
    code = "\n".join(["import streamlit", *imports, "import sys", report])
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", imports


def test_the_chat_box_stops_where_the_answerer_does() -> None:
    """The box's limit is read from rag.types (light, so the box is drawn first)."""
    import rag
    from rag.answer import pipeline

    assert rag.MAX_QUESTION_CHARS == pipeline.MAX_QUESTION_CHARS


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
    assert "**:orange-background[Second \\<b\\> one\\.]**" in shown
    assert plain(shown) == "First [a] sentence. **:orange-background[Second <b> one.]** Third one."


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
    assert "It works [1]." in text and "- [1] “It works.”" in text
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
    assert shown == "No index at /x\\: build it with `rag ingest` \\<b\\>\\[now\\]\\</b\\>"


# The model menu, feedback, the source list, math ----------------------------------------------


@pytest.mark.slow
def test_the_model_menu_switches_models_without_a_restart(
    app_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIServer() as server:
        monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
        monkeypatch.setenv("RAG_LLM__BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM__MAX_RETRIES", "0")
        at = start()
        menu = at.sidebar.selectbox[0]
        labels = list(menu.options)
        # The configured server first, then offline; no OpenAI without a key.
        assert labels[0] == f"openai:gpt-test at {server.base_url.removesuffix('/v1')}"
        assert "Offline: quoted extracts" in labels and "openai:gpt-4o-mini" not in labels

        server.script("DarkBench is a benchmark of dark design patterns in LLMs [1].")
        ask(at, DARK_QUESTION)
        assert turns(at)[0].answer.model == "openai:gpt-test"  # type: ignore[union-attr]
        assert len(server.requests) == 1

        at.sidebar.selectbox[0].set_value("offline").run()
        assert banner(at) is not None  # offline now: the banner is back
        ask(at, DARK_QUESTION)
        offline = turns(at)[1].answer
        assert offline is not None and offline.model == "offline:extractive"
        assert offline.citations[0].paper_id == DARKBENCH
        assert len(server.requests) == 1  # nothing was sent to the server

        at.sidebar.selectbox[0].set_value("configured").run()
        # A standalone question is not rewritten, even with a chat behind it (issue 21).
        server.script("Back on the server: DarkBench [1].")
        ask(at, DARK_QUESTION)
        back = turns(at)[2].answer
        assert back is not None and back.model == "openai:gpt-test"
        assert back.answer.startswith("Back on the server") and len(server.requests) == 2
        assert [t.question for t in turns(at)] == [DARK_QUESTION] * 3  # the chat was kept


def test_openai_is_offered_only_with_its_key(
    app_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-value")
    at = start()
    menu = at.sidebar.selectbox[0]
    assert "openai:gpt-4o-mini" in menu.options
    assert "sk-test-SECRET" not in str(at.sidebar)


@pytest.mark.slow
def test_feedback_has_ids_a_changed_rating_supersedes_and_down_asks_why(app_env: Path) -> None:
    at = start()
    ask(at, DARK_QUESTION)
    ask(at, EVAL_QUESTION)
    first, second = turns(at)
    at.feedback[0].set_value(1).run()  # up,
    at.feedback[0].set_value(0).run()  # then down:
    form = at.chat_message[1].get("form")[0]
    pills = at.chat_message[1].pills[0]
    assert pills.label == "What went wrong?" and "Wrong paper" in pills.options
    pills.set_value(["Wrong paper", "Missed a paper"])
    at.chat_message[1].text_input[0].input("It should cite the\u2028DarkBench paper")
    assert form is not None
    at.chat_message[1].button[-1].click().run()  # "Send"
    at.feedback[1].set_value(1).run()
    assert not at.exception

    raw = app_env.read_bytes()
    assert raw.isascii() and raw.count(b"\n") == 4  # ASCII-escaped: U+2028 splits no line
    records = read_jsonl(app_env)
    session = at.session_state["session_id"]
    assert [(r["session"], r["turn"], r["rating"]) for r in records] == [
        (session, first.id, "up"),
        (session, first.id, "down"),
        (session, first.id, "down"),
        (session, second.id, "up"),
    ]
    latest = latest_feedback(app_env)
    assert [(r["turn"], r["rating"]) for r in latest] == [(first.id, "down"), (second.id, "up")]
    assert latest[0]["reasons"] == ["Wrong paper", "Missed a paper"]
    assert latest[0]["comment"] == "It should cite the DarkBench paper"


@pytest.mark.slow
def test_feedback_is_rate_limited_per_session(app_env: Path) -> None:
    at = start()
    ask(at, DARK_QUESTION)
    for value in (1, 0, 1, 0):
        at.feedback[0].set_value(value).run()
    at.session_state["feedback_limit"] = RateLimit(limit=2)
    for value in (1, 0, 1):
        at.feedback[0].set_value(value).run()
    assert len(read_jsonl(app_env)) == 4 + 2
    assert "too many ratings" in at.toast[0].value
    # Another session has its own allowance.
    other = start()
    ask(other, DARK_QUESTION)
    other.feedback[0].set_value(1).run()
    assert len(read_jsonl(app_env)) == 7


@pytest.mark.slow
def test_the_sources_setting_changes_what_the_answer_shows(app_env: Path) -> None:
    at = start()
    at.sidebar.slider[0].set_value(2)
    ask(at, EVAL_QUESTION)
    at.sidebar.slider[0].set_value(8)
    ask(at, EVAL_QUESTION)
    few, many = (t.answer for t in turns(at))
    assert few is not None and many is not None
    # The uncited sources listed under the first answer are folded under the second: shown.
    for toggle in at.toggle:
        if toggle.key and toggle.key.startswith("repeats-"):
            toggle.set_value(True).run()
    assert len(card_titles(at, 0)) == len(few.sources) == 2
    assert len(card_titles(at, 1)) == len(many.sources) == 8
    assert [s.paper.id for s in many.sources[:2]] == [s.paper.id for s in few.sources]


MATH_ABSTRACT = (
    "Attention costs $O(N^2)$ for $N$ tokens. We propose the \\OOO{} framework with an "
    "\\underline{\\textit{O}}rthogonal cache. 2) Cumulative attention keeps $\\bv$ sparse."
)


def test_math_and_latex_macros_in_a_replayed_answer(app_env: Path) -> None:
    paper = Paper(
        id="m1",
        title="Fast $O(N)$ attention with \\textbf{OOO}",
        abstract=MATH_ABSTRACT,
        decision="Accept (Oral)",
        url="https://openreview.net/forum?id=m1",
    )
    quote = "2) Cumulative attention keeps $\\bv$ sparse."
    answer = CitedAnswer(
        question="q",
        standalone_question="q",
        answer=f"**Fast attention** [1]\n- {quote} [1]\n- Attention costs $O(N^2)$ [1]",
        citations=[Citation(1, "m1", paper.title, paper.url, paper.decision, quote, "Oral")],
        sources=[RetrievedPaper(paper, 1.0, 0.9)],
        abstained=False,
        model="offline:extractive",
    )
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["turns"] = [Turn("q", answer=answer)]
    at.run()
    assert not at.exception
    text = at.chat_message[1].markdown[0].value
    assert "costs $O(N^2)$" in text  # KaTeX math
    assert "- 2\\) Cumulative" in text  # not a nested list
    assert "keeps bv sparse" in text  # an unknown macro is text, not a KaTeX error
    [title] = at.chat_message[1].subheader
    assert plain(title.value) == "[1] Fast $O(N)$ attention with OOO"
    abstract = at.chat_message[1].expander[0].markdown[-1].value
    assert "costs $O(N^2)$ for $N$ tokens" in abstract
    assert "the OOO framework with an Orthogonal cache" in plain(abstract)
    assert "**:orange-background[2\\) Cumulative attention keeps bv sparse\\.]**" in abstract
    assert answer.citations[0].quote in paper.abstract  # the evidence itself is unchanged
