"""What a local model's failures become (issue 21), against the scripted server over a real index:
an uncited or marker-only reply is asked again, then replaced by the offline answer; the reply
limit goes in the field OpenAI-compatible servers read; the prompt fits the context window, and
a context-length refusal is retried with fewer sources; the rewrite step is checked; a batch and
a conversation keep their answers when one question fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag.answer.context_fit import estimate_tokens, prompt_tokens
from rag.answer.grounding import FALLBACK_NOTE, STRICT_INSTRUCTION, uncited_sentences
from rag.answer.pipeline import Assistant, answer, open_assistant, stream_answer
from rag.answer.rewrite_check import accepted, needs_rewrite
from rag.cli.main import main
from rag.models.factory import is_openai_api, make_chat_model
from rag.models.minilm import LocalEmbeddings
from rag.settings import Settings, with_overrides
from testkit.openai_server import OpenAIServer, Reply
from tests.scripted_model import llm_config, llm_settings, user_text

pytestmark = pytest.mark.usefixtures("no_model_env")

INT4 = "How can INT4 weight-activation quantization deal with outliers in activations?"
SUPPORTED = "Rotated Runtime Smooth smooths channel-wise outliers at runtime [1]."
MDM = "What did the masked diffusion language model paper find about the reverse curse?"


def test_an_uncited_reply_is_asked_again_then_the_offline_answer_stands_in(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script("Outliers are handled by smoothing.", "They use rotation.")
    result = answer(INT4, assistant=assistant)
    first, second = srv.requests
    assert STRICT_INSTRUCTION not in user_text(first) and user_text(second).endswith(
        STRICT_INSTRUCTION
    )
    assert result.grounding == "fallback" and result.offline
    assert result.answer.startswith(FALLBACK_NOTE["en"]) and result.note == FALLBACK_NOTE["en"]
    assert result.citations and all(c.supported for c in result.citations)  # quotes
    assert result.as_json()["grounding"] == "fallback"


def test_a_marker_only_reply_is_not_a_cited_answer(srv: OpenAIServer, assistant: Assistant) -> None:
    srv.script("[1] [2]", SUPPORTED)
    result = answer(INT4, assistant=assistant)
    assert len(srv.requests) == 2
    assert result.grounding == "reasked" and not result.offline
    (citation,) = result.citations
    assert citation.supported and "Runtime Smooth" in citation.quote


def test_bare_titles_with_markers_are_not_a_cited_answer(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    """Issue 29, item 6: Qwen2.5-Coder-0.5B answered "[1] CHASE-SQL" and "[1] SCBench [2]
    ThinK", shown as cited with no claim a quote supports. Titles claim nothing: asked
    again, then the offline answer."""
    titles = [s.paper.title for s in assistant.retriever.search(INT4, k=5)]
    first = f"[1] {titles[0]}"
    mixed = f"[1] {titles[1].split(':')[0]} [2] {titles[0].split(':')[0]}"
    srv.script(first, mixed)
    result = answer(INT4, assistant=assistant)
    assert len(srv.requests) == 2
    assert result.grounding == "fallback" and result.offline
    assert result.citations and all(c.supported for c in result.citations)


def test_a_marker_opening_the_reply_cites_the_sentence_it_opens(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    """Qwen2.5-Coder writes "[1] claim." with nothing before the marker: a cited claim."""
    srv.script("[1] Rotated Runtime Smooth smooths channel-wise outliers at runtime.")
    result = answer(INT4, assistant=assistant)
    assert len(srv.requests) == 1 and result.grounding == "cited" and result.uncited == 0
    (citation,) = result.citations
    assert citation.supported and "Runtime Smooth" in citation.quote


def test_a_second_reply_copying_the_example_falls_back(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    """SmolLM2 answers the stricter prompt with its example, cited [1]: not found in source 1's
    abstract, so the offline answer stands in."""
    copied = "FlexPrefill chooses a sparse attention pattern for each input [1]."
    assert copied.split(" [")[0] in STRICT_INSTRUCTION
    srv.script("Outliers are handled by smoothing.", copied)
    result = answer(INT4, assistant=assistant)
    assert len(srv.requests) == 2 and result.grounding == "fallback" and result.offline


def test_a_cited_reply_is_kept_and_its_uncited_sentences_counted(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script(SUPPORTED + " This is a well known problem.")
    result = answer(INT4, assistant=assistant)
    assert len(srv.requests) == 1 and result.grounding == "cited" and result.uncited == 1
    text = "A claim [1]. Another one.\n- listed [2]\nHeading:\nIts claim. [2] Then this."
    assert uncited_sentences(text) == ["Another one.", "Then this."]
    # A numbered list's "1." is not a sentence of its own.
    assert uncited_sentences("1. A claim [1].\n2) Not cited.") == ["Not cited."]


def test_a_streamed_uncited_reply_falls_back_too(srv: OpenAIServer, assistant: Assistant) -> None:
    srv.script("Nothing cited here.", "[1]")
    *pieces, final = list(stream_answer(INT4, assistant=assistant))
    assert "".join(str(p) for p in pieces) == "Nothing cited here."
    assert final.grounding == "fallback" and final.offline and len(srv.requests) == 2


def test_the_reply_limit_is_max_tokens_for_compatible_servers(
    srv: OpenAIServer, assistant: Assistant, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv.script(SUPPORTED)
    answer(INT4, assistant=assistant)
    body = srv.requests[0].json
    assert body["max_tokens"] == 700 and "max_completion_tokens" not in body
    assert is_openai_api(None) and is_openai_api("https://api.openai.com/v1")
    assert not is_openai_api(srv.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    own: Any = make_chat_model(assistant.settings.llm.model_copy(update={"base_url": None}))
    assert own.max_tokens == 700 and not own.extra_body  # OpenAI's API: max_completion_tokens


def test_fifteen_sources_fit_a_2048_token_window(
    srv: OpenAIServer, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    settings = llm_settings(seed_settings, srv, context_window=2048, max_tokens=200)
    settings = with_overrides(settings, {"retrieval": {"k": 15}})
    small = open_assistant(settings, embeddings=embeddings)
    srv.script(SUPPORTED)
    result = answer(INT4, assistant=small)
    prompt = srv.requests[0].messages
    assert sum(estimate_tokens(m["content"]) + 8 for m in prompt) <= 2048 - 200
    shown = user_text(srv.requests[0]).count('<source n="')
    assert 3 <= shown < len(result.sources) == 15  # fewer sources, the rest listed, uncited
    assert result.grounding == "cited"


def test_a_context_length_refusal_is_retried_with_the_servers_window(
    srv: OpenAIServer, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    settings = with_overrides(llm_settings(seed_settings, srv), {"retrieval": {"k": 15}})
    big = open_assistant(settings, embeddings=embeddings)
    refusal = "Requested tokens (5120) exceed context window of 2048"
    srv.script(Reply(status=400, content=refusal), SUPPORTED, SUPPORTED)
    result = answer(INT4, assistant=big)
    first, second = srv.requests
    assert user_text(second).count("<source") < user_text(first).count("<source")
    assert prompt_tokens_of(second) <= 2048 - 700 and result.grounding == "cited"
    answer(INT4, assistant=big)  # the window is remembered: the next prompt fits at once
    assert len(srv.requests) == 3 and prompt_tokens_of(srv.requests[2]) <= 2048 - 700


def test_an_empty_stream_is_asked_whole_and_its_context_refusal_retried(
    srv: OpenAIServer, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    """llama-cpp-python streams nothing for a prompt longer than its window (HTTP 200, no
    event); asked without streaming it says so, and the prompt is fitted to what it said."""
    settings = with_overrides(llm_settings(seed_settings, srv), {"retrieval": {"k": 15}})
    big = open_assistant(settings, embeddings=embeddings)
    said = "This model's maximum context length is 2048 tokens. However, you requested 5120."
    srv.script(Reply(raw_body=""), Reply(status=400, content=said), SUPPORTED)
    *pieces, final = list(stream_answer(INT4, assistant=big))
    empty, whole, again = srv.requests
    assert empty.stream and not whole.stream and again.stream
    assert user_text(again).count("<source") < user_text(whole).count("<source")
    assert prompt_tokens_of(again) <= 2048 - 700
    assert "".join(str(p) for p in pieces) == SUPPORTED and final.grounding == "cited"


def test_an_empty_stream_of_a_prompt_that_fits_is_answered_whole(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    srv.script(Reply(raw_body=""), SUPPORTED)
    *pieces, final = list(stream_answer(INT4, assistant=assistant))
    assert [r.stream for r in srv.requests] == [True, False]
    assert pieces == [SUPPORTED] and final.grounding == "cited"


def test_a_context_error_event_inside_a_stream_is_retried_with_fewer_sources(
    srv: OpenAIServer, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    """llama.cpp's own server can report it as an error event in the stream (no HTTP status)."""
    settings = with_overrides(llm_settings(seed_settings, srv), {"retrieval": {"k": 15}})
    big = open_assistant(settings, embeddings=embeddings)
    event = {"error": {"code": 400, "message": "the request exceeds the available context size"}}
    srv.script(Reply(raw_body=f"data: {json.dumps(event)}\n\n"), SUPPORTED)
    *_, final = list(stream_answer(INT4, assistant=big))
    first, second = [r for r in srv.requests if r.path == "/v1/chat/completions"]
    # The event did not say the window: the server was asked (llama.cpp's /props, Ollama's).
    assert [r.path for r in srv.requests][1:3] == ["/props", "/api/show"]
    assert user_text(second).count("<source") < user_text(first).count("<source")
    assert final.grounding == "cited"


def prompt_tokens_of(request: Any) -> int:
    from langchain_core.messages import HumanMessage

    return prompt_tokens([HumanMessage(m["content"]) for m in request.messages])


def test_the_rewrite_step_runs_only_for_questions_that_lean_on_the_conversation() -> None:
    assert not needs_rewrite(INT4)
    for follow_up in ("and how fast is it?", "summarize the second one", "what about [2]?"):
        assert needs_rewrite(follow_up)
    assert needs_rewrite("这篇论文的方法是什么？")


def test_a_rewrite_that_is_not_one_question_of_its_own_is_refused() -> None:
    turns = [("user", "Which papers speed up prefill?"), ("assistant", "FlexPrefill does [1].")]
    titles = ["ZETA: Leveraging Z-order Curves"]
    question = "how fast is it?"
    good = "How fast is FlexPrefill?"
    assert accepted(good, question, turns, titles) == good
    for bad in (
        "[1] ZETA: Leveraging Z-order Curves",
        "FlexPrefill does [1].",
        "Which papers speed up prefill?",
        "ZETA: Leveraging Z-order Curves",
        "How fast is it? And how big is it?",
        "",
    ):
        assert accepted(bad, question, turns, titles) is None, bad
    assert accepted("它有多快？", "它有多快？", turns) is None  # not translated
    assert accepted("<question>", question, turns) is None  # SmolLM2 echoes the fence
    # A translation that lost the question's own terms answers another question (SmolLM2).
    zh = "INT4 量化时，激活值里的异常值该怎么处理？"
    assert accepted("What is the impact of AI on human creativity?", zh, []) is None
    assert accepted("How does INT4 quantization handle outliers?", zh, []) is not None


def test_a_rewrite_echoing_the_fence_is_read_past_it(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    history = [{"role": "user", "content": MDM}, {"role": "assistant", "content": "They do [1]."}]
    srv.script(
        "<question>\nHow fast is the masked diffusion language model?\n</question>", SUPPORTED
    )
    result = answer("and how fast is it?", history, assistant=assistant)
    assert result.standalone_question == "How fast is the masked diffusion language model?"


def test_a_rewrite_copying_the_previous_question_is_not_searched(
    srv: OpenAIServer, assistant: Assistant
) -> None:
    history = [{"role": "user", "content": MDM}, {"role": "assistant", "content": "They do [1]."}]
    srv.script(MDM, SUPPORTED)
    result = answer("and how fast is it?", history, assistant=assistant)
    assert result.standalone_question == "and how fast is it?"


def test_a_batch_keeps_going_after_a_failed_question(
    srv: OpenAIServer, seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = llm_config(tmp_path, srv)
    batch = tmp_path / "questions.txt"
    batch.write_text(f"{INT4}\n{INT4}\n")
    srv.script(Reply(status=500, content="boom", headers={"x-should-retry": "false"}), SUPPORTED)
    index = str(seed_settings.store.index_dir)
    code = main(["ask", "--batch", str(batch), "--index", index, "--config", str(config), "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 2 and len(lines) == 2
    assert "500" in lines[0]["error"] and lines[1]["grounding"] == "cited"


@pytest.mark.slow  # over a second on 2 cores
def test_a_timed_out_second_turn_keeps_the_first_answer(
    srv: OpenAIServer, seed_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "llm.toml"
    config.write_text(
        f'[llm]\nmodel = "openai:gpt-test"\nbase_url = "{srv.base_url}"\n'
        "max_retries = 0\ntimeout = 1.5\n"
    )
    conversation = tmp_path / "conversation.jsonl"
    conversation.write_text(json.dumps([INT4, MDM]) + "\n")
    srv.script(SUPPORTED, Reply(content="late [1]", delay=5))
    index = str(seed_settings.store.index_dir)
    args = ["ask", "--conversation", str(conversation), "--index", index, "--config", str(config)]
    code = main([*args, "--json"])
    (line,) = capsys.readouterr().out.splitlines()
    first, second = json.loads(line)["turns"]
    assert code == 2 and first["grounding"] == "cited" and "Runtime Smooth" in first["answer"]
    assert second["question"] == MDM and "llm.timeout" in second["error"]
