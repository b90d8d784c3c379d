"""Questions about ICLR 2025 papers, answered from their abstracts with checkable citations.

The flow runs one way, one subpackage a stage: `corpus` (load) -> `index` (chunk, embed,
store, BM25) -> `retrieval` (hybrid, paper-level, filters) -> `answer` (model or offline,
`[n]` citations, verified quotes) -> `explore` (map, related, compare, BibTeX). Names load on
first use, so `import rag` is cheap. One answer is `rag.stream_answer(...)`; a conversation is
a `rag.Session` (rag/session.py).

The public API (issue 29): the two callers, the page (`ui/`) and the command (`rag.cli`),
import the names below from `rag` and no internal module, besides `rag.settings`,
`rag.errors` and `rag.types` (settings, the errors and plain data types), which they may
import directly; rag.cli imports its own modules too. tests/test_public_api.py checks it
(`rag vectors`, the maintainer's build of the files shipped inside rag.index, is left out).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# name -> "module" or "module:attribute" (where the name here is not the module's own)
_PUBLIC = {
    # Settings, errors and plain data types (their modules may be imported too)
    "get_settings": "rag.settings",
    "Settings": "rag.settings",
    "RagError": "rag.errors",
    "Paper": "rag.types",
    "RetrievedPaper": "rag.types",
    "Filters": "rag.types",
    "VENUE": "rag.venue",  # the conference, one record: every text naming it derives from it
    # A conversation, and one answer
    "Session": "rag.session",
    "Exchange": "rag.session",
    "Assistant": "rag.answer.pipeline",
    "open_assistant": "rag.answer.pipeline",
    "stream_answer": "rag.answer.pipeline",
    "MAX_QUESTION_CHARS": "rag.types",
    "CitedAnswer": "rag.answer.citations",
    "Citation": "rag.answer.citations",
    "parse_markers": "rag.answer.citations",
    "fenced": "rag.answer.citations",
    "uncited_sentences": "rag.answer.grounding",
    # The index: build it, follow a build, open it, search it
    "build_index": "rag.index.ingest",
    "BuildStatus": "rag.index.build_status",
    "read_build_status": "rag.index.build_status",
    "recording_build": "rag.index.build_status",
    "index_is_built": "rag.index.build_status",
    "PaperIndex": "rag.index.papers",
    "PaperVectors": "rag.index.vectors",
    "read_paper_vectors": "rag.index.vectors",
    "open_retriever": "rag.retrieval.retriever",
    "uncalibrated_note": "rag.retrieval.calibration",
    # Models
    "make_embeddings": "rag.models.factory",
    "make_chat_model": "rag.models.factory",
    "chat_model_name": "rag.models.factory",
    # Explore: the map, related papers, comparisons, BibTeX
    "TopicMap": "rag.explore.topicmap",
    "load_topic_map": "rag.explore.topicmap",
    "map_path": "rag.explore.topicmap",
    "read_cached_map": "rag.explore.topicmap",
    "RelatedPaper": "rag.explore.related",
    "related_papers": "rag.explore.related",
    "Comparison": "rag.explore.compare",
    "compare_papers": "rag.explore.compare",
    "MIN_COMPARED": "rag.explore.compare:MIN_PAPERS",
    "MAX_COMPARED": "rag.explore.compare:MAX_PAPERS",
    "bibtex": "rag.corpus.bibtex",
    "authors_in_order": "rag.corpus.bibtex",
    # The corpus, and fetching one
    "read_text": "rag.corpus.loaders",
    "MAX_ABSTRACT_CHARS": "rag.corpus.loaders",
    "fetch_venue": "rag.corpus.openreview",
    "default_fetch_out": "rag.corpus.openreview:default_out",
    "OPENREVIEW_API_URL": "rag.corpus.openreview:DEFAULT_API_URL",
    # Evaluation (`rag eval`)
    "run_eval": "rag.evaluation.evaluate",
    "format_eval_report": "rag.evaluation.evaluate:format_report",
    "load_questions": "rag.evaluation.metrics",
    "load_list_questions": "rag.evaluation.lists",
    # Text: redaction of secrets, LaTeX as text, the user-facing messages, safe files
    "redact": "rag.common.redact",
    "display_url": "rag.common.redact",
    "latex_to_text": "rag.common.latex:to_text",
    "own_macros": "rag.common.latex",
    "short_name": "rag.common.latex",
    "SELF_MACROS": "rag.common.latex",
    "MESSAGES": "rag.lang.messages",
    "question_language": "rag.lang.messages",
    "open_own": "rag.common.atomic",
    "parse_json": "rag.common.side_files",
    "has_surrogates": "rag.common.side_files",
}
__all__ = [
    "Assistant",
    "BuildStatus",
    "Citation",
    "CitedAnswer",
    "Comparison",
    "Exchange",
    "Filters",
    "MAX_ABSTRACT_CHARS",
    "MAX_COMPARED",
    "MAX_QUESTION_CHARS",
    "SELF_MACROS",
    "MESSAGES",
    "MIN_COMPARED",
    "OPENREVIEW_API_URL",
    "Paper",
    "PaperIndex",
    "PaperVectors",
    "RagError",
    "RelatedPaper",
    "RetrievedPaper",
    "Session",
    "Settings",
    "TopicMap",
    "VENUE",
    "authors_in_order",
    "bibtex",
    "build_index",
    "chat_model_name",
    "compare_papers",
    "default_fetch_out",
    "display_url",
    "fenced",
    "fetch_venue",
    "format_eval_report",
    "get_settings",
    "has_surrogates",
    "index_is_built",
    "latex_to_text",
    "load_list_questions",
    "load_questions",
    "load_topic_map",
    "make_chat_model",
    "make_embeddings",
    "map_path",
    "open_assistant",
    "open_own",
    "open_retriever",
    "own_macros",
    "parse_json",
    "parse_markers",
    "read_build_status",
    "read_cached_map",
    "read_paper_vectors",
    "read_text",
    "recording_build",
    "redact",
    "related_papers",
    "run_eval",
    "short_name",
    "stream_answer",
    "uncalibrated_note",
    "uncited_sentences",
    "question_language",
]

if TYPE_CHECKING:
    from rag.answer.citations import Citation, CitedAnswer, fenced, parse_markers
    from rag.answer.grounding import uncited_sentences
    from rag.answer.pipeline import Assistant, open_assistant, stream_answer
    from rag.common.atomic import open_own
    from rag.common.latex import SELF_MACROS, own_macros, short_name
    from rag.common.latex import to_text as latex_to_text
    from rag.common.redact import display_url, redact
    from rag.common.side_files import has_surrogates, parse_json
    from rag.corpus.bibtex import authors_in_order, bibtex
    from rag.corpus.loaders import MAX_ABSTRACT_CHARS, read_text
    from rag.corpus.openreview import (
        DEFAULT_API_URL as OPENREVIEW_API_URL,
    )
    from rag.corpus.openreview import (
        default_out as default_fetch_out,
    )
    from rag.corpus.openreview import (
        fetch_venue,
    )
    from rag.errors import RagError
    from rag.evaluation.evaluate import format_report as format_eval_report
    from rag.evaluation.evaluate import run_eval
    from rag.evaluation.lists import load_list_questions
    from rag.evaluation.metrics import load_questions
    from rag.explore.compare import (
        MAX_PAPERS as MAX_COMPARED,
    )
    from rag.explore.compare import (
        MIN_PAPERS as MIN_COMPARED,
    )
    from rag.explore.compare import (
        Comparison,
        compare_papers,
    )
    from rag.explore.related import RelatedPaper, related_papers
    from rag.explore.topicmap import TopicMap, load_topic_map, map_path, read_cached_map
    from rag.index.build_status import (
        BuildStatus,
        index_is_built,
        read_build_status,
        recording_build,
    )
    from rag.index.ingest import build_index
    from rag.index.papers import PaperIndex
    from rag.index.vectors import PaperVectors, read_paper_vectors
    from rag.lang.messages import MESSAGES, question_language
    from rag.models.factory import chat_model_name, make_chat_model, make_embeddings
    from rag.retrieval.calibration import uncalibrated_note
    from rag.retrieval.retriever import open_retriever
    from rag.session import Exchange, Session
    from rag.settings import Settings, get_settings
    from rag.types import MAX_QUESTION_CHARS, Filters, Paper, RetrievedPaper
    from rag.venue import VENUE


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    module, _, attribute = _PUBLIC[name].partition(":")
    value = getattr(import_module(module), attribute or name)
    globals()[name] = value  # the next use is a plain attribute
    return value
