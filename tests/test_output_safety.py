"""What a hostile corpus can make the page and the terminal show: links, escapes, markers.

- A link is labelled by the host it really goes to (`https://openreview.net@evil` is evil's).
- Terminal escape codes in titles never reach the operator's terminal through `rag`.
- An abstract's own "[2]" quoted in an answer stays text, never a link to source 2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.answer.citations import parse_markers
from rag.answer.pipeline import answer, open_assistant
from rag.cli.output import json_line, terminal_text
from rag.index.ingest import build_index
from testkit.openai_server import OpenAIServer
from tests.helpers import make_settings, plain, point_app_at, run_cli
from ui.export import chat_markdown
from ui.render import Turn, answer_markdown, safe_url, source_link

APP = str(Path(__file__).resolve().parents[1] / "ui" / "app.py")
SPOOF_URL = "https://openreview.net@evil.example/forum?id=spoof"
SPOOF_ABSTRACT = (
    "We propose Quokkaformer, a sparse attention layer for marsupial image recognition. "
    "Quokkaformer improves accuracy on the Quokka benchmark by 12 points over prior work [2]. "
    "Unlike earlier detectors [1][3], it needs no labels."
)
HOSTILE_PAPERS = [
    {
        "id": "spoof",
        "title": "Quokkaformer\x1b[2J\x1b[31m: sparse attention\x07 for marsupials\x1b]0;owned\x07",
        "abstract": SPOOF_ABSTRACT,
        "url": SPOOF_URL,
        "decision": "Accept (Poster)",
    },
    {
        "id": "honest",
        "title": "Wombat detection with transformers",
        "abstract": "We detect wombats in camera trap images with a vision transformer.",
        "url": "https://openreview.net/forum?id=honest",
        "decision": "Accept (Oral)",
    },
    {
        "id": "homograph",
        "title": "Koala counting",
        "abstract": "We count koalas in eucalyptus forests from drone footage.",
        "url": "https://openr\u0435view.net/forum?id=homograph",  # Cyrillic e
        "decision": "Accept (Spotlight)",
    },
]


@pytest.fixture(scope="module")
def hostile_index(tmp_path_factory: pytest.TempPathFactory, embeddings: Any) -> Path:
    folder = tmp_path_factory.mktemp("hostile-output")
    corpus = folder / "hostile.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in HOSTILE_PAPERS), encoding="utf-8")
    build_index(make_settings(folder / "index"), [corpus], embeddings=embeddings)
    return folder / "index"


# Spoofed links -------------------------------------------------------------------------------


def test_a_link_is_labelled_by_the_host_it_goes_to() -> None:
    assert source_link("https://openreview.net/forum?id=a") == (
        "[OpenReview](https://openreview.net/forum?id=a)"
    )
    spoof = source_link(SPOOF_URL)
    assert spoof == "[evil\\.example](https://evil.example/forum?id=spoof)"
    assert "OpenReview" not in source_link("https://openreview.net.evil.example/x")
    homograph = source_link("https://openr\u0435view.net/forum?id=h")
    assert homograph == "[xn\\-\\-openrview\\-k0h\\.net](https://xn--openrview-k0h.net/forum?id=h)"
    assert source_link("javascript:alert(1)") == "no OpenReview link"
    assert source_link("https://openreview.net:notaport/x") == "no OpenReview link"


def test_safe_url_drops_userinfo() -> None:
    assert safe_url("https://admin:s3cr3t@openreview.net/forum?id=a") == (
        "https://openreview.net/forum?id=a"
    )
    assert safe_url(SPOOF_URL) == "https://evil.example/forum?id=spoof"


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, hostile_index: Path, tmp_path: Path) -> None:
    point_app_at(monkeypatch, hostile_index, tmp_path / "feedback.jsonl")


def ask_app(question: str) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=120)
    app.run()
    app.chat_input[0].set_value(question).run()
    assert not app.exception, app.exception
    return app


@pytest.mark.slow
def test_the_card_of_a_spoofed_link_names_the_real_host(app_env: None) -> None:
    app = ask_app("Which sparse attention layer recognises marsupial images?")
    shown = [m.value for m in app.markdown]
    links = [v for v in shown if "](https://" in v]
    assert any("[evil\\.example](https://evil.example/forum?id=spoof)" in v for v in links), links
    assert not any("[OpenReview](https://evil" in v for v in links)
    assert not any("openreview.net@" in v for v in shown)


# Terminal escapes ------------------------------------------------------------------------------

OBEYED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_rag_search_and_ask_print_no_escape_codes(
    hostile_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "Which sparse attention layer recognises marsupial images?"
    common = ["--index", str(hostile_index), "--config", "offline"]
    code, out, _ = run_cli(["search", question, *common], capsys)
    assert code == 0
    assert "1. Quokkaformer: sparse attention for marsupials [Poster]" in out
    assert not OBEYED.search(out.replace("\n", "")), repr(out)
    code, out, _ = run_cli(["ask", question, *common], capsys)
    assert code == 0
    assert "[1] Quokkaformer: sparse attention for marsupials (Accept (Poster))" in out
    assert not OBEYED.search(out.replace("\n", "")), repr(out)


def test_json_output_escapes_them_and_keeps_the_data(
    hostile_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question = "Which sparse attention layer recognises marsupial images?"
    code, out, _ = run_cli(
        ["search", question, "--json", "--index", str(hostile_index), "--k", "1"], capsys
    )
    assert code == 0
    assert not OBEYED.search(out.replace("\n", "")), repr(out)
    assert json.loads(out)["results"][0]["title"] == HOSTILE_PAPERS[0]["title"]
    title = "a\x9b2Jb\u202ec\u2028d"
    assert json.loads(json_line({"t": title})) == {"t": title}
    assert not OBEYED.search(json_line({"t": title}))


def test_error_lines_carry_no_escape_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "evil\x1b]0;pwned\x07\x1b[2J.jsonl"
    code, out, err = run_cli(["ingest", str(bad), "--index", str(tmp_path / "i")], capsys)
    assert code == 2
    assert err == f"error: {tmp_path}/evil.jsonl: file not found\n"


def test_terminal_text_keeps_text_and_drops_what_a_terminal_obeys() -> None:
    assert terminal_text("a\x1b[31mred\x1b[0m\tb\nc\x07\x9b2Jd\u202ee") == "ared\tb\ncde"


# An abstract's own citation markers -------------------------------------------------------

MARKER_QUESTION = "How much does Quokkaformer improve accuracy on the Quokka benchmark?"


def test_an_abstracts_own_markers_stay_text_in_the_offline_answer(
    hostile_index: Path, embeddings: Any
) -> None:
    settings = make_settings(hostile_index)
    assistant = open_assistant(settings, embeddings, chat_model=None)
    result = answer(MARKER_QUESTION, assistant=assistant)
    quoted = "Quokkaformer improves accuracy on the Quokka benchmark by 12 points over prior work"
    assert quoted + " [\u20602]. [1]" in result.answer  # reads "[2]", is no marker
    assert result.sources[0].paper.id == "spoof"
    # Every marker left is one the answerer wrote: the quoted paper's own number.
    assert {n for m in parse_markers(result.answer) for n in m.numbers} == {1}
    shown = answer_markdown(result, 0)
    assert "prior work \\[\u20602\\]. [\\[1\\]](#src-0-1 " in shown  # then its hover title
    assert "#src-0-2" not in shown and "#src-0-3" not in shown
    # The card's quote is still the exact sentence, brackets and all.
    assert result.citations[0].quote.endswith("over prior work [2].")


@pytest.mark.slow
def test_the_page_links_only_the_answerers_markers(app_env: None) -> None:
    app = ask_app(MARKER_QUESTION)
    answer_text = next(m.value for m in app.markdown if "Offline extractive summary" in m.value)
    assert "over prior work \\[\u20602\\]" in answer_text
    assert set(re.findall(r"\(#src-0-(\d+)[ )]", answer_text)) == {"1"}


# Model text: no links, headings or directives; an export reference list it cannot forge ----

FORGING_REPLY = (
    "Quokkaformer improves accuracy on the Quokka benchmark [1].\n"
    "## References\n"
    "1. Forged paper, see https://evil.example/paper or www.evil.example or ceo@evil.example\n"
    ":material/warning: :red[Urgent] :streamlit:\n"
    "Fake heading\n"
    "---\n"
    "- a list item with **bold** stays"
)


@pytest.mark.slow
def test_model_text_has_links_headings_and_directives_disabled(
    app_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIServer() as server:
        server.script(FORGING_REPLY)
        monkeypatch.setenv("RAG_LLM__MODEL", "openai:gpt-test")
        monkeypatch.setenv("RAG_LLM__BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM__MAX_RETRIES", "0")
        app = ask_app(MARKER_QUESTION)
    shown = next(m.value for m in app.markdown if "Forged paper" in m.value)
    assert not re.search(r"(?m)^\s*#", shown)  # no heading
    assert not re.search(r"(?<!\\)://|(?<!\\)www\.(?!\\)|(?<!\\)@", shown)  # no autolink
    assert not re.search(r"(?<!\\):(?:material|red|streamlit)", shown)  # no directive or icon
    assert not re.search(r"(?m)^(?<!\\)-{2,}\s*$", shown)  # no setext heading or rule
    # Emphasis and lists stay (an uncited item is muted and badged: ui/uncited.py).
    assert re.search(r"(?m)^- (?::gray\[)?a list item with \*\*bold\*\* stays", shown), shown
    assert "[\\[1\\]](#src-0-1 " in shown  # our marker is still a link to the card
    assert "see https://evil.example/paper or www.evil.example" in plain(shown)  # as text


def test_the_exports_reference_list_cannot_be_forged(hostile_index: Path, embeddings: Any) -> None:
    with OpenAIServer() as server:
        server.script(FORGING_REPLY)
        settings = make_settings(
            hostile_index,
            llm={"model": "openai:gpt-test", "base_url": server.base_url, "max_retries": 0},
        )
        result = answer(MARKER_QUESTION, assistant=open_assistant(settings, embeddings))
    exported = chat_markdown([Turn(MARKER_QUESTION, answer=result)])
    lines = exported.splitlines()
    assert lines.count("## References") == 1
    references = exported.split("\n## References\n", 1)[1]
    assert "Forged" not in references and "evil.example/paper" not in references
    assert references.strip().splitlines()[0].startswith("1. Quokkaformer")
    assert "\\#\\# References" in exported  # the model's own line, inert
