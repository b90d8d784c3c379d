"""Tests for the fake OpenAI server in testkit/openai_server.py.

They drive the server with the real ``openai`` client and LangChain's
``ChatOpenAI`` over HTTP, so the rest of the suite can trust it as a stand-in
for the OpenAI API. Run with ``python -m pytest tests/test_openai_server.py``.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from pydantic import SecretStr

from testkit.openai_server import EMBEDDING_DIM, OpenAIServer, Reply, fake_embedding


def make_client(srv: OpenAIServer, **kwargs: Any) -> openai.OpenAI:
    options: dict[str, Any] = {
        "base_url": srv.base_url,
        "api_key": "test",
        "timeout": 5.0,
        "max_retries": 0,
    }
    options.update(kwargs)
    return openai.OpenAI(**options)


def make_chat(srv: OpenAIServer, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-test",
        base_url=srv.base_url,
        api_key=SecretStr("test"),
        max_retries=0,
        timeout=5.0,
        **kwargs,
    )


def ask(client: openai.OpenAI, text: str = "Hello") -> str | None:
    completion = client.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": text}]
    )
    return completion.choices[0].message.content


# --- openai client --------------------------------------------------------


def test_non_streaming_round_trip(srv: OpenAIServer) -> None:
    srv.script("Paris is the capital of France.")
    completion = make_client(srv).chat.completions.create(
        model="gpt-mini-test",
        messages=[
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Capital of France?"},
        ],
    )
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "gpt-mini-test"
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Paris is the capital of France."
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert (
        completion.usage.total_tokens
        == completion.usage.prompt_tokens + completion.usage.completion_tokens
    )

    (request,) = srv.requests
    assert request.path == "/v1/chat/completions"
    assert request.model == "gpt-mini-test"
    assert request.stream is False
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert request.prompt_text == "Answer briefly.\nCapital of France?"
    assert request.headers["authorization"] == "Bearer test"


def test_streaming_round_trip(srv: OpenAIServer) -> None:
    text = "Retrieval augmented generation grounds answers in documents."
    srv.script(text)
    stream = make_client(srv).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "What is RAG?"}], stream=True
    )
    chunks = list(stream)
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert "".join(pieces) == text
    assert len(pieces) > 3
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert srv.requests[0].stream is True


def test_streaming_include_usage(srv: OpenAIServer) -> None:
    srv.script("two words")
    chunks = list(
        make_client(srv).chat.completions.create(
            model="gpt-test",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 2
    assert chunks[-2].choices[0].finish_reason == "stop"


def test_script_queue_then_default_reply(srv: OpenAIServer) -> None:
    client = make_client(srv)
    srv.script("first", Reply(content="second"))
    assert [ask(client), ask(client), ask(client)] == ["first", "second", "OK"]
    srv.default_reply = "fallback"
    assert ask(client) == "fallback"


def test_callable_reply_sees_request(srv: OpenAIServer) -> None:
    srv.script(lambda req: f"echo: {req['messages'][-1]['content']}")
    srv.default_reply = lambda req: Reply(content=req["model"])
    client = make_client(srv)
    assert ask(client, "ping") == "echo: ping"
    assert ask(client) == "gpt-test"


def test_broken_callable_surfaces_as_server_error(srv: OpenAIServer) -> None:
    def broken(request_json: dict[str, Any]) -> str:
        raise KeyError("no such field")

    srv.script(broken)
    with pytest.raises(openai.InternalServerError, match="KeyError"):
        ask(make_client(srv, max_retries=2))
    assert len(srv.requests) == 1


def test_reset_clears_queue_and_records(srv: OpenAIServer) -> None:
    client = make_client(srv)
    srv.script("a", "b")
    ask(client)
    srv.reset()
    assert srv.requests == []
    assert ask(client) == "OK"


def test_finish_reason_length(srv: OpenAIServer) -> None:
    srv.script(Reply(content="truncat", finish_reason="length"))
    completion = make_client(srv).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "x"}]
    )
    assert completion.choices[0].finish_reason == "length"


def test_models_list(srv: OpenAIServer) -> None:
    assert [m.id for m in make_client(srv).models.list()] == ["gpt-test", "text-embedding-test"]


def test_unknown_route_is_404(srv: OpenAIServer) -> None:
    with pytest.raises(openai.NotFoundError):
        make_client(srv).completions.create(model="gpt-test", prompt="x")


def test_concurrent_requests_each_get_one_reply(srv: OpenAIServer) -> None:
    replies = [f"reply {i}" for i in range(8)]
    srv.script(*replies)
    client = make_client(srv)
    answers: list[str | None] = []
    lock = threading.Lock()

    def worker() -> None:
        answer = ask(client)
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=worker) for _ in replies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == sorted(replies)  # type: ignore[type-var]
    assert len(srv.requests) == len(replies)


# --- errors, retries, timeouts ---------------------------------------------


def test_wrong_key_is_authentication_error(srv: OpenAIServer) -> None:
    srv.required_key = "sk-right"
    with pytest.raises(openai.AuthenticationError) as info:
        ask(make_client(srv, api_key="sk-wrong"))
    assert info.value.status_code == 401
    assert info.value.code == "invalid_api_key"
    assert ask(make_client(srv, api_key="sk-right")) == "OK"


def test_scripted_401_is_authentication_error(srv: OpenAIServer) -> None:
    srv.script(Reply(status=401, content="bad key"))
    with pytest.raises(openai.AuthenticationError, match="bad key"):
        ask(make_client(srv))


def test_missing_authorization_header_is_401(srv: OpenAIServer) -> None:
    request = urllib.request.Request(f"{srv.base_url}/models")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 401
    assert set(json.loads(info.value.read())["error"]) >= {"message", "type", "code"}


def test_rate_limit_then_success_with_default_retries(srv: OpenAIServer) -> None:
    srv.script(Reply(status=429, headers={"retry-after-ms": "10"}), "recovered")
    client = openai.OpenAI(base_url=srv.base_url, api_key="test", timeout=5.0)
    assert ask(client) == "recovered"
    assert len(srv.requests) == 2


def test_server_error_without_retries(srv: OpenAIServer) -> None:
    srv.script(Reply(status=500))
    with pytest.raises(openai.InternalServerError) as info:
        ask(make_client(srv))
    assert info.value.type == "server_error"


def test_delay_beyond_timeout_raises(srv: OpenAIServer) -> None:
    srv.script(Reply(content="too late", delay=3.0))
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        ask(make_client(srv, timeout=0.3))
    assert time.monotonic() - started < 2.0


def test_short_delay_within_timeout_succeeds(srv: OpenAIServer) -> None:
    srv.script(Reply(content="slow but fine", delay=0.2))
    assert ask(make_client(srv)) == "slow but fine"


def test_malformed_json_body_raises(srv: OpenAIServer) -> None:
    srv.script(Reply(raw_body='{"choices": [ not json'))
    with pytest.raises((ValueError, openai.APIError)):
        ask(make_client(srv))


def test_malformed_stream_raises(srv: OpenAIServer) -> None:
    srv.script(Reply(raw_body="data: {broken\n\n"))
    stream = make_client(srv).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "x"}], stream=True
    )
    with pytest.raises((ValueError, openai.APIError)):
        list(stream)


def test_dropped_connection_is_connection_error(srv: OpenAIServer) -> None:
    srv.script(Reply(close_connection=True))
    with pytest.raises(openai.APIConnectionError):
        ask(make_client(srv))


# --- LangChain ChatOpenAI ----------------------------------------------------


def test_langchain_invoke(srv: OpenAIServer) -> None:
    srv.script("LangChain says hi.")
    message = make_chat(srv).invoke([SystemMessage("Be kind."), HumanMessage("Hello?")])
    assert message.content == "LangChain says hi."
    assert message.usage_metadata is not None
    (request,) = srv.requests
    assert request.model == "gpt-test"
    assert request.messages == [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Hello?"},
    ]
    assert request.stream is False


def test_langchain_stream(srv: OpenAIServer) -> None:
    text = "Streaming through LangChain works in small pieces."
    srv.script(text)
    chunks = list(make_chat(srv).stream("Tell me something"))
    contents = [c.content for c in chunks if c.content]
    assert "".join(contents) == text  # type: ignore[arg-type]
    assert len(contents) > 3
    assert srv.requests[0].stream is True
    assert srv.requests[0].prompt_text == "Tell me something"


def test_langchain_stream_usage(srv: OpenAIServer) -> None:
    srv.script("one two three")
    chunks = list(make_chat(srv, stream_usage=True).stream("count"))
    assert srv.requests[0].json["stream_options"] == {"include_usage": True}
    total = chunks[0]
    for chunk in chunks[1:]:
        total += chunk
    assert total.content == "one two three"
    assert total.usage_metadata is not None
    assert total.usage_metadata["output_tokens"] == 3


def test_langchain_auth_error(srv: OpenAIServer) -> None:
    srv.required_key = "sk-right"
    with pytest.raises(openai.AuthenticationError):
        make_chat(srv).invoke("hi")


# --- embeddings ----------------------------------------------------------------


def test_embeddings_shape_and_determinism(srv: OpenAIServer) -> None:
    client = make_client(srv)
    texts = ["the cat sat", "a dog barked", "the cat sat"]
    response = client.embeddings.create(
        model="text-embedding-test", input=texts, encoding_format="float"
    )
    assert [d.index for d in response.data] == [0, 1, 2]
    vectors = [d.embedding for d in response.data]
    assert all(len(v) == EMBEDDING_DIM for v in vectors)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0) for v in vectors)
    assert vectors[0] == vectors[2] != vectors[1]
    assert vectors[0] == pytest.approx(fake_embedding("the cat sat"))
    assert response.model == "text-embedding-test"

    again = client.embeddings.create(
        model="text-embedding-test", input="the cat sat", encoding_format="float"
    )
    assert again.data[0].embedding == vectors[0]


def test_embeddings_default_base64_encoding(srv: OpenAIServer) -> None:
    response = make_client(srv).embeddings.create(
        model="text-embedding-test", input="shared words here"
    )
    assert srv.requests[0].json["encoding_format"] == "base64"
    assert response.data[0].embedding == pytest.approx(
        fake_embedding("shared words here"), abs=1e-6
    )


def test_embeddings_token_ids_and_dimensions(srv: OpenAIServer) -> None:
    client = make_client(srv)
    single = client.embeddings.create(model="m", input=[1, 2, 3], encoding_format="float")
    assert len(single.data) == 1
    batch = client.embeddings.create(model="m", input=[[1, 2, 3], [4, 5]], encoding_format="float")
    assert [len(d.embedding) for d in batch.data] == [EMBEDDING_DIM, EMBEDDING_DIM]
    assert batch.data[0].embedding == single.data[0].embedding
    small = client.embeddings.create(model="m", input="x", dimensions=8, encoding_format="float")
    assert len(small.data[0].embedding) == 8


def test_embeddings_similar_texts_are_closer(srv: OpenAIServer) -> None:
    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    query = fake_embedding("vector store retrieval")
    assert cos(query, fake_embedding("retrieval from a vector store")) > cos(
        query, fake_embedding("baking bread")
    )


def test_langchain_openai_embeddings(srv: OpenAIServer) -> None:
    # Token-length checking needs tiktoken's downloaded vocabulary, unavailable offline.
    embeddings = OpenAIEmbeddings(
        model="text-embedding-test",
        base_url=srv.base_url,
        api_key=SecretStr("test"),
        check_embedding_ctx_length=False,
        max_retries=0,
    )
    docs = embeddings.embed_documents(["alpha beta", "gamma"])
    assert len(docs) == 2 and all(len(v) == EMBEDDING_DIM for v in docs)
    assert embeddings.embed_query("alpha beta") == pytest.approx(docs[0])
    assert srv.requests[0].path == "/v1/embeddings"


def test_empty_embedding_input_is_400(srv: OpenAIServer) -> None:
    with pytest.raises(openai.BadRequestError):
        make_client(srv).embeddings.create(model="m", input=[], encoding_format="float")


# --- lifecycle -------------------------------------------------------------------


def test_start_stop_releases_port() -> None:
    server = OpenAIServer().start()
    port = server.port
    assert server.base_url == f"http://127.0.0.1:{port}/v1"
    server.script(Reply(content="never sent", delay=30))
    errors: list[Exception] = []

    def pending_request() -> None:
        try:
            ask(make_client(server))
        except Exception as exc:
            errors.append(exc)

    waiter = threading.Thread(target=pending_request)
    waiter.start()
    time.sleep(0.1)
    started = time.monotonic()
    server.stop()
    waiter.join(timeout=5)
    # Stopping must not wait out the 30 s delay; the pending client sees a dropped connection.
    assert time.monotonic() - started < 2.0
    assert len(errors) == 1 and isinstance(errors[0], openai.APIConnectionError)
    with pytest.raises(RuntimeError):
        _ = server.base_url
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen()
