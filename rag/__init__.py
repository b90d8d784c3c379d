"""Questions about ICLR 2025 papers, answered from their abstracts with checkable citations.

The flow runs one way, one subpackage a stage: `corpus` (load) -> `index` (chunk, embed,
store, BM25) -> `retrieval` (hybrid, paper-level, filters) -> `answer` (model or offline,
`[n]` citations, verified quotes) -> `explore` (map, related, compare, BibTeX); `cli` and
`ui/` call the public functions below. Names load on first use, so `import rag` is cheap.
One answer is `rag.answer.answer(...)`: the name `rag.answer` is the stage's subpackage.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "get_settings": "rag.settings",
    "Settings": "rag.settings",
    "RagError": "rag.errors",
    "Paper": "rag.types",
    "RetrievedPaper": "rag.types",
    "Filters": "rag.types",
    "build_index": "rag.index.ingest",
    "open_assistant": "rag.answer.pipeline",
    "stream_answer": "rag.answer.pipeline",
    "CitedAnswer": "rag.answer.citations",
}
__all__ = [
    "CitedAnswer",
    "Filters",
    "Paper",
    "RagError",
    "RetrievedPaper",
    "Settings",
    "build_index",
    "get_settings",
    "open_assistant",
    "stream_answer",
]

if TYPE_CHECKING:
    from rag.answer.citations import CitedAnswer
    from rag.answer.pipeline import open_assistant, stream_answer
    from rag.errors import RagError
    from rag.index.ingest import build_index
    from rag.settings import Settings, get_settings
    from rag.types import Filters, Paper, RetrievedPaper


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    return getattr(import_module(_PUBLIC[name]), name)
