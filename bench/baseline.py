"""A benchmark measured on another revision in the same run: a temporary detached worktree
of REV with its own index (built from the shipped vectors), the script copied into it and
run there with `--out FILE`, the JSON it writes read back, the worktree removed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def measure_at(rev: str, script: str, args: list[str]) -> Any:
    """Run bench `script` (this file's sibling, e.g. "answer_latency.py") at `rev` with
    `args` and `--out FILE`, and return what it wrote there."""
    top = Path(git("rev-parse", "--show-toplevel"))
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    tree = Path(tempfile.mkdtemp(prefix="bench-baseline-")) / "tree"
    git("worktree", "add", "--detach", str(tree), commit, cwd=top)
    try:
        env = dict(os.environ, PYTHONPATH=str(tree), RAG_LLM__MODEL="offline")
        env["RAG_STORE__INDEX_DIR"] = str(tree / ".rag" / "index")
        print(f"baseline {rev} ({commit[:10]}): building its index", file=sys.stderr)
        ingest = [sys.executable, "-m", "rag.cli", "ingest"]
        subprocess.run(ingest, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
        copy = "_baseline_" + script
        shutil.copyfile(Path(__file__).with_name(script), tree / "bench" / copy)
        out = tree.parent / "measured.json"
        cmd = [sys.executable, "-m", f"bench.{copy.removesuffix('.py')}", *args, "--out", str(out)]
        subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text(encoding="utf-8"))
    finally:
        git("worktree", "remove", "--force", str(tree), cwd=top)
        shutil.rmtree(tree.parent, ignore_errors=True)
