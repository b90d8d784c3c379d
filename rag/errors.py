"""Every error a user can cause derives from `RagError`: the CLI and the page catch it once.

Each message says what is wrong and where, and names the setting or command that fixes it.
The built-in base beside it (ValueError, RuntimeError) is kept for callers that expect it.
"""

from __future__ import annotations

from pathlib import Path


class RagError(Exception):
    """Bad input, configuration or environment, as opposed to a bug; printed as one line."""


class LoadError(RagError, ValueError):
    """Bad input; the message says what is wrong and where (file, line)."""

    def __init__(self, path: Path | str, message: str, line: int | None = None) -> None:
        self.path, self.line = str(path), line
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


class FetchError(RagError, ValueError):
    """The fetch cannot go on; the message says why and what to do."""


class ConfigError(RagError, ValueError):
    """A configuration file or value is invalid; the message names the file and the key."""


class ModelError(RagError, RuntimeError):
    """A model cannot be built or reached; the message names what to set or do."""


class MultilingualError(ModelError):
    """The multilingual encoder or its vectors cannot be used; the message says what to do."""


class UsageError(RagError, ValueError):
    """A command-line argument or input file is wrong (`rag.cli`)."""


class CompareError(RagError, ValueError):
    """The comparison cannot be made; the message says why and what to do."""


class StoreError(RagError, RuntimeError):
    """The index cannot be opened or reached; the message says what to do."""


class IndexMissingError(StoreError):
    """No index where the settings point: `rag ingest` builds one."""


class IndexMismatchError(StoreError):
    """The index was built with another model or chunking: rebuild it."""


class StaleVectorsError(IndexMismatchError):
    """The index holds vectors of another precision (int8 from before float32 was the default):
    `rag ingest` rebuilds it by itself, from the shipped vectors for the bundled corpus."""


class AnswerError(RagError, RuntimeError):
    """The answer could not be produced; the message says what to set or do."""

    def __init__(self, message: str, question: str = "") -> None:
        super().__init__(message)
        self.question = question
