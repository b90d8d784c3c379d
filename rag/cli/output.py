"""What the `rag` commands print: text a terminal shows rather than obeys, and JSON lines.

Titles, abstracts and answers are untrusted, so whatever carries them is printed through
`say` (`terminal_text`) or `json_line`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag import latex_to_text, own_macros
from rag.errors import RagError

if TYPE_CHECKING:
    from rag import Comparison
    from rag.types import Paper

# What a terminal obeys rather than shows: escape sequences (colours, clearing the screen,
# setting the title), other C0/C1 controls, and bidirectional overrides that reorder text.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clearing the screen
    r"|(?:\x1b[\]P^_X]|[\x9d\x90\x9e\x9f\x98])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC...
    r"|\x1b[ -~]"  # two-character escapes
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def terminal_text(text: str) -> str:
    """`text` with nothing a terminal would obey: escape sequences and controls removed.

    Titles, abstracts and answers are untrusted; newlines and tabs are kept.
    """
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))


def json_line(value: Any) -> str:
    """One JSON line; characters a terminal obeys are \\u-escaped (JSON escapes only C0)."""
    return _JSON_UNSAFE.sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False)
    )


def say(text: str = "", end: str = "\n") -> None:
    print(terminal_text(text), end=end)


def paper_fields(paper: Paper, *names: str) -> dict[str, Any]:
    """The named fields of `paper` for JSON output, in that order ("paper_id" is its id)."""
    return {name: paper.id if name == "paper_id" else getattr(paper, name) for name in names}


def ranked_line(rank: int, paper: Paper, similarity: float) -> str:
    """One line of a ranked list of papers: title, tier, id and similarity."""
    tier = f" [{paper.tier}]" if paper.tier else ""
    return f"{rank}. {readable(paper.shown_title)}{tier}  ({paper.id}, similarity {similarity:.2f})"


class progress_bar:
    """A tqdm bar on stderr fed by `progress(done_now, total)` calls."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.bar: Any = None

    def __enter__(self) -> Callable[[int, int], None]:
        return self.update

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=f" {self.unit}", file=sys.stderr, dynamic_ncols=True)
        self.bar.update(done)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def readable(text: str, macros: Mapping[str, str] | None = None) -> str:
    """Text as a reader sees it, line by line: LaTeX as plain text, a paper's own macro as its
    name (`\\ours` -> FlashMask), as the page shows it; the answer's Markdown kept. The exact
    text (the quote as evidence) is in `--json`."""
    return "\n".join(
        latex_to_text(line, macros, emphasis=True) if line.strip() else line
        for line in text.split("\n")
    )


def say_answer(result: Any) -> None:
    """An answer as text: itself, its references, the model."""
    macros = own_macros((s.paper.title, s.paper.abstract) for s in result.sources)
    say(readable(result.answer, macros))
    if result.citations:
        say("\nReferences:")
    for c in result.citations:
        say(f"[{c.n}] {readable(c.title)}" + (f" ({c.decision})" if c.decision else ""))
        if c.url:
            say(f"    {c.url}")
        if c.supported is False:
            say("    (claim not found in this abstract)")
        else:
            unchecked = "" if c.supported else " (nearest sentence; not checked)"
            say(f'    "{readable(c.quote, macros)}"{unchecked}')
    # How the question was read (a follow-up answered from earlier sources, a tier filter, a
    # mistyped word) and a list's "checked 20, 7 match": whole sentences, on their own line.
    note = " ".join(n for n in (result.scope_note, result.judge_note) if n)
    say(f"\n(answered by {result.model})" + (f"\n{note}" if note else ""))


def say_comparison(table: Comparison, numbers: Sequence[int] = ()) -> None:
    """The comparison table as text: the papers, then each row's cells by paper number.

    `numbers` are the papers' numbers where the table goes (an answer's sources); cells
    cite with them.
    """
    shown = list(numbers) or list(range(1, len(table.papers) + 1))

    def renumbered(text: str) -> str:
        def number(m: re.Match[str]) -> str:
            k = int(m.group(1))
            return f"[{shown[k - 1]}]" if 1 <= k <= len(shown) else m.group(0)

        return re.sub(r"\[(\d+)\]", number, text)

    macros = own_macros((p.title, p.abstract) for p in table.papers)
    for n, paper in zip(shown, table.papers, strict=True):
        title = readable(paper.title)
        say(f"[{n}] {title}" + (f" ({paper.decision})" if paper.decision else ""))
    for row in table.rows:
        say(f"\n## {row.label}")
        for cell in row.cells:
            say(f"  [{shown[cell.n - 1]}] {readable(renumbered(cell.text), macros) or '–'}")
    if table.dropped_citations:
        say(f"\n({table.dropped_citations} citation(s) to other papers were removed)")
    say(f"\n(compared by {table.model})")


def error_text(error: BaseException) -> str:
    """An error as `rag` says it: a `RagError`'s hint worded as a command to run or a flag to
    give (the page words it as something to click, `RagError.worded`)."""
    return error.worded("command") if isinstance(error, RagError) else str(error)


def note_calibration(calibration: Any) -> None:
    """One line on stderr when the configured embeddings have no fitted constants."""
    from rag import uncalibrated_note

    note = uncalibrated_note(calibration)
    if note:
        print(f"note: {terminal_text(note)}", file=sys.stderr)
