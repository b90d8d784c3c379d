"""How far one question travels (issue 29's structure targets), this tree beside a baseline.

    python -m bench.answer_path [--baseline REV] [--json]

- **modules per question**: the project modules (files under rag/) whose functions run while
  the offline `rag ask` answers a question (after one warm-up question, so loading the
  index is not counted), for a topical question, a named paper and a list;
- **imports per answer module**: the project modules each module of rag/answer/ imports when
  it runs (those under `if TYPE_CHECKING:`, for annotations only, are not counted);
- **regex call sites**: calls of `re.*` and of compiled patterns (`PATTERN.search(...)`) in
  rag/answer/ and in rag/, counted in the syntax tree.

The static figures of REV are read with `git show`; its modules per question are measured in
a temporary detached worktree of REV with its own index (built from the shipped vectors),
removed afterwards.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

QUESTIONS = {
    "topic": "How can INT4 weight-activation quantization deal with outliers in activations?",
    "named": "explain FlexPrefill in simple terms",
    "list": "Which papers make attention cheaper for long sequences?",
}
REGEX_METHODS = {"search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"}


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def sources(rev: str | None) -> dict[str, str]:
    """path -> text of every rag/**/*.py, in this tree or at `rev`."""
    if rev is None:
        return {str(p): p.read_text(encoding="utf-8") for p in sorted(Path("rag").rglob("*.py"))}
    names = git("ls-tree", "-r", "--name-only", rev, "rag").split()
    return {n: git("show", f"{rev}:{n}") for n in names if n.endswith(".py")}


def module_of(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """The nodes that run: everything but `if TYPE_CHECKING:` blocks (annotations only)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for child in node.body for n in ast.walk(child)}
    return [n for n in ast.walk(tree) if id(n) not in skipped]


def project_imports(path: str, text: str, modules: set[str]) -> set[str]:
    """The project modules `text` imports when it runs (a package import counts as its
    __init__; imports for annotations only, under `if TYPE_CHECKING:`, do not count)."""
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rag"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("rag")}
    return found - {module_of(path)}


def regex_calls(text: str) -> int:
    """Calls of the re module and of module-level compiled patterns (UPPER or _UPPER names)."""
    count = 0
    for node in ast.walk(ast.parse(text)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner, attr = node.func.value, node.func.attr
        if isinstance(owner, ast.Name) and owner.id == "re" and attr != "escape":
            count += 1
        elif (
            attr in REGEX_METHODS and isinstance(owner, ast.Name) and owner.id.lstrip("_").isupper()
        ):
            count += 1
    return count


def static(rev: str | None) -> dict[str, Any]:
    files = sources(rev)
    modules = {module_of(p) for p in files}
    answer = {p: t for p, t in files.items() if p.startswith("rag/answer/")}
    imports = {module_of(p): len(project_imports(p, t, modules)) for p, t in answer.items()}
    return {
        "imports": dict(sorted(imports.items(), key=lambda kv: -kv[1])),
        "regex_answer": sum(regex_calls(t) for t in answer.values()),
        "regex_rag": sum(regex_calls(t) for t in files.values()),
    }


def modules_per_question() -> dict[str, list[str]]:
    """The rag modules whose code runs while each question is answered offline."""
    os.environ["RAG_LLM__MODEL"] = "offline"
    from rag.answer.pipeline import answer, open_assistant
    from rag.settings import get_settings

    assistant = open_assistant(get_settings())
    answer("warm up the index", assistant=assistant)
    root = str(Path("rag").resolve())
    result: dict[str, list[str]] = {}
    for kind, question in QUESTIONS.items():
        seen: set[str] = set()

        def profile(frame: Any, event: str, _arg: Any, seen: set[str] = seen) -> None:
            if event == "call" and frame.f_code.co_filename.startswith(root):
                seen.add(frame.f_code.co_filename)

        sys.setprofile(profile)
        try:
            answer(question, assistant=assistant)
        finally:
            sys.setprofile(None)
        result[kind] = sorted(module_of(str(Path(f).relative_to(Path(root).parent))) for f in seen)
    return result


def baseline_path(rev: str) -> dict[str, list[str]]:
    from bench.baseline import measure_at

    measured: dict[str, list[str]] = measure_at(rev, "answer_path.py", [])
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a git revision measured beside this tree")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.out:  # a baseline's run (bench.baseline): its modules per question only
        args.out.write_text(json.dumps(modules_per_question()), encoding="utf-8")
        return
    columns = {"this tree": (static(None), modules_per_question())}
    if args.baseline:
        columns[args.baseline] = (static(args.baseline), baseline_path(args.baseline))
    if args.json:
        print(json.dumps({k: {"static": s, "path": p} for k, (s, p) in columns.items()}))
        return
    names = list(columns)
    print(f"{'':34}" + "".join(f"{n:>14}" for n in names))
    for kind in QUESTIONS:
        row = [len(columns[n][1][kind]) for n in names]
        print(f"{'modules per question, ' + kind:34}" + "".join(f"{v:>14}" for v in row))
    rows = {
        "most imports, one rag/answer module": lambda s: max(s["imports"].values()),
        "rag/answer modules importing > 10": lambda s: sum(v > 10 for v in s["imports"].values()),
        "regex call sites, rag/answer": lambda s: s["regex_answer"],
        "regex call sites, rag": lambda s: s["regex_rag"],
    }
    for label, get in rows.items():
        print(f"{label:34}" + "".join(f"{get(columns[n][0]):>14}" for n in names))
    for n in names:
        top = list(columns[n][0]["imports"].items())[:4]
        print(f"\n{n}: most imports: " + ", ".join(f"{m} {v}" for m, v in top))


if __name__ == "__main__":
    main()
