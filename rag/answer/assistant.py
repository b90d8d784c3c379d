"""What an answer is made with: the `Assistant` (settings, index, models), and the `Turn`.

A `Turn` is one question on its way to an answer; `rag.answer.pipeline` prepares it and
`rag.answer.followup` fills it for a follow-up about the previous sources.
`open_assistant(settings)` opens the index and builds the configured models.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from rag.answer.judge import Judge, OfflineJudge
from rag.answer.support import CachedEmbeddings
from rag.errors import AnswerError, ModelError, RagError
from rag.index.shipped import sentence_vectors
from rag.models.budget import Budget
from rag.models.factory import (
    chat_model_name,
    make_chat_model,
    model_error_hint,
    model_error_message,
)
from rag.retrieval.retriever import Retriever, open_retriever
from rag.settings import MAX_K
from rag.types import OFFLINE_MODEL

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

    from rag.answer.citations import CitedAnswer
    from rag.answer.judge import Verdict
    from rag.answer.references import Reference
    from rag.lang.intent import Intent
    from rag.settings import Settings
    from rag.types import Paper, RetrievedPaper


@dataclass
class Assistant:
    """Everything an answer needs, created once and passed in."""

    settings: Settings
    retriever: Retriever
    chat_model: BaseChatModel | None
    embeddings: Embeddings
    model: str = ""  # "provider:model" that answers, or "offline:extractive"
    sentence_embeddings: CachedEmbeddings = field(init=False, repr=False)
    judge: Judge = field(init=False, repr=False)  # which retrieved papers belong

    def __post_init__(self) -> None:
        if not self.model:
            self.model = describe_model(self.chat_model, self.settings)
        self.sentence_embeddings = CachedEmbeddings(
            self.embeddings, shipped=lambda: sentence_vectors(self.settings, self.embeddings)
        )
        self.judge = OfflineJudge(self.retriever, self.sentence_embeddings)

    @property
    def offline(self) -> bool:
        return self.chat_model is None

    def warm_up(self) -> None:
        """Load what the first question needs (the embedding model, Chroma's vector index,
        BM25, the shipped sentence vectors) now, not then."""
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
        self.sentence_embeddings.read_shipped()
        vector = self.embeddings.embed_query("warm up")
        with contextlib.suppress(RagError):  # the question will say what is wrong
            self.retriever.index.dense_search(vector, 1)

    def budget(self) -> Budget:
        """One answer's budget: llm.timeout is the total for the rewrite, the judge, the
        answer, its stream and retries; a reply is read up to the bytes llm.max_tokens sets."""
        llm = self.settings.llm
        return Budget(llm.timeout, llm.max_retries, max_tokens=llm.max_tokens)

    def wanted(self, number: int, k: int | None) -> int:
        """How many papers an answer shows: as many as the question asks for ("summarize 3
        papers on X", up to MAX_K), else the caller's `k`, else the sources setting."""
        return min(number, MAX_K) or k or self.settings.retrieval.k

    def model_failed(self, error: Exception, question: str) -> AnswerError:
        """One clear sentence saying what failed and what to set; the question is kept."""
        hint = model_error_hint(error)
        said = model_error_message(error, self.settings.llm, self.model, advice=hint is None)
        return AnswerError(
            f"The language model failed: {said}",
            question,
            code="model_failed",
            hint=hint or "retry_or_offline",
        )

    def stats(self) -> dict[str, Any]:
        """{"papers", "chunks", "embedding_model"} of the open index."""
        return self.retriever.index.stats()


def open_assistant(
    settings: Settings,
    embeddings: Embeddings | None = None,
    chat_model: BaseChatModel | None = None,
) -> Assistant:
    """Open the index and build the models named in `settings`, unless given.

    The chat model is the one `llm.model` names; `llm.model = "offline"` means none (the
    offline extractive answerer).
    """
    from rag.models.factory import make_embeddings

    if chat_model is None:
        try:
            chat_model = make_chat_model(settings.llm)
        except ModelError as e:
            raise AnswerError(e) from None  # its problem, code and hint
    embeddings = embeddings or make_embeddings(settings.embedding)
    return Assistant(settings, open_retriever(settings, embeddings), chat_model, embeddings)


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
    # A comparison: the number the reader saw for each of `sources` (the answer keeps them).
    seen: tuple[int, ...] = ()
    verdict: Verdict | None = None  # which sources belong (rag.answer.judge); None: a follow-up
    intent: Intent | None = None  # what a new question asks (rag.lang.intent); None: a follow-up
    previous_papers: list[Paper] = field(default_factory=list)  # the last answer's sources
    # The question as meant, its mistyped words repaired (rag.retrieval.spelling); "": as asked.
    meant: str = ""
    off_topic: str = ""  # "which of them are about X?", none of them is: X (searched anew)
