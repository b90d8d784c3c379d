"""Turn settings into models: embeddings and chat models are built here and nowhere else."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from rag.errors import ModelError
from rag.models.minilm import LocalEmbeddings
from rag.settings import EmbeddingSettings, LLMSettings
from rag.types import OFFLINE_MODEL

__all__ = [
    "chat_model_name",
    "embeddings_name",
    "vectors_of",
    "is_openai_api",
    "make_chat_model",
    "make_embeddings",
    "model_error_message",
]

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def make_embeddings(settings: EmbeddingSettings) -> Embeddings:
    """The embeddings named in config: the bundled local model or OpenAI's."""
    if settings.provider == "local":
        return LocalEmbeddings(batch_size=settings.batch_size, backend=settings.backend)
    from langchain_openai import OpenAIEmbeddings

    key = _api_key(settings.api_key_env)
    if not key and not settings.base_url:
        raise ModelError(
            "embedding.provider = 'openai' needs an API key",
            hint="embedding_key",
            hint_args={"variable": settings.api_key_env},
        )
    # By the fields' aliases (base_url, api_key), which the pydantic plugin does not accept
    # as keywords.
    options: dict[str, Any] = {"base_url": settings.base_url, "api_key": key or "not-needed"}
    return OpenAIEmbeddings(
        model=settings.model,
        chunk_size=settings.batch_size,
        check_embedding_ctx_length=False,  # its tiktoken check would download encodings
        **options,
    )


def _api_key(variable: str) -> str | None:
    """The API key in `variable`, refused (naming the variable) if no HTTP header can carry it."""
    from rag.common.redact import check_header

    key = os.environ.get(variable)
    if key:
        try:
            check_header(variable, "Authorization", key)
        except ValueError as e:
            raise ModelError(str(e)) from None
    return key


def embeddings_name(embeddings: Embeddings) -> str:
    name = getattr(embeddings, "name", None) or getattr(embeddings, "model", None)
    return str(name or type(embeddings).__name__)


def vectors_of(embeddings: Embeddings) -> str:
    """The precision of the vectors `embeddings` gives: int8 for the bundled MiniLM's int8
    backend, float32 for it otherwise and for any other model."""
    return str(getattr(embeddings, "precision", "float32"))


def chat_model_name(settings: LLMSettings) -> str:
    """`provider:model` that answers, or `offline:extractive` when no model is configured."""
    if settings.model == "offline":
        return OFFLINE_MODEL
    if settings.model == "auto":
        return settings.auto_model if os.environ.get(settings.api_key_env) else OFFLINE_MODEL
    return settings.model


def make_chat_model(settings: LLMSettings) -> BaseChatModel | None:
    """A LangChain chat model for `llm.model`, or None for the offline extractive answerer."""
    name = chat_model_name(settings)
    if name == OFFLINE_MODEL:
        return None
    provider, _, model = name.partition(":")
    if not model:
        raise ModelError(f"llm.model = {name!r}", code="bad_model_name", hint="model_name")
    key = _api_key(settings.api_key_env)
    if not key and provider == "openai" and not settings.base_url:
        raise ModelError(
            f"llm.model = {name!r} needs an API key",
            code="no_api_key",
            hint="api_key_or_offline",
            hint_args={"variable": settings.api_key_env},
        )
    from langchain.chat_models import init_chat_model

    kwargs: dict[str, Any] = {
        "temperature": settings.temperature,
        "timeout": settings.timeout,
        "max_tokens": settings.max_tokens,
        # rag.models.budget retries within llm.timeout, the total for one answer.
        "max_retries": 0,
    }
    if provider == "openai" and not is_openai_api(settings.base_url):
        # langchain-openai sends the limit as max_completion_tokens, which OpenAI-compatible
        # servers (llama.cpp, llama-cpp-python 0.3.36) ignore: they read max_tokens.
        del kwargs["max_tokens"]
        kwargs["extra_body"] = {"max_tokens": settings.max_tokens}
    if settings.base_url:
        kwargs["base_url"] = settings.base_url
    if provider == "openai":
        import openai

        from rag.models.budget import DeadlineTransport

        # Local OpenAI-compatible servers accept any key.
        kwargs["api_key"] = key or "not-needed"
        # Responses still arriving when an answer's time is up are cut off, not left dripping.
        kwargs["http_client"] = openai.DefaultHttpxClient(transport=DeadlineTransport())
    try:
        return init_chat_model(model, model_provider=provider, **kwargs)
    except (ImportError, ValueError) as e:
        raise ModelError(f"llm.model = {name!r}: {e}") from None


def is_openai_api(base_url: str | None) -> bool:
    """True for OpenAI's own API (no base_url, or api.openai.com), which reads
    max_completion_tokens; every other OpenAI-compatible server reads max_tokens."""
    from urllib.parse import urlsplit

    return not base_url or (urlsplit(base_url).hostname or "").endswith("api.openai.com")


def model_error_hint(error: Exception) -> str | None:
    """The hint (rag.errors.HINTS) for a model error whose advice each caller words its own
    way, or None when `model_error_message` says what to do."""
    try:
        import openai
    except ImportError:
        return None
    connection = isinstance(error, openai.APIConnectionError)
    return "start_model_server" if connection and not isinstance(error, TimeoutError) else None


def model_error_message(
    error: Exception, settings: LLMSettings, model: str, advice: bool = True
) -> str:
    """What a provider's exception means for `model`, and what to set; one or two sentences
    (without what to do when `advice` is False and `model_error_hint` has a hint for it)."""
    from rag.common.redact import display_url

    server = display_url(settings.base_url) if settings.base_url else ""
    where = f"the server at {server}" if server else "the provider's API"
    generic = (
        f"{where} gave no usable reply for {model} ({type(error).__name__}: {_short(str(error))})."
    )
    timed_out = (
        f"{model} at {where} did not answer within llm.timeout = {settings.timeout:g} s: "
        "raise llm.timeout (RAG_LLM__TIMEOUT), the limit for a whole answer with its retries, "
        "or check that the server is not overloaded."
    )
    if isinstance(error, TimeoutError):  # rag.models.budget.BudgetExceeded: the answer's time is up
        return timed_out
    from rag.models.budget import too_long

    if too_long(error):
        return (
            f"{where} sent far more for {model} than llm.max_tokens = {settings.max_tokens} "
            f"allows ({_short(str(_cause(error)))}): reading stopped there. Check that the "
            "server honours max_tokens."
        )
    try:
        import openai
    except ImportError:  # another provider's client: keep the generic message
        return generic
    if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
        return (
            f"{where} rejected the API key for {model} ({error.status_code}): set "
            f"{settings.api_key_env} to a valid key, or llm.base_url to a server that accepts it."
        )
    if isinstance(error, openai.NotFoundError):
        return (
            f"{where} does not serve {model} (404): set llm.model (RAG_LLM__MODEL) to a model "
            "it has, or llm.base_url (RAG_LLM__BASE_URL) to the right server."
        )
    if isinstance(error, openai.RateLimitError):
        return (
            f"{where} is still rate limiting {model} (429) after {settings.max_retries} "
            "retries: wait a moment, or raise llm.max_retries."
        )
    if isinstance(error, openai.APITimeoutError):
        return timed_out
    if isinstance(error, openai.APIConnectionError):
        if not advice:
            return f"cannot connect to {where} for {model}"
        return (
            f"cannot connect to {where} for {model}: start that server, or set llm.base_url "
            "(RAG_LLM__BASE_URL) to one that is running."
        )
    if isinstance(error, openai.APIStatusError):
        retried = f" after {settings.max_retries} retries" if error.status_code >= 500 else ""
        return (
            f"{where} answered {error.status_code}{retried} for {model}: {_short(error.message)}."
        )
    return generic


def _cause(error: BaseException) -> BaseException:
    """The innermost cause of `error` (the OpenAI client wraps what its transport raised)."""
    for _ in range(5):
        inner = error.__cause__ or error.__context__
        if inner is None:
            break
        error = inner
    return error


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
