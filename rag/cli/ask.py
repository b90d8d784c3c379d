"""`rag ask`: one question, a batch of them, or conversations, each answer streamed.

Streamed so that a timeout closes the connection and the server stops generating (an
abandoned plain request keeps a local server busy for the next question). In a batch or a
conversation a failed question prints its own line with an "error" and the rest go on; the
exit code says that some failed.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from rag import Session, redact  # light: the library loads at the first question
from rag.cli.inputs import questions_from, read_conversations
from rag.cli.output import (
    error_text,
    json_line,
    note_calibration,
    say,
    say_answer,
    say_comparison,
    terminal_text,
)
from rag.errors import CompareError, RagError, UsageError
from rag.settings import Settings

if TYPE_CHECKING:
    from rag import Assistant, CitedAnswer

EXIT_SOME_FAILED = 2


def run_ask(args: argparse.Namespace, settings: Settings) -> int:
    """Each question on its own (a batch's questions are not a conversation). Each answer is
    `Session.answer`: the streamed pieces are not printed, as the checked text renumbers the
    markers."""
    from rag import open_assistant

    if args.conversation is not None:
        return run_conversations(args, settings)
    questions = list(questions_from(args))
    assistant = open_assistant(settings)
    note_calibration(assistant.retriever.calibration)
    failed = 0
    for question in questions:
        try:
            result = Session(assistant).answer(question)
        except RagError as e:
            if not args.batch:
                raise
            failed += 1
            _say_error(args, question, e, settings)
            continue
        if args.json:
            row = result.as_json()
            row = {"question": question, **row} if args.batch else row
            print(json_line(row))
            continue
        if args.batch:
            say(f"## {question}")
        say_answer(result)
        say_compared(result, assistant)
        say("\n" if args.batch else "", end="")
    return EXIT_SOME_FAILED if failed else 0


def run_conversations(args: argparse.Namespace, settings: Settings) -> int:
    """Each line's questions asked in turn in one `Session`, each follow-up seeing the answers
    before it; a failed turn leaves the conversation as it was."""
    from rag import open_assistant

    if args.question is not None or args.batch is not None:
        raise UsageError("give either a QUESTION, --batch FILE or --conversation FILE")
    conversations = read_conversations(args.conversation)
    assistant = open_assistant(settings)
    note_calibration(assistant.retriever.calibration)
    failed = 0
    for number, questions in enumerate(conversations, start=1):
        session = Session(assistant)
        turns: list[dict[str, Any]] = []
        if not args.json:
            say(f"# Conversation {number}")
        for question in questions:
            try:
                result = session.answer(question)
            except RagError as e:  # this turn failed: the others are kept, the next go on
                failed += 1
                turns.append({"question": question, **_error_fields(e, settings)})
                if not args.json:
                    say(f"## {question}")
                    _say_error(args, question, e, settings)
                continue
            turns.append({"question": question, **result.as_json()})
            if not args.json:
                say(f"## {question}")
                say_answer(result)
                say_compared(result, assistant)
                say()
        if args.json:
            print(json_line({"turns": turns}))
    return EXIT_SOME_FAILED if failed else 0


def say_compared(result: CitedAnswer, assistant: Assistant) -> None:
    """ "compare them": the comparison table the answer names (`CitedAnswer.compare`), as
    `rag compare` prints it, numbered as the answer's sources."""
    from rag import compare_papers

    if not result.compare:
        return
    try:
        table = compare_papers(
            [result.sources[n - 1].paper for n in result.compare],
            chat_model=assistant.chat_model,
            embeddings=assistant.embeddings,
            model_name=assistant.model,
            llm=assistant.settings.llm,
        )
    except CompareError as e:  # the answer stands; the table is said to be missing
        print(f"error: no comparison table: {terminal_text(error_text(e))}", file=sys.stderr)
        return
    say()
    say_comparison(table, result.compare)


def _message(error: Exception, settings: Settings) -> str:
    return terminal_text(redact(error_text(error), settings))


def _error_fields(error: Exception, settings: Settings) -> dict[str, str]:
    """A failed question's JSON fields: the message, and the error's code ("model_failed")."""
    code = getattr(error, "code", None)
    return {"error": _message(error, settings), **({"code": code} if code else {})}


def _say_error(
    args: argparse.Namespace, question: str, error: Exception, settings: Settings
) -> None:
    if args.json and not args.conversation:
        print(json_line({"question": question, **_error_fields(error, settings)}))
    elif not args.conversation:
        say(f"## {question}")
        print(f"error: {_message(error, settings)}", file=sys.stderr)
    else:
        print(f"error: {_message(error, settings)}", file=sys.stderr)
