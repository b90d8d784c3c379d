"""What an answer is made with: the `Assistant` (settings, index, models), and the `Turn`.

A `Turn` is one question on its way to an answer; `rag.answer.pipeline` prepares it and
`rag.answer.followup` fills it for a follow-up about the previous sources.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from rag.answer.citations import CitedAnswer
from rag.answer.judge import Judge, OfflineJudge, Verdict
from rag.answer.references import Reference
from rag.answer.support import CachedEmbeddings
from rag.errors import RagError
from rag.lang.intent import Intent
from rag.models.factory import chat_model_name
from rag.retrieval.retriever import Retriever
from rag.settings import Settings
from rag.types import OFFLINE_MODEL, RetrievedPaper

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage


@dataclass
class Assistant:
    """Everything an answer needs, created once and passed in."""

    settings: Settings
    retriever: Retriever
    chat_model: BaseChatModel | None
    embeddings: Embeddings
    model: str = ""  # "provider:model" that answers, or "offline:extractive"
    sentence_embeddings: Embeddings = field(init=False, repr=False)
    judge: Judge = field(init=False, repr=False)  # which retrieved papers belong

    def __post_init__(self) -> None:
        if not self.model:
            self.model = describe_model(self.chat_model, self.settings)
        self.sentence_embeddings = CachedEmbeddings(self.embeddings)
        self.judge = OfflineJudge(self.retriever, self.sentence_embeddings)

    @property
    def offline(self) -> bool:
        return self.chat_model is None

    def warm_up(self) -> None:
        """Load what the first question needs (the embedding model, Chroma's vector index,
        BM25) now, not then."""
        # The local model loads in ONNX Runtime and Chroma its HNSW segment, mostly outside the
        # GIL, while BM25 is read. A remote embedding API is not called just to warm up.
        loading = None
        if self.settings.embedding.provider == "local":
            loading = threading.Thread(target=self._warm_vectors, daemon=True)
            loading.start()
        try:
            self.retriever.index.keyword_index()
        finally:
            if loading is not None:
                loading.join()

    def _warm_vectors(self) -> None:
        vector = self.embeddings.embed_query("warm up")
        with contextlib.suppress(RagError):  # the question will say what is wrong
            self.retriever.index.dense_search(vector, 1)

    def stats(self) -> dict[str, Any]:
        """{"papers", "chunks", "embedding_model"} of the open index."""
        return self.retriever.index.stats()


def describe_model(chat_model: BaseChatModel | None, settings: Settings) -> str:
    """The `provider:model` string for `chat_model`, preferring the configured spelling."""
    if chat_model is None:
        return OFFLINE_MODEL
    configured = chat_model_name(settings.llm)
    name = getattr(chat_model, "model_name", None) or getattr(chat_model, "model", None)
    if not isinstance(name, str) or not name or configured.endswith(f":{name}"):
        return configured if configured != OFFLINE_MODEL else type(chat_model).__name__
    provider = configured.partition(":")[0] if configured != OFFLINE_MODEL else "custom"
    return f"{provider}:{name}"


@dataclass
class Turn:
    """One question being answered: what is searched, the sources, and the prompt or result."""

    question: str
    standalone: str
    sources: list[RetrievedPaper]
    messages: list[BaseMessage] = field(default_factory=list)
    result: CitedAnswer | None = None  # set when no model call is needed (abstention)
    reference: Reference | None = None  # the previous sources a follow-up points at
    citable: int | None = None  # only sources[:citable] may be cited (the referenced ones)
    scope_note: str = ""  # a follow-up answered from the previous sources says so
    compare: tuple[int, ...] = ()  # "compare them": the sources the comparison table shows
    verdict: Verdict | None = None  # which sources belong (rag.answer.judge); None: a follow-up
    intent: Intent | None = None  # what a new question asks (rag.lang.intent); None: a follow-up
