"""The layout shows the flow: each stage of rag/ imports only the stages before it.

Read from the source with `ast`, function-level imports included, so a lazy import cannot
bend the flow back unnoticed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Bottom to top. A module may import its own package and any package listed before it.
LAYERS = [
    ("settings", "settings_table", "errors", "types", "venue", "common"),
    ("corpus",),
    ("lang",),
    ("models",),
    ("index",),
    ("retrieval",),
    ("answer",),
    ("explore",),
    ("evaluation",),
    ("session",),  # one conversation, over the answer stage: what ui/ and the cli call
    ("cli",),
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}
MAX_LINES = 450


def stage(module: str) -> str | None:
    """'rag.index.bm25' -> 'index'; 'rag' itself (the lazy public API) -> None."""
    parts = module.split(".")
    return parts[1] if parts[0] == "rag" and len(parts) > 1 else None


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] == "rag"}


def rag_modules() -> list[Path]:
    return sorted((ROOT / "rag").rglob("*.py"))


def test_every_stage_is_in_a_layer() -> None:
    packages = {p.name for p in (ROOT / "rag").iterdir() if p.is_dir() and p.name != "__pycache__"}
    modules = {p.stem for p in (ROOT / "rag").glob("*.py") if p.stem != "__init__"}
    assert packages | modules <= set(LEVEL), "a new stage needs its place in LAYERS"


@pytest.mark.parametrize("path", rag_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_only_earlier_stages(path: Path) -> None:
    own = stage(".".join(path.relative_to(ROOT).with_suffix("").parts))
    if own is None or own == "__init__":
        return
    backwards = sorted(
        m for m in imported(path) if (other := stage(m)) in LEVEL and LEVEL[other] > LEVEL[own]
    )
    assert not backwards, f"{path.relative_to(ROOT)} ({own}) imports later stages: {backwards}"


def test_ui_and_cli_use_no_backend_client_directly() -> None:
    for path in [*sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "rag" / "cli").glob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        for client in ("import chromadb", "from chromadb", "import openai", "from openai"):
            assert client not in text, f"{path.relative_to(ROOT)}: {client}"


@pytest.mark.parametrize("folder", ["rag", "ui"])
def test_no_module_over_the_size_limit(folder: str) -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / folder).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}"


def test_every_exception_a_user_can_cause_is_a_rag_error() -> None:
    """Exception classes of rag/ derive from RagError, so the CLI and the page catch one type."""
    import importlib

    from rag.errors import RagError

    internal = {"BudgetExceeded"}  # ends a model call; turned into an AnswerError before a user
    offenders = []
    for path in rag_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [
            n.name
            for n in tree.body
            if isinstance(n, ast.ClassDef) and n.name.endswith(("Error", "Exceeded"))
        ]
        if not names:
            continue
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name in names:
            cls = getattr(module, name)
            if (
                issubclass(cls, Exception)
                and name not in internal
                and not issubclass(cls, RagError)
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{name}")
    assert not offenders
