"""The table of every setting in docs/configuration.md, generated from `rag.settings.Settings`.

    python -m rag.settings_table            # print the table
    python -m rag.settings_table --write    # rewrite the block in docs/configuration.md
    python -m rag.settings_table --check    # exit 1 when the block is out of date

The table sits between two marker lines of the page; tests/test_docs.py fails when it differs
from what this module generates, so the page cannot drift from the code.
"""

from __future__ import annotations

import argparse
import sys
import typing
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from rag.settings import ENV_PREFIX, PROJECT_ROOT, Settings

DOC = PROJECT_ROOT / "docs" / "configuration.md"
START = "<!-- settings-table:start -->"
END = "<!-- settings-table:end -->"
HEADER = (
    "| setting | default | allowed | description |",
    "|---|---|---|---|",
)


def settings_table() -> str:
    """A Markdown table, one row per setting (`section.field`), in the models' order."""
    rows = list(HEADER)
    for key, info in _leaves(Settings):
        cells = (f"`{key}`", _default(info), _allowed(info), _escape(info.description or ""))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def env_name(key: str) -> str:
    """The environment variable that sets `key`: `llm.model` -> `RAG_LLM__MODEL`."""
    return ENV_PREFIX + "__".join(part.upper() for part in key.split("."))


def _leaves(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, FieldInfo]]:
    for name, info in model.model_fields.items():
        section = info.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            yield from _leaves(section, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", info


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "(required)"
    else:
        value = info.default
    if value is None:
        return "(none)"
    return f"`{_escape(_toml(value))}`"


def _toml(value: Any) -> str:
    """A default as it would be written in a config file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return _toml(value.value)
    if isinstance(value, str | Path):
        return f'"{value}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def _allowed(info: FieldInfo) -> str:
    """The choices of a Literal, or the bounds of a number."""
    annotation = info.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return " or ".join(f"`{_escape(_toml(choice))}`" for choice in typing.get_args(annotation))
    bounds = []
    for rule in info.metadata:
        if isinstance(rule, Ge):
            bounds.append(f"≥ {rule.ge}")
        elif isinstance(rule, Gt):
            bounds.append(f"> {rule.gt}")
        elif isinstance(rule, Le):
            bounds.append(f"≤ {rule.le}")
        elif isinstance(rule, Lt):
            bounds.append(f"< {rule.lt}")
    return ", ".join(bounds)


def _escape(text: str) -> str:
    """Text that stays inside one table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def current_block(text: str) -> str:
    """What the page holds between the two marker lines."""
    start, end = _markers(text)
    return text[start:end]


def with_table(text: str, table: str) -> str:
    """The page with `table` between the marker lines."""
    start, end = _markers(text)
    return text[:start] + table + text[end:]


def _markers(text: str) -> tuple[int, int]:
    start = text.find(START + "\n")
    end = text.find(END, start + 1)
    if start < 0 or end < 0:
        raise ValueError(f"the page needs the lines {START} and {END}, in that order")
    return start + len(START) + 1, end


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag.settings_table", description=__doc__)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"rewrite the table in {DOC.name}")
    action.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    parser.add_argument("--doc", type=Path, default=DOC, help="the page (docs/configuration.md)")
    args = parser.parse_args(argv)
    table = settings_table()
    if not (args.write or args.check):
        print(table, end="")
        return 0
    text = args.doc.read_text(encoding="utf-8")
    if args.check:
        if current_block(text) != table:
            print(f"{args.doc}: stale; run `python -m rag.settings_table --write`", file=sys.stderr)
            return 1
        return 0
    updated = with_table(text, table)
    if updated != text:
        from rag.common.atomic import atomic_write

        atomic_write(args.doc, updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
