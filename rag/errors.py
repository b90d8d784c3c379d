"""Every error a user can cause derives from `RagError`: the CLI and the page catch it once.

An error carries three things (issue 29):

- `code`: a short stable string naming what went wrong ("no_index", "model_failed",
  "question_empty", ...), for callers that branch on it and for JSON output;
- `problem`: what is wrong and where, one line, with no advice in it;
- `hint`: the key of what to do (`HINTS`), which each caller words its own way: the command
  line as a command (`Hint.command`: "build it with `rag ingest`"), the page as something to
  act on (`Hint.action`: "build it with the button below", the button shown beside it).

`str(error)` is the problem followed by the command's wording, as `rag` prints it. A raise site
may pass `hint=` (and `code=`) and write only the problem; one that still ends its message with
the command itself (as the index, the models and the answerer do today) has that advice read
back into `hint` here, once, from the patterns in `HINTS` (`Hint.said`), so no caller edits the
text. The built-in base beside each class (ValueError, RuntimeError) is kept for callers that
expect it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class Hint:
    """What to do about an error, worded for the command line and for the page."""

    command: str  # the CLI's wording: a command to run or a flag to give
    action: str  # the page's wording: a button, menu or field on the page
    joiner: str = ": "  # between the problem and either wording
    said: str = ""  # a regex: the command wording as a message written today ends with it


HINTS: dict[str, Hint] = {
    "build_index": Hint(
        "build it with `rag ingest`",
        "build it with the button below",
        said=r"(?P<joiner>: )build it with `rag ingest[^`]*`$",
    ),
    "rebuild_index": Hint(
        "rebuild it with `rag ingest --rebuild`",
        "rebuild it with `rag ingest --rebuild` in a terminal",
        said=r"(?P<joiner>: |; |, or )rebuild (?:it )?with `rag ingest --rebuild`$",
    ),
    "rebuild_or_reconfigure": Hint(
        "rebuild it with `rag ingest --rebuild`, or change the configuration back",
        "rebuild it with the button below, or change the configuration back",
        said=r"(?P<joiner>: )rebuild it with\s+`rag ingest --rebuild`, or change the "
        r"configuration back$",
    ),
    "refresh_vectors": Hint(
        "`rag ingest` rebuilds it (seconds for the bundled corpus)",
        "the button below rebuilds it (seconds for the bundled corpus)",
        said=r"(?P<joiner>: )`rag ingest` rebuilds it \(seconds for the bundled corpus\)$",
    ),
    "retry_or_offline": Hint(
        "Your question and the chat are kept; ask again, or use --config offline.",
        "Your question and the chat are kept; ask again, or choose Offline in the model menu.",
        joiner=" ",
        said=r"(?P<joiner>\s+)Your question and the chat are kept; ask again, or use "
        r"--config offline\.$",
    ),
    "offline": Hint(
        "use --config offline",
        "choose Offline in the model menu",
        joiner=", or ",
        said=r"(?P<joiner>,? or |; )use --config offline\.?$",
    ),
    "compare_offline": Hint(
        "try again, or compare offline with --config offline",
        "try again, or choose Offline in the model menu",
        joiner="; ",
        said=r"(?P<joiner>; | )[Tt]ry again, or compare offline with --config offline\.?$",
    ),
}


def _read_advice(message: str) -> tuple[str, str, str | None]:
    """(problem, joiner, hint) of a message that ends with a known command's advice."""
    for key, hint in HINTS.items():
        found = re.search(hint.said, message) if hint.said else None
        if found:
            return message[: found.start()], found.group("joiner"), key
    return message, "", None


class RagError(Exception):
    """Bad input, configuration or environment, as opposed to a bug; printed as one line."""

    code = "error"  # each subclass names its own; an instance may be more precise

    def __init__(
        self, message: object = "", *args: object, code: str | None = None, hint: str | None = None
    ) -> None:
        text = str(message)
        problem, joiner, said = _read_advice(text)
        if hint is not None and said is None:  # the raise site wrote only the problem
            if hint not in HINTS:
                raise KeyError(f"no hint {hint!r} in rag.errors.HINTS")
            joiner = HINTS[hint].joiner
            text = f"{problem}{joiner}{HINTS[hint].command}"
        super().__init__(text, *args)
        self.message = text  # the problem and the command's wording, as raised
        self.problem, self.joiner = problem, joiner
        self.hint: str | None = hint or said
        if code is not None:
            self.code = code

    def worded(self, how: Literal["command", "action"]) -> str:
        """The message with its hint worded for the command line (as raised: a command may
        name the raise site's own folder or flag) or for the page."""
        if how == "command" or self.hint is None:
            return self.message
        wording = HINTS[self.hint].action
        if not self.joiner.strip():  # a sentence of its own
            wording = wording[:1].upper() + wording[1:].rstrip(".") + "."
        return f"{self.problem}{self.joiner}{wording}"


class LoadError(RagError, ValueError):
    """Bad input; the message says what is wrong and where (file, line)."""

    code = "bad_input"

    def __init__(self, path: Path | str, message: str, line: int | None = None) -> None:
        self.path, self.line = str(path), line
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


class FetchError(RagError, ValueError):
    """The fetch cannot go on; the message says why and what to do."""

    code = "fetch_failed"


class ConfigError(RagError, ValueError):
    """A configuration file or value is invalid; the message names the file and the key."""

    code = "bad_config"


class ModelError(RagError, RuntimeError):
    """A model cannot be built or reached; the message names what to set or do."""

    code = "model_failed"


class MultilingualError(ModelError):
    """The multilingual encoder or its vectors cannot be used; the message says what to do."""

    code = "multilingual_failed"


class UsageError(RagError, ValueError):
    """A command-line argument or input file is wrong (`rag.cli`)."""

    code = "bad_usage"


class CompareError(RagError, ValueError):
    """The comparison cannot be made; the message says why and what to do."""

    code = "compare_failed"


class StoreError(RagError, RuntimeError):
    """The index cannot be opened or reached; the message says what to do."""

    code = "store_failed"


class IndexMissingError(StoreError):
    """No index where the settings point: `rag ingest` builds one."""

    code = "no_index"


class IndexMismatchError(StoreError):
    """The index was built with another model or chunking: rebuild it."""

    code = "index_mismatch"


class StaleVectorsError(IndexMismatchError):
    """The index holds vectors of another precision (int8 from before float32 was the default):
    `rag ingest` rebuilds it by itself, from the shipped vectors for the bundled corpus."""

    code = "stale_vectors"


# The answerer's errors, told apart by how their message begins (rag.answer.pipeline).
_ANSWER_CODES = (
    ("The question is empty", "question_empty"),
    ("The question is ", "question_too_long"),
    ("The language model failed", "model_failed"),
)


class AnswerError(RagError, RuntimeError):
    """The answer could not be produced; the message says what to set or do. `question` is
    the question asked, kept for asking again."""

    code = "answer_failed"

    def __init__(
        self, message: str, question: str = "", *, code: str | None = None, hint: str | None = None
    ) -> None:
        if code is None:
            starts = (c for start, c in _ANSWER_CODES if str(message).startswith(start))
            code = next(starts, None)
        super().__init__(message, code=code, hint=hint)
        if self.hint in ("offline", "retry_or_offline") and code is None:
            self.code = "model_failed"  # a model that cannot be built or reached
        self.question = question
