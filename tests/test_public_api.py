"""The two callers, the page (ui/) and the command (rag/cli/), use the library through `rag`
alone (issue 29): no module of theirs imports an internal module of the library.

Allowed besides `rag` itself (rag/__init__.py says so too): `rag.settings`, `rag.errors` and
`rag.types` (settings and plain data types), and, inside rag/cli/, its own modules.
`rag/cli/vectors.py` is left out: `rag vectors build` is the maintainer's tool that writes the
files shipped inside `rag.index` (vectors, chunk plans, the map), the index's own tooling
rather than a caller of the assistant.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rag

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {"rag", "rag.settings", "rag.errors", "rag.types"}
NOT_CALLERS = {"rag/cli/vectors.py"}


def caller_files() -> list[Path]:
    files = sorted((ROOT / "ui").rglob("*.py")) + sorted((ROOT / "rag" / "cli").rglob("*.py"))
    return [f for f in files if f.relative_to(ROOT).as_posix() not in NOT_CALLERS]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports (at any depth: in functions and TYPE_CHECKING blocks too);
    `from rag import x` is `rag`, whatever `x` is."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
    return found


def internal_imports(path: Path) -> list[str]:
    own = "rag.cli" if path.is_relative_to(ROOT / "rag" / "cli") else "ui"
    bad = []
    for line, module in imported_modules(path):
        if module != "rag" and not module.startswith("rag."):
            continue
        if module in ALLOWED or module == own or module.startswith(own + "."):
            continue
        bad.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    return bad


def test_the_callers_import_only_the_public_api() -> None:
    bad = [line for path in caller_files() for line in internal_imports(path)]
    assert not bad, "internal imports in ui/ or rag/cli/ (use `rag`):\n" + "\n".join(bad)


@pytest.mark.parametrize("name", sorted(rag.__all__))
def test_every_public_name_resolves(name: str) -> None:
    """A name moved inside the library fails here, not at the page's first use of it."""
    assert getattr(rag, name) is not None


def test_the_public_names_are_listed_once() -> None:
    assert sorted(rag.__all__) == sorted(set(rag.__all__)) == sorted(rag._PUBLIC)
