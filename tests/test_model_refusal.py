"""A model's refusal and a Chinese question's fixed text (issue 21, item 7), against the scripted
server over the seed index: a reply that refuses (in English or Chinese, citing or not) becomes
the app's own refusal in the question's language with the nearest papers; a Chinese question is
told to answer in Chinese, and its refusal, fallback note and heading are Chinese.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag.answer.grounding import FALLBACK_NOTE, OVERRULED_NOTE
from rag.answer.model_refusal import is_refusal
from rag.answer.pipeline import Assistant, answer, stream_answer
from rag.answer.prompts import NOT_ANSWERED
from rag.cli.main import main
from rag.lang.messages import MESSAGES
from rag.settings import Settings
from testkit.openai_server import OpenAIServer
from tests.scripted_model import llm_config, user_text

pytestmark = pytest.mark.usefixtures("no_model_env")

INT4 = "How can INT4 weight-activation quantization deal with outliers in activations?"
INT4_ZH = "INT4 量化时，激活值里的异常值该怎么处理？"
SUPPORTED = "Rotated Runtime Smooth smooths channel-wise outliers at runtime [1]."
ZH_REFUSED = MESSAGES["zh"]["model_refused"]


def assert_app_refusal(result: Any, lang: str) -> None:
    assert result.abstained and result.citations == [] and result.grounding == "refused"
    assert result.refusal == MESSAGES[lang]["model_refused"]
    assert result.answer.startswith(result.refusal + "\n\n" + MESSAGES[lang]["nearest"])
    assert result.nearest and all(
        f"- {s.paper.shown_title}" in result.answer for s in result.nearest
    )


def test_a_chinese_question_is_told_the_chinese_refusal_sentence(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script("How can INT4 quantization handle activation outliers?", SUPPORTED)
    answer(INT4_ZH, assistant=assistant)
    prompt = user_text(srv.requests[1])
    assert "write your answer in Chinese" in prompt
    assert f'say exactly: "{MESSAGES["zh"]["not_answered"]}"' in prompt
    assert NOT_ANSWERED not in prompt.split("</question>")[1]  # the English one is not asked for


@pytest.mark.parametrize(
    "reply",
    [
        f"{NOT_ANSWERED} The closest source is about outliers.",
        f"{NOT_ANSWERED} The closest, [1], is about smoothing outliers [1].",  # refusing, citing
        "这些来源没有回答这个问题。",
        "I cannot answer this from the given abstracts.",
    ],
)
def test_a_refusal_to_a_chinese_question_is_the_chinese_refusal(
    srv: OpenAIServer, assistant: Assistant, reply: str
) -> None:
    srv.script("How can INT4 quantization handle activation outliers?", reply)
    result = answer(INT4_ZH, assistant=assistant)
    assert len(srv.requests) == 2  # a refusal is not asked again
    assert_app_refusal(result, "zh")
    assert "closest" not in result.answer and "I cannot" not in result.answer


def test_a_refusal_while_citing_is_a_refusal_in_english_too(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script(f"{NOT_ANSWERED} [1] is about smoothing channel-wise outliers at runtime [1].")
    result = answer(INT4, assistant=assistant)
    assert len(srv.requests) == 1
    assert_app_refusal(result, "en")


def test_a_cited_answer_that_says_what_the_sources_lack_stays_cited(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script(SUPPORTED + " The sources do not mention its speed.")
    result = answer(INT4, assistant=assistant)
    assert not result.abstained and result.grounding == "cited" and result.uncited == 1
    assert is_refusal("The sources do not mention it.", cited=False)
    assert not is_refusal(SUPPORTED + " The sources do not mention it.", cited=True)
    assert not is_refusal("Outliers are smoothed away.", cited=False)


def test_a_streamed_english_refusal_to_a_chinese_question_ends_in_chinese(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script("How can INT4 quantization handle activation outliers?", NOT_ANSWERED)
    *_, final = list(stream_answer(INT4_ZH, assistant=assistant))
    assert not isinstance(final, str)
    assert_app_refusal(final, "zh")


def test_an_uncited_reply_to_a_chinese_question_falls_back_with_the_chinese_note(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script("How can INT4 quantization handle activation outliers?", "用平滑。", "用旋转。")
    result = answer(INT4_ZH, assistant=assistant)
    assert len(srv.requests) == 3 and result.grounding == "fallback"
    assert result.note == FALLBACK_NOTE["zh"] and result.answer.startswith(FALLBACK_NOTE["zh"])
    assert MESSAGES["zh"]["heading"] in result.answer
    assert result.citations and all(c.supported for c in result.citations)


def test_the_cli_prints_the_chinese_refusal(
    srv: OpenAIServer, seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = llm_config(tmp_path, srv)
    srv.script("How can INT4 quantization handle activation outliers?", NOT_ANSWERED)
    index = str(seed_settings.store.index_dir)
    code = main(["ask", INT4_ZH, "--index", index, "--config", str(config), "--json"])
    row = json.loads(capsys.readouterr().out)
    assert code == 0 and row["abstained"] and row["grounding"] == "refused"
    assert row["refusal"] == ZH_REFUSED and row["citations"] == [] and row["nearest"]


@pytest.mark.parametrize(
    "question", ["explain PivotMesh in simple terms", "PivotMesh 是做什么的？"]
)
def test_a_refusal_of_the_paper_the_question_names_is_overruled(
    srv: OpenAIServer, assistant: Assistant, question: str
) -> None:
    """The judge found the paper the question names first: a small model's "the sources do
    not answer" is its mistake, so the offline answer quotes that paper, saying why."""
    srv.script(NOT_ANSWERED, NOT_ANSWERED)  # the rewrite of a Chinese question, then the answer
    result = answer(question, assistant=assistant)
    lang = "zh" if "是" in question else "en"
    assert not result.abstained and result.grounding == "fallback"
    assert result.note == OVERRULED_NOTE[lang] and result.answer.startswith(result.note)
    assert result.citations and result.citations[0].n == 1
    assert "PivotMesh" in result.sources[0].paper.title
    assert all(c.supported for c in result.citations)


def test_a_refusal_of_a_topic_the_abstracts_may_not_cover_stands(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script(NOT_ANSWERED)
    assert_app_refusal(answer(INT4, assistant=assistant), "en")
