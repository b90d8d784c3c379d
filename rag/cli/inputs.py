"""What the `rag` commands read besides their flags: questions, conversations, the index.

Files are read as the loader reads corpus files (`read_text`: a regular file, at most
MAX_FILE_BYTES, UTF-8). A bad input is a `UsageError` or a `LoadError`: `rag.cli.main`
prints it as one line, with no traceback.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rag import has_surrogates, read_text
from rag.errors import UsageError
from rag.settings import Settings

if TYPE_CHECKING:
    from rag import PaperIndex


def open_index(settings: Settings) -> PaperIndex:
    """The index `settings` name, read with the embedding model they name."""
    from rag import PaperIndex, make_embeddings

    return PaperIndex.open(settings, make_embeddings(settings.embedding))


def questions_from(args: argparse.Namespace) -> Iterator[str]:
    if args.batch:
        lines = read_text(args.batch).splitlines()
        yield from (line.strip() for line in lines if line.strip())
    elif args.question is not None:
        yield args.question
    else:
        raise UsageError("give a QUESTION or --batch FILE")


def read_conversations(path: Path) -> list[list[str]]:
    """One JSON list of questions per non-blank line; a bad line is a UsageError naming it."""
    lines = read_text(path).splitlines()
    conversations = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}, line {number}: not JSON ({e.msg})") from None
        except RecursionError:
            raise UsageError(f"{path}, line {number}: JSON nested too deeply") from None
        if has_surrogates(value):  # "\ud800": JSON allows it, no UTF-8 output can carry it
            raise UsageError(f"{path}, line {number}: a lone surrogate escape (\\ud800-\\udfff)")
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(q, str) and q.strip() for q in value)
        ):
            raise UsageError(
                f"{path}, line {number}: expected a JSON list of questions, "
                'e.g. ["Which papers ...?", "summarize the second one"]'
            )
        conversations.append(value)
    if not conversations:
        raise UsageError(f"{path}: no conversation in the file")
    return conversations
