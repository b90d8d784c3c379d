"""The venue is one record (rag.venue.VENUE, issue 29): no other module writes "ICLR 2025", and
the prompts, the fixed messages, the BibTeX entry, the tiers and the venue words follow it."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from rag.answer.prompts import JUDGE_PROMPT, REWRITE_PROMPT, SYSTEM_PROMPT
from rag.corpus.bibtex import BOOKTITLE, YEAR
from rag.lang.intent import without_venue
from rag.lang.messages import MESSAGES
from rag.types import TIERS, tier_of
from rag.venue import VENUE

ROOT = Path(__file__).resolve().parents[1]
# "ICLR 2025", "ICLR2025", "ICLR'25", "ICLR-2025" and the OpenReview id "ICLR.cc/2025/...".
LITERAL = re.compile(r"ICLR(?:[ '\-]?\d|\.cc/\d)")
DEFINING = "rag/venue.py"
# Files allowed to write the venue besides rag/venue.py: none any more.
OWNED_ELSEWHERE: set[str] = set()


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def venue_literals(path: Path) -> list[str]:
    """The string constants of `path` (f-strings' text parts too, docstrings not) that name
    the venue outright."""
    tree = ast.parse(path.read_text("utf-8"))
    docs = _docstrings(tree)
    return [
        f"{path.name}:{node.lineno}: {node.value[:50]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and LITERAL.search(node.value)
    ]


def test_only_the_venue_module_writes_the_venue() -> None:
    found = []
    for folder in ("rag", "ui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative != DEFINING and relative not in OWNED_ELSEWHERE:
                found += venue_literals(path)
    assert found == []
    assert venue_literals(ROOT / DEFINING) == []  # built from its fields, not written out


def test_the_scan_sees_code_strings_not_docstrings_or_comments(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        '"""About ICLR 2025 papers."""\n# ICLR 2025\n'
        'def f(x):\n    """ICLR2025."""\n'
        '    return f"At ICLR 2025 {x}", "ICLR.cc/2025/C", "ICLR"\n',
        "utf-8",
    )
    assert sorted(hit.split(": ", 1)[1] for hit in venue_literals(module)) == [
        "'At ICLR 2025 '",
        "'ICLR.cc/2025/C'",
    ]


def test_texts_are_derived_from_the_record() -> None:
    assert VENUE.label == "ICLR 2025"
    assert TIERS == VENUE.tiers == ("Oral", "Spotlight", "Poster")
    assert BOOKTITLE == f"The {VENUE.edition} {VENUE.full_name}"
    assert YEAR == str(VENUE.year)
    for prompt in (SYSTEM_PROMPT, REWRITE_PROMPT, JUDGE_PROMPT):
        assert f"about {VENUE.label} papers" in prompt
    assert '{"answers": [{"n": N, "reason": R}]}' in JUDGE_PROMPT  # the f-string kept its JSON
    assert MESSAGES["en"]["no_coverage"].startswith(f"No {VENUE.label} abstract")
    assert VENUE.label in MESSAGES["zh"]["no_coverage"]
    # A researcher in the page read "rag fetch openreview ..." as a developer's command.
    assert "OpenReview page" in MESSAGES["en"]["no_abstract"]
    assert "rag fetch" not in MESSAGES["en"]["no_abstract"] + MESSAGES["zh"]["no_abstract"]
    assert tier_of(f"{VENUE.label} Spotlight") == "Spotlight"
    assert without_venue(f"papers on RLHF at {VENUE.label}") == "papers on RLHF"


# Run in a fresh interpreter, VENUE replaced before anything reads it: every text follows.
_PROBE = """
import dataclasses, json
import rag.venue
rag.venue.VENUE = dataclasses.replace(
    rag.venue.VENUE, name="TESTCONF", year=2031, full_name="Testing Conference",
    edition="First", tiers=("Talk", "Poster"),
)
from rag.answer.prompts import SYSTEM_PROMPT
from rag.cli.main import build_parser
from rag.corpus.bibtex import bibtex
from rag.lang.intent import without_venue
from rag.lang.messages import MESSAGES
from rag.settings import StoreSettings
from rag.types import TIERS, Paper, tier_of
paper = Paper(id="abc", title="Scaling Things", abstract="x", authors=("Ada Lovelace",),
              decision="Accept (Talk)", url="https://openreview.net/forum?id=abc")
print(json.dumps({
    "prompt": SYSTEM_PROMPT.splitlines()[0],
    "message": MESSAGES["en"]["no_coverage"],
    "message_zh": MESSAGES["zh"]["no_coverage"],
    "bibtex": bibtex([paper]),
    "tiers": list(TIERS),
    "tier": tier_of("TESTCONF 2031 Talk"),
    "search": without_venue("papers on RLHF at TestConf'31"),
    "collection": StoreSettings().collection,
    "cli": build_parser().description,
}))
"""


def test_changing_the_record_changes_every_text() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True
    )
    seen = json.loads(done.stdout)
    assert seen["prompt"].startswith("You answer questions about TESTCONF 2031 papers")
    assert seen["message"] == "No TESTCONF 2031 abstract in the index covers this question."
    assert "TESTCONF 2031" in seen["message_zh"]
    assert "booktitle = {The First Testing Conference}" in seen["bibtex"]
    assert "year = {2031}" in seen["bibtex"] and "lovelace2031scaling" in seen["bibtex"]
    assert seen["tiers"] == ["Talk", "Poster"] and seen["tier"] == "Talk"
    assert seen["search"] == "papers on RLHF"
    assert seen["collection"] == "testconf2031"
    assert seen["cli"] == "Ask questions about TESTCONF 2031 papers, grounded in abstracts."
