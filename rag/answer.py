"""Answer a question from the retrieved abstracts, with [n] citations that resolve to quotes.

    assistant = open_assistant(get_settings())
    result = answer("Which papers make FlashAttention handle arbitrary masks?", assistant=assistant)
    for piece in stream_answer(question, history, assistant=assistant): ...
    answer("summarize the second one", history, assistant=assistant, previous=result)

A follow-up that points at the previous answer's numbered sources ("the second one", "[3]",
"the FlexPrefill paper", "which of them are orals?", `rag.conversation`) is answered from
those papers alone, and questions about their tier, link or authors from their records.
The LLM path rewrites a follow-up into a standalone question (with the chat history and the
previous source list), retrieves, and asks the model with the sources numbered and fenced
off as data; the markers in its reply are then checked (`rag.verify`). Without a model the
offline extractive answerer (`rag.extractive`) quotes the abstracts. Both abstain when
nothing relevant is found. Errors raise `AnswerError`; the caller's question and history
are never changed.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from rag import budget as llm_budget
from rag.budget import Budget
from rag.conversation import Reference, is_comparison, resolve, topic_terms
from rag.crosslingual import english_query, language
from rag.extractive import ExtractiveOptions, contribution_sentence, extractive_answer
from rag.loaders import Paper
from rag.messages import MESSAGES, localise_extractive, message
from rag.models import (
    OFFLINE_MODEL,
    ModelError,
    chat_model_name,
    make_chat_model,
    model_error_message,
)
from rag.prompts import NOT_ANSWERED, answer_messages, rewrite_messages
from rag.retrieve import Filters, RetrievedPaper, Retriever, open_retriever
from rag.settings import Settings
from rag.store import StoreError
from rag.verify import (
    VERBATIM_SUPPORT,
    CachedEmbeddings,
    Quote,
    best_quotes,
    check_citations,
    inert_markers,
    renumber,
    source_order,
)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

History = Sequence[Mapping[str, str]]

NO_COVERAGE = MESSAGES["en"]["no_coverage"]
ENGLISH_ONLY = (
    "(The bundled embedding model reads English only: ask in English, or set "
    'embedding.provider = "openai" for a multilingual one and re-ingest.)'
)
MAX_QUESTION_CHARS = 4000
MAX_HISTORY_MESSAGES = 8
NEAREST_SHOWN = 3  # a refusal names this many "closest, low match" papers

_FOLLOW_UP = re.compile(
    r"^\s*(?:and|but|also|so|then|what about|how about)\b|"
    r"\b(?:it|its|they|them|their|this|that|these|those|the (?:paper|method|model|approach))\b",
    re.IGNORECASE,
)


class AnswerError(RuntimeError):
    """The answer could not be produced; the message says what to set or do."""

    def __init__(self, message: str, question: str = "") -> None:
        super().__init__(message)
        self.question = question


@dataclass
class Citation:
    n: int
    paper_id: str
    title: str
    url: str
    decision: str
    quote: str  # an exact sentence of the paper's abstract; '' when the claim is unsupported
    tier: str = ""  # Oral / Spotlight / Poster (rag.loaders.TIERS), '' when unknown
    # How well the answer's claim citing it is found in the abstract (rag.verify.best_quotes);
    # below rag.verify.SUPPORT_FLOOR it is not, and no sentence is quoted as its support.
    # None: not measured (a claim not in English, or embeddings other than the bundled model).
    support: float | None = VERBATIM_SUPPORT
    supported: bool | None = True


@dataclass
class CitedAnswer:
    """An answer whose `[n]` markers and `Citation.n` name `sources[n - 1]`.

    `sources` is the numbered list the reader sees: the cited papers first, 1..k in order of
    first citation, then the retrieved papers not cited, with no gaps.
    """

    question: str
    standalone_question: str
    answer: str
    citations: list[Citation]
    sources: list[RetrievedPaper]
    abstained: bool
    model: str
    dropped_citations: int = 0
    offline: bool = False

    def as_json(self) -> dict[str, Any]:
        """The `rag ask --json` object."""
        return {
            "answer": self.answer,
            "abstained": self.abstained,
            "model": self.model,
            "citations": [
                {
                    "n": c.n,
                    "paper_id": c.paper_id,
                    "title": c.title,
                    "url": c.url,
                    "quote": c.quote,
                    "supported": c.supported,
                    "support": None if c.support is None else round(c.support, 3),
                }
                for c in self.citations
            ],
            "unsupported": sum(c.supported is False for c in self.citations),
            "sources": [
                {
                    "n": n,
                    "paper_id": s.paper.id,
                    "title": s.paper.title,
                    "decision": s.paper.decision,
                    "url": s.paper.url,
                }
                for n, s in enumerate(self.sources, start=1)
            ],
        }


@dataclass
class Assistant:
    """Everything an answer needs, created once and passed in."""

    settings: Settings
    retriever: Retriever
    chat_model: BaseChatModel | None
    embeddings: Embeddings
    model: str = ""  # "provider:model" that answers, or "offline:extractive"
    sentence_embeddings: Embeddings = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.model:
            self.model = describe_model(self.chat_model, self.settings)
        self.sentence_embeddings = CachedEmbeddings(self.embeddings)

    @property
    def offline(self) -> bool:
        return self.chat_model is None

    def warm_up(self) -> None:
        """Load what the first question needs (the embedding model, BM25) now, not then."""
        # The local model loads in ONNX Runtime, mostly outside the GIL, while BM25 is read.
        # A remote embedding API is not called just to warm up.
        loading = None
        if self.settings.embedding.provider == "local":
            loading = threading.Thread(
                target=self.embeddings.embed_query, args=("warm up",), daemon=True
            )
            loading.start()
        try:
            self.retriever.index.keyword_index()
        finally:
            if loading is not None:
                loading.join()

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
    from rag.models import make_embeddings

    if chat_model is None:
        try:
            chat_model = make_chat_model(settings.llm)
        except ModelError as e:
            raise AnswerError(str(e)) from None
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


def answer(
    question: str,
    history: History = (),
    *,
    assistant: Assistant,
    filters: Filters | None = None,
    k: int | None = None,
    previous: CitedAnswer | None = None,
) -> CitedAnswer:
    """Answer `question` with checked citations.

    A follow-up is read in the light of `history` and of `previous`, the last answer, whose
    numbered sources it may point at ("the second one").
    """
    budget = _budget(assistant)
    turn = _prepare(question, history, assistant, filters, k, budget, previous)
    if turn.result is not None:
        return turn.result
    if assistant.chat_model is None:
        return _offline(turn, assistant)
    try:
        reply = llm_budget.invoke(assistant.chat_model, turn.messages, budget)
    except Exception as e:
        raise _model_error(e, assistant, question) from None
    return _finish(turn, _text(reply.content), assistant)


def stream_answer(
    question: str,
    history: History = (),
    *,
    assistant: Assistant,
    filters: Filters | None = None,
    k: int | None = None,
    previous: CitedAnswer | None = None,
) -> Iterator[str | CitedAnswer]:
    """Text pieces as they are generated, then the final `CitedAnswer` (whose text is checked)."""
    budget = _budget(assistant)
    turn = _prepare(question, history, assistant, filters, k, budget, previous)
    if turn.result is None and assistant.chat_model is None:
        turn.result = _offline(turn, assistant)
    if turn.result is not None:
        yield from _pieces(turn.result.answer)
        yield turn.result
        return
    assert assistant.chat_model is not None
    parts: list[str] = []
    try:
        for chunk in llm_budget.stream(assistant.chat_model, turn.messages, budget):
            piece = _text(chunk.content)
            if piece:
                parts.append(piece)
                yield piece
    except Exception as e:
        raise _model_error(e, assistant, question) from None
    yield _finish(turn, "".join(parts), assistant)


@dataclass
class _Turn:
    question: str
    standalone: str
    sources: list[RetrievedPaper]
    messages: list[BaseMessage] = field(default_factory=list)
    result: CitedAnswer | None = None  # set when no model call is needed (abstention)
    reference: Reference | None = None  # the previous sources a follow-up points at
    citable: int | None = None  # only sources[:citable] may be cited (the referenced ones)


def _prepare(
    question: str,
    history: History,
    assistant: Assistant,
    filters: Filters | None,
    k: int | None,
    budget: Budget,
    previous: CitedAnswer | None = None,
) -> _Turn:
    text = question.strip() if isinstance(question, str) else ""
    if not text:
        raise AnswerError("The question is empty: type a question about ICLR 2025 papers.")
    if len(text) > MAX_QUESTION_CHARS:
        raise AnswerError(
            f"The question is {len(text)} characters long; keep it under {MAX_QUESTION_CHARS}.",
            question,
        )
    turns = _clean_history(history)
    shown = previous.sources if previous is not None and not previous.abstained else []
    shown_papers = [s.paper for s in shown]
    cited = max((c.n for c in previous.citations), default=0) if previous is not None else 0
    reference = resolve(text, shown_papers, cited) if shown else None
    if reference is not None and assistant.chat_model is None:
        standalone = text  # the papers are known: nothing to join or search
    else:
        standalone = _standalone(text, turns, assistant, question, budget, shown_papers)
    if reference is not None:
        return _referring_turn(question, text, standalone, reference, shown, cited, assistant)
    sources = assistant.retriever.search(standalone, k=k, filters=filters)
    turn = _Turn(question, standalone, sources)
    if not assistant.retriever.is_relevant(standalone, sources):
        turn.result = abstention(question, standalone, sources, assistant)
        return turn
    if assistant.chat_model is not None:
        turn.messages = answer_messages(standalone, sources, original=text, previous=shown_papers)
    return turn


def _referring_turn(
    question: str,
    text: str,
    standalone: str,
    reference: Reference,
    shown: list[RetrievedPaper],
    cited: int,
    assistant: Assistant,
) -> _Turn:
    """A follow-up about previous sources: answered from them alone, no search, no refusal.

    The referenced papers come first and are the only ones that may be cited; the rest of
    the previous list follows, so the next follow-up can still point at it.
    """
    meant = [shown[n - 1] for n in reference.numbers]
    rest = [s for s in shown if s not in meant]
    turn = _Turn(question, standalone, meant + rest, reference=reference, citable=len(meant))
    if reference.about_metadata:
        turn.result = _metadata_answer(turn, reference, shown, cited, assistant)
    elif assistant.chat_model is not None:
        turn.messages = answer_messages(
            standalone, meant, original=text, previous=[s.paper for s in shown]
        )
    return turn


def _metadata_answer(
    turn: _Turn, reference: Reference, shown: list[RetrievedPaper], cited: int, assistant: Assistant
) -> CitedAnswer:
    """Tier, link or authors of the referenced papers, from their records, each cited.

    "Which of them are orals?" lists those that are; when none is, every paper meant with its
    decision, so the reader sees why.
    """
    lines = [METADATA_HEADING, ""]
    listed = turn.sources[: turn.citable]
    if reference.tier:
        scope = shown[: cited or len(shown)]
        plural = f"{reference.tier}s"
        if listed:
            what = f"is {_article(reference.tier)}" if len(listed) == 1 else f"are {plural}"
            lines.append(f"{len(listed)} of the {len(scope)} papers {what}:")
        else:
            lines.append(f"None of the {len(scope)} papers is {_article(reference.tier)}:")
            listed = scope
            turn.sources = scope + [s for s in shown if s not in scope]
        asks = ("tier", *[a for a in reference.asks if a != "tier"])
    else:
        asks = reference.asks
    quotes = []
    for n, source in enumerate(listed, start=1):
        paper = source.paper
        facts = " · ".join(_fact(paper, ask) for ask in asks)
        lines.append(f"- **{inert_markers(' '.join(paper.title.split()))}** [{n}]: {facts}")
        quotes.append(Quote(n, paper.id, contribution_sentence(paper.abstract), 1.0))
    return numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer="\n".join(lines),
            citations=_citations(quotes, turn.sources),
            sources=turn.sources,
            abstained=False,
            model=assistant.model,
            offline=assistant.offline,
        )
    )


METADATA_HEADING = "From the papers' records in the index (decision, link, authors):"


def _article(tier: str) -> str:
    return f"an {tier}" if tier[:1] in "AEIOU" else f"a {tier}"


def _fact(paper: Paper, ask: str) -> str:
    if ask == "tier":
        return inert_markers(paper.decision) if paper.decision else "decision not recorded"
    if ask == "link":
        return paper.url or "no link recorded"
    if not paper.authors:
        return "authors not recorded"
    order = "" if paper.extra.get("authors_ordered", True) else " (order not known)"
    return "authors: " + inert_markers(", ".join(paper.authors)) + order


def abstention(
    question: str, standalone: str, nearest: list[RetrievedPaper], assistant: Assistant
) -> CitedAnswer:
    """The refusal, naming the nearest papers so the user can judge."""
    lines = [message("no_coverage", question)]
    if (
        _mostly_cjk(standalone)
        and language(standalone) != "zh"  # Chinese is glossed into English (rag.crosslingual)
        and assistant.settings.embedding.provider == "local"
        and assistant.retriever.multilingual is None
    ):
        lines.append(ENGLISH_ONLY)
    if nearest:
        lines += ["", message("nearest", question)]
        lines += [f"- {inert_markers(r.paper.title)}" for r in nearest[:NEAREST_SHOWN]]
    return CitedAnswer(
        question=question,
        standalone_question=standalone,
        answer="\n".join(lines),
        citations=[],
        sources=nearest,
        abstained=True,
        model=assistant.model,
        offline=assistant.offline,
    )


def _mostly_cjk(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    cjk = sum("\u3040" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af" for c in letters)
    return bool(letters) and cjk / len(letters) > 0.3


def _clean_history(history: History) -> list[tuple[str, str]]:
    turns = []
    for item in history or ():
        role = item.get("role") if isinstance(item, Mapping) else None
        content = item.get("content") if isinstance(item, Mapping) else None
        if role in ("user", "assistant") and isinstance(content, str) and content.strip():
            turns.append((role, content.strip()))
    return turns[-MAX_HISTORY_MESSAGES:]


def _standalone(
    question: str,
    turns: list[tuple[str, str]],
    assistant: Assistant,
    original: str,
    budget: Budget,
    previous: list[Paper] | None = None,
) -> str:
    foreign = language(question) != "en"  # rewritten into an English search query
    if not any(role == "user" for role, _ in turns) and not (foreign and assistant.chat_model):
        return question
    if assistant.chat_model is None:
        return offline_standalone(question, turns)
    try:
        messages = rewrite_messages(question, turns, english=foreign, previous=previous or ())
        reply = llm_budget.invoke(assistant.chat_model, messages, budget)
    except Exception as e:
        raise _model_error(e, assistant, original) from None
    return _clean_rewrite(_text(reply.content)) or question


def offline_standalone(question: str, turns: list[tuple[str, str]]) -> str:
    """Without a model: a short follow-up ("and how fast is it?") joins the last user question."""
    previous = next((content for role, content in reversed(turns) if role == "user"), "")
    if previous and len(question.split()) <= 12 and _FOLLOW_UP.search(question):
        return f"{previous} {question}"
    return question


def _clean_rewrite(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = re.sub(r"^(?:standalone question|question)\s*:\s*", "", lines[0], flags=re.I)
    return line.strip().strip("\"'“”").strip()[:MAX_QUESTION_CHARS]


def _offline(turn: _Turn, assistant: Assistant) -> CitedAnswer:
    threshold = assistant.settings.retrieval.relevance_threshold
    # A list names every retrieved paper above the relevance floor (up to the k retrieved).
    relevant = tuple(
        score >= threshold
        for score in assistant.retriever.paper_relevance(turn.standalone, turn.sources)
    )
    options = ExtractiveOptions(min_similarity=threshold, relevant=relevant)
    # A follow-up was joined to the previous question to retrieve; its sentences answer
    # what is asked now ("and how fast is it?").
    focus = turn.question.strip() if turn.standalone != turn.question.strip() else turn.standalone
    sources = turn.sources
    if turn.reference is not None and turn.citable:
        # Only the papers pointed at; "summarize the second one" asks for its summary.
        sources = turn.sources[: turn.citable]
        focus = turn.reference.focus or focus
        options = ExtractiveOptions(
            max_papers=len(sources),
            summary_papers=len(sources),
            summary_margin=float("inf"),
            per_paper=3 if len(sources) == 1 else 2,
            max_sentences=max(6, 2 * len(sources)),
            mode="summary"
            if not topic_terms(focus) or is_comparison(focus)
            else ("answer" if len(sources) == 1 else "list"),
        )
    # A question in another language picks its English sentences through its gloss.
    query = english_query(focus)
    result = extractive_answer(query, sources, assistant.sentence_embeddings, options)
    return numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer=localise_extractive(result.text, turn.question),
            citations=_citations(result.quotes, turn.sources),
            sources=turn.sources,
            abstained=False,
            model=assistant.model,
            offline=True,
        )
    )


def _finish(turn: _Turn, text: str, assistant: Assistant) -> CitedAnswer:
    if not text.strip():
        raise AnswerError(
            f"The language model failed: {assistant.model} returned an empty answer. Your "
            "question and the chat are kept; ask again, or use --config offline.",
            turn.question,
        )
    citable = turn.citable if turn.citable is not None else len(turn.sources)
    checked = check_citations(text, set(range(1, citable + 1)))
    papers = {n: turn.sources[n - 1].paper for n in checked.cited}
    quotes = best_quotes(
        checked.text,
        papers,
        assistant.sentence_embeddings,
        fallback_claim=turn.standalone,
        idf=_corpus_idf(assistant),
        # The floor was measured with the bundled English model's similarities.
        measure_support=assistant.settings.embedding.provider == "local",
    )
    ordered = [quotes[n] for n in checked.cited if n in quotes]
    return numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer=checked.text.strip(),
            citations=_citations(ordered, turn.sources),
            sources=turn.sources,
            abstained=not ordered and NOT_ANSWERED.lower().rstrip(".") in text.lower(),
            model=assistant.model,
            dropped_citations=checked.dropped,
            offline=False,
        )
    )


def numbered(result: CitedAnswer) -> CitedAnswer:
    """`result` with its sources in reading order: cited first, by first citation, no gaps.

    The one place source numbers change, for the offline and the model's answers alike;
    the text's markers and each `Citation.n` follow.
    """
    order = source_order(result.answer, len(result.sources))
    mapping = {old: new for new, old in enumerate(order, start=1)}
    if all(old == new for old, new in mapping.items()):
        return result
    result.answer = renumber(result.answer, mapping)
    result.citations = [replace(c, n=mapping[c.n]) for c in result.citations]
    result.sources = [result.sources[old - 1] for old in order]
    return result


def _citations(quotes: list[Quote], sources: list[RetrievedPaper]) -> list[Citation]:
    citations = []
    for quote in quotes:
        paper = sources[quote.n - 1].paper
        # An unsupported claim gets no quote: no sentence may look like its evidence.
        text = "" if quote.supported is False else quote.quote
        citations.append(
            Citation(
                quote.n,
                paper.id,
                paper.title,
                paper.url,
                paper.decision,
                text,
                paper.tier,
                support=quote.support,
                supported=quote.supported,
            )
        )
    return citations


def _corpus_idf(assistant: Assistant) -> Callable[[str], float] | None:
    """How rare a term is in the index (what the support floor was measured with)."""
    try:
        return assistant.retriever.index.keyword_index().idf
    except StoreError:  # the store went away after retrieval: rarity among the abstract's own
        return None


def _pieces(text: str) -> Iterator[str]:
    """An already complete answer, line by line, so the UI streams it the same way."""
    yield from re.findall(r"[^\n]*\n|[^\n]+$", text)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content or "")


def _budget(assistant: Assistant) -> Budget:
    """llm.timeout is the total for one answer: rewrite, answer, stream and retries."""
    llm = assistant.settings.llm
    return Budget(llm.timeout, llm.max_retries)


def _model_error(error: Exception, assistant: Assistant, question: str) -> AnswerError:
    """One clear sentence saying what failed and what to set; the question is kept."""
    message = model_error_message(error, assistant.settings.llm, assistant.model)
    return AnswerError(
        f"The language model failed: {message} Your question and the chat are kept; ask "
        "again, or use --config offline.",
        question,
    )
