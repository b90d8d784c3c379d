"""Every error a user can cause derives from `RagError`: the CLI and the page catch it once.

An error carries three things (issue 29):

- `code`: a short stable string naming what went wrong ("no_index", "model_failed",
  "question_empty", ...), for callers that branch on it and for JSON output;
- `problem`: what is wrong and where, one line, with no advice in it;
- `hint`: the key of what to do (`HINTS`), which each caller words its own way: the command
  line as a command (`Hint.command`: "build it with `rag ingest`"), the page as something to
  act on (`Hint.action`: "build it with the button below", the button shown beside it).

The raise site decides all three: it writes the problem and names the hint (and, for a hint
that names something of the raise site's, such as its folder or limit, fills `hint_args`):

    raise IndexMissingError(f"no index at {folder}", hint="build_index_at",
                            hint_args={"index": folder})

`str(error)` is the problem followed by the command's wording, as `rag` prints it. A problem
that ends a sentence ("m timed out.") gets the hint as a sentence of its own; otherwise the
hint's joiner goes between them. The built-in base beside each class (ValueError,
RuntimeError) is kept for callers that expect it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class Hint:
    """What to do about an error, worded for the command line and for the page. Either wording
    may name `{fields}` the raise site fills (`RagError(hint_args=...)`)."""

    command: str  # the CLI's wording: a command to run or a flag to give
    action: str  # the page's wording: a button, menu or field on the page; never a CLI flag
    joiner: str = ": "  # between the problem and either wording (". ": a sentence of its own)


_IN_A_TERMINAL = "rebuild the index in a terminal"

HINTS: dict[str, Hint] = {
    # The index.
    "build_index": Hint("build it with `rag ingest`", "build it with the button below"),
    "build_index_at": Hint(
        "build it with `rag ingest --index {index}`", "build it with the button below"
    ),
    "rebuild_index": Hint("rebuild it with `rag ingest --rebuild`", _IN_A_TERMINAL),
    "rebuild_or_reconfigure": Hint(
        "rebuild it with `rag ingest --rebuild`, or change the configuration back",
        "rebuild it with the button below, or change the configuration back",
    ),
    "refresh_vectors": Hint(
        "`rag ingest` rebuilds it (seconds for the bundled corpus)",
        "the button below rebuilds it (seconds for the bundled corpus)",
    ),
    "check_or_rebuild": Hint(
        "check the folder, or rebuild it with `rag ingest --rebuild`",
        f"check the folder, or {_IN_A_TERMINAL}",
        joiner="; ",
    ),
    "not_a_folder": Hint(
        "point store.index_dir (--index) at a folder, or move the file away",
        "point store.index_dir at a folder, or move the file away",
    ),
    "index_folder": Hint(
        "check the path, or point store.index_dir (--index) elsewhere",
        "check the path, or point store.index_dir elsewhere",
        joiner="; ",
    ),
    "writable_folder": Hint(
        "give --index (store.index_dir) a folder you can write, or make this one writable",
        "give store.index_dir a folder you can write, or make this one writable",
        joiner="; ",
    ),
    "read_only_index": Hint(
        "`rag ingest` needs a writable folder (searching, asking and stats work as it is)",
        "building it needs a writable folder (searching and asking work as it is)",
    ),
    "read_only_lock": Hint(
        "`rag ingest` needs a writable index folder; searching, asking and stats work on a "
        "read-only one",
        "building the index needs a writable folder; searching and asking work on a read-only one",
    ),
    "read_only_copy": Hint(
        "free space in {temp}, or make the folder writable",
        "free space in {temp}, or make the folder writable",
        joiner="; ",
    ),
    "wait_for_ingest": Hint(
        "wait for it to finish, or set store.lock_timeout to wait",
        "wait for it to finish, or set store.lock_timeout to wait",
        joiner="; ",
    ),
    "free_disk": Hint(
        "free some space and run it again (the index is unchanged)",
        "free some space and build it again (the index is unchanged)",
        joiner="; ",
    ),
    "start_chroma": Hint(
        "start it with `chroma run --path DIR --port PORT`, or set store.mode = 'embedded'",
        "start it with `chroma run --path DIR --port PORT`, or set store.mode = 'embedded'",
        joiner="; ",
    ),
    "check_chroma": Hint(
        "check that it is running (`chroma run --path DIR --port PORT`)",
        "check that it is running (`chroma run --path DIR --port PORT`)",
        joiner="; ",
    ),
    "finish_after_disk_full": Hint(
        "free some space and run the same command again to finish",
        "free some space and build the index again to finish",
        joiner="; ",
    ),
    "chroma_credentials": Hint(
        "set {token} to its token, or {headers} to the headers it expects (JSON)",
        "set {token} to its token, or {headers} to the headers it expects (JSON)",
        joiner="; ",
    ),
    # The models.
    "api_key_or_offline": Hint(
        "set {variable}, or set llm.base_url to an OpenAI-compatible server, or use "
        "--config offline",
        "set {variable}, or set llm.base_url to an OpenAI-compatible server, or choose "
        "Offline in the model menu",
    ),
    "embedding_key": Hint(
        "set {variable}, or use embedding.provider = 'local'",
        "set {variable}, or use embedding.provider = 'local'",
    ),
    "model_name": Hint(
        "use 'provider:model', 'auto' or 'offline'",
        "use 'provider:model', 'auto' or 'offline', or choose another in the model menu",
    ),
    "start_model_server": Hint(
        "start that server, or set llm.base_url (RAG_LLM__BASE_URL) to one that is running. "
        "Your question and the chat are kept; ask again, or use --config offline.",
        "start that server, or choose another model in the model menu. Your question and the "
        "chat are kept; ask again.",
    ),
    "retry_or_offline": Hint(
        "your question and the chat are kept; ask again, or use --config offline",
        "your question and the chat are kept; ask again, or choose Offline in the model menu",
        joiner=". ",
    ),
    "compare_offline": Hint(
        "try again, or compare offline with --config offline",
        "try again, or choose Offline in the model menu",
        joiner="; ",
    ),
    # The question.
    "ask_a_question": Hint(
        "type a question about {venue} papers.", "type a question about {venue} papers."
    ),
    "shorten_question": Hint(
        "keep it under {limit}.", "keep it under {limit} characters.", joiner="; "
    ),
    # The configuration.
    "fix_config": Hint(
        "fix the value where it is set, or give another file with --config",
        "fix the value where it is set, then reload the page",
        joiner=". ",
    ),
    "toml_file": Hint("give a TOML config file", "point RAG_CONFIG at a TOML config file"),
    "save_utf8": Hint("save it as UTF-8", "save it as UTF-8", joiner="; "),
    "json_list": Hint(
        "give a JSON list, e.g. {name}='[\"data/papers.jsonl\"]'",
        "give a JSON list, e.g. {name}='[\"data/papers.jsonl\"]'",
        joiner="; ",
    ),
    "json_object": Hint(
        "give a JSON object, or one key at a time, e.g. {name}__KEY=VALUE",
        "give a JSON object, or one key at a time, e.g. {name}__KEY=VALUE",
        joiner="; ",
    ),
    "check_variables": Hint("check the RAG_ variables", "check the RAG_ variables", joiner="; "),
}

_SENTENCE_ENDS = (".", "!", "?")
_WORDINGS: tuple[Literal["command", "action"], ...] = ("command", "action")


def _joined(problem: str, hint: Hint, wording: str) -> str:
    """The problem and a hint's wording: a sentence of its own after a sentence (or where the
    hint's joiner says so), else after the hint's joiner."""
    if hint.joiner.strip() == "." or problem.endswith(_SENTENCE_ENDS):
        head = problem if problem.endswith(_SENTENCE_ENDS) else problem + "."
        sentence = wording[:1].upper() + wording[1:]
        return f"{head} {sentence if sentence.endswith(_SENTENCE_ENDS) else sentence + '.'}"
    return f"{problem}{hint.joiner}{wording}"


class RagError(Exception):
    """Bad input, configuration or environment, as opposed to a bug; printed as one line.

    `RagError(problem, code=..., hint=..., hint_args=...)`; a `RagError` given as the problem
    (one error wrapping another) passes on its problem, code and hint unless given here."""

    code = "error"  # each subclass names its own; an instance may be more precise
    problem: str  # what is wrong and where, without advice
    hint: str | None  # a key of HINTS, or None: the problem says it all
    hint_args: dict[str, object]  # the fields the hint's wordings name

    def __init__(
        self,
        problem: object = "",
        *args: object,
        code: str | None = None,
        hint: str | None = None,
        hint_args: Mapping[str, object] | None = None,
    ) -> None:
        if isinstance(problem, RagError):
            code = code or problem.code
            if hint is None:
                hint, hint_args = problem.hint, problem.hint_args
            problem = problem.problem
        self.problem = str(problem)
        self.hint = hint
        self.hint_args: dict[str, object] = dict(hint_args or {})
        if hint is not None:
            if hint not in HINTS:
                raise KeyError(f"no hint {hint!r} in rag.errors.HINTS")
            for how in _WORDINGS:  # every field the hint names is given
                self._word(how)
        self.message = self.worded("command")  # the problem and the command's wording
        super().__init__(self.message, *args)
        if code is not None:
            self.code = code

    def _word(self, how: Literal["command", "action"]) -> str:
        assert self.hint is not None
        template = getattr(HINTS[self.hint], how)
        try:
            return str(template.format_map(self.hint_args))
        except KeyError as e:
            raise KeyError(f"hint {self.hint!r} needs hint_args[{e}]") from None

    def worded(self, how: Literal["command", "action"]) -> str:
        """The problem with its hint worded for the command line (a command to run or a flag
        to give) or for the page (a button or menu to use)."""
        if self.hint is None:
            return self.problem
        return _joined(self.problem, HINTS[self.hint], self._word(how))


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
    """A model cannot be built or reached; the hint says what to set or do."""

    code = "model_failed"


class MultilingualError(ModelError):
    """The multilingual encoder or its vectors cannot be used; the hint says what to do."""

    code = "multilingual_failed"


class UsageError(RagError, ValueError):
    """A command-line argument or input file is wrong (`rag.cli`)."""

    code = "bad_usage"


class CompareError(RagError, ValueError):
    """The comparison cannot be made; the message says why, the hint what to do."""

    code = "compare_failed"


class StoreError(RagError, RuntimeError):
    """The index cannot be opened or reached; the hint says what to do."""

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


class AnswerError(RagError, RuntimeError):
    """The answer could not be produced; the hint says what to set or do. `question` is the
    question asked, kept for asking again."""

    code = "answer_failed"

    def __init__(
        self,
        problem: object,
        question: str = "",
        *,
        code: str | None = None,
        hint: str | None = None,
        hint_args: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(problem, code=code, hint=hint, hint_args=hint_args)
        self.question = question
