"""Answer and verify: prompts, the model or offline answer, citations, quote support.

`answer`, `stream_answer` and `open_assistant` load on first use, so importing one module of
this stage (the marker parser, say) does not pull in the model path.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_PUBLIC = {"answer", "stream_answer", "open_assistant"}
__all__ = ["answer", "open_assistant", "stream_answer"]

if TYPE_CHECKING:
    from rag.answer.pipeline import answer, open_assistant, stream_answer


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'rag.answer' has no attribute {name!r}")
    return getattr(import_module("rag.answer.pipeline"), name)
