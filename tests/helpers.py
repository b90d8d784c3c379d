"""Helpers that tests import: settings for a temporary index, reading it back, test data paths."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from rag.index.store import make_client
from rag.settings import BUNDLED_PAPERS, EVAL_DATA, Settings, get_settings, with_overrides

ROOT = Path(__file__).resolve().parents[1]
CORPUS_JSONL = BUNDLED_PAPERS  # the 2,105 real papers, bundled in data/iclr2025
EVAL_QUESTIONS = EVAL_DATA / "questions.jsonl"  # rag eval's 286 labelled questions
DATA = Path(__file__).resolve().parent / "data"
ARTIFACTS = ROOT / "tests" / "artifacts"  # browser screenshots (ignored by git)

# The browser tests' hostile paper: <script>, <img onerror> and Markdown/Streamlit markup in
# its title and abstract, all of which must show as text (conftest.py: quokka_index).
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
QUOKKA_PAPER = {
    "id": "QuokkaXSS01",
    "title": f"QuokkaNet {SCRIPT}: counting quokkas [from](javascript:alert(4)) the air",
    "abstract": (
        "Counting wild quokkas on Rottnest Island from drone imagery is slow and error prone. "
        "We introduce QuokkaNet, a detector that counts quokkas in aerial drone photographs "
        f"{SCRIPT} even under dense shrubland cover. QuokkaNet renders {IMG} tiles at "
        ":red[two] scales with $x^2$ **bold** cost and [a link](javascript:alert(3)). "
        "On 1,200 annotated drone flights, QuokkaNet counts quokkas with 97% accuracy, "
        "beating manual surveys."
    ),
    "authors": ["A. Tester"],
    "decision": "Accept (Spotlight)",
    "url": "https://openreview.net/forum?id=QuokkaXSS01",
}
QUOKKA_QUESTION = "How does QuokkaNet count quokkas in drone images?"


def make_settings(index_dir: Path, **sections: dict[str, Any]) -> Settings:
    """Default settings (offline model) with the index in `index_dir` and extra overrides."""
    overrides: dict[str, Any] = {
        "store": {"index_dir": str(index_dir)},
        "llm": {"model": "offline"},
    }
    for name, values in sections.items():
        overrides[name] = {**overrides.get(name, {}), **values}
    return with_overrides(get_settings(), overrides)


def point_app_at(
    monkeypatch: pytest.MonkeyPatch, index_dir: Path, feedback: Path, model: str = "offline"
) -> None:
    """Set the RAG_* variables the app (under AppTest, in this process) reads: `index_dir`,
    `model` and the feedback log; the caller's config, corpus, key and base URL are unset."""
    for name in ("RAG_CONFIG", "OPENAI_API_KEY", "RAG_CORPUS", "RAG_LLM__BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_STORE__INDEX_DIR", str(index_dir))
    monkeypatch.setenv("RAG_LLM__MODEL", model)
    monkeypatch.setenv("RAG_UI__FEEDBACK_PATH", str(feedback))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def index_snapshot(settings: Settings) -> dict[str, Any]:
    """What an index holds, read straight from Chroma: stats, chunk ids and texts, paper hashes."""
    client = make_client(settings)
    prefix = settings.store.collection
    chunks = client.get_collection(f"{prefix}_chunks").get(include=["metadatas"])
    papers = client.get_collection(f"{prefix}_papers").get(include=["metadatas"])
    by_id = dict(zip(papers["ids"], papers["metadatas"], strict=True))

    def text(meta: dict[str, Any]) -> str:  # a chunk is its paper's title and abstract slice
        paper = by_id[meta["paper_id"]]
        return f"{paper['title']}\n{paper['abstract'][meta['start'] : meta['end']]}"

    return {
        "papers": len(papers["ids"]),
        "chunks": len(chunks["ids"]),
        "embedding_model": client.get_collection(f"{prefix}_chunks").metadata["embedding_model"],
        "chunk_ids": sorted(chunks["ids"]),
        "chunk_texts": {
            cid: text(meta) for cid, meta in zip(chunks["ids"], chunks["metadatas"], strict=True)
        },
        "paper_hashes": {
            pid: meta["content_hash"]
            for pid, meta in zip(papers["ids"], papers["metadatas"], strict=True)
        },
    }


def copy_index(settings: Settings, target: Path) -> Settings:
    """A writable copy of a session index (the shared ones must not change)."""
    shutil.copytree(settings.store.index_dir, target)
    return with_overrides(settings, {"store": {"index_dir": str(target)}})


def plain(markdown: str) -> str:
    """What a reader sees of escaped Markdown text: the backslash escapes and the invisible
    word joiners (which break autolinks and icons, ui.render.JOINER) removed."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`rag ARGV...` in this process: its exit code, stdout and stderr."""
    from rag.cli.main import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def three_seed_papers(path: Path) -> Path:
    """The first three seed abstracts as a JSONL corpus at `path` (id and abstract only)."""
    from rag.corpus.loaders import load_papers
    from rag.settings import SEED_FILES

    papers = load_papers(list(SEED_FILES))[:3]
    path.write_text(
        "".join(json.dumps({"id": p.id, "abstract": p.abstract}) + "\n" for p in papers)
    )
    return path
