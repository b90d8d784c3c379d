"""The wheel: a plain `pip install .` ships config/ as rag/config/ and data/ as rag/data/ (the
bundled corpus and the labelled sets), and finds every preset, the corpus and the sets there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT, read_jsonl

PRESETS = sorted(p.name for p in (ROOT / "config").glob("*.toml"))
# What the wheel must carry of data/ (as rag/data/...): the whole bundled corpus and every set.
DATA_FILES = sorted(
    str(p.relative_to(ROOT))
    for folder in ("iclr2025", "eval")
    for p in (ROOT / "data" / folder).iterdir()
    if p.is_file()
)


def build_wheel(tmp_path: Path) -> Path:
    """Build the wheel from a copy of the project (no build/ or egg-info left in the tree)."""
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in ("rag", "ui", "config", "data"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    dist = tmp_path / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    command += ["--no-index", "-q", "-w", str(dist), str(src)]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("iclr_rag-*.whl")
    return wheel


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    for name in ("OPENAI_API_KEY", "PYTHONPATH"):
        env.pop(name, None)
    return {**env, **extra}


@pytest.mark.slow
def test_the_wheel_ships_the_presets_the_corpus_and_the_labelled_sets(tmp_path: Path) -> None:
    assert "default.toml" in PRESETS and len(PRESETS) >= 6
    assert "data/iclr2025/iclr2025.jsonl" in DATA_FILES
    assert "data/eval/questions.jsonl" in DATA_FILES and len(DATA_FILES) >= 12
    wheel = build_wheel(tmp_path)
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    for preset in PRESETS:
        packaged = archive.read(f"rag/config/{preset}")
        assert packaged == (ROOT / "config" / preset).read_bytes(), preset
    for name in DATA_FILES:
        packaged = archive.read(f"rag/{name}")
        assert packaged == (ROOT / name).read_bytes(), name
    assert {"rag/settings.py", "ui/app.py", "ui/render.py"} <= names
    assert not any(n.startswith(("tests/", "bench/", "testkit/", "data/")) for n in names)
    glossary = archive.read("rag/lang/glossary_zh.tsv")
    assert glossary == (ROOT / "rag" / "lang" / "glossary_zh.tsv").read_bytes()

    # Installed away from any checkout, settings find the presets, the corpus and the sets
    # through importlib.resources.
    site = tmp_path / "site"
    archive.extractall(site)
    probe = (
        "import json; from rag.settings import BUNDLED_CORPUS, BUNDLED_PAPERS, CONFIG_DIR, "
        "SEED_FILES, Settings, get_settings, preset_names; from rag.cli.main import "
        "EVAL_QUESTIONS; print(json.dumps([str(CONFIG_DIR), preset_names(), "
        "get_settings('offline').llm.model, get_settings() == Settings(), str(BUNDLED_CORPUS), "
        "[str(p) for p in get_settings('seeds').corpus_paths()], "
        "all(p.is_file() for p in (BUNDLED_PAPERS, *SEED_FILES)), str(EVAL_QUESTIONS)])); "
        "from rag.lang.gloss import GLOSSARY; print(GLOSSARY['强化学习'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=clean_env(PYTHONPATH=str(site)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    printed, glossed = done.stdout.splitlines()
    config_dir, presets, offline_model, agree, corpus, seeds, found, questions = json.loads(printed)
    assert glossed == "reinforcement learning"  # the glossary, read from the installed package
    assert config_dir == str(site / "rag" / "config")
    assert presets == sorted(p.removesuffix(".toml") for p in PRESETS if p != "default.toml")
    assert offline_model == "offline" and agree
    assert corpus == str(site / "rag" / "data" / "iclr2025") and found
    assert seeds and all(s.startswith(corpus + "/") and Path(s).is_file() for s in seeds)
    assert questions == str(site / "rag" / "data" / "eval" / "questions.jsonl")


@pytest.mark.slow
def test_the_installed_wheel_ingests_the_seeds_and_evaluates(tmp_path: Path) -> None:
    """`pip install` of the wheel into a fresh venv outside the repository, then `rag ingest
    --config seeds` and `rag eval` from a folder with no checkout in sight.

    The venv borrows the suite's installed dependencies (a .pth line naming their folder, which
    Python does not scan for .pth files, so the checkout's editable install stays out); the
    wheel itself goes in with pip, so `rag` is its console script and `rag` its package."""
    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "suite_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(pip, check=True, capture_output=True, timeout=300)

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = clean_env(HF_HUB_OFFLINE="1")
    where = subprocess.run(
        [str(python), "-c", "import rag; print(rag.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.stdout.strip() == str(site / "rag" / "__init__.py"), where.stderr
    rag = str(venv / "bin" / "rag")
    index = str(work / "index")

    ingest = [rag, "ingest", "--config", "seeds", "--index", index, "--json"]
    done = subprocess.run(ingest, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 38, done.stdout  # the seeds, from rag/data

    # Five of the installed labelled questions on the seeds, by their gold ids.
    installed = site / "rag" / "data" / "eval" / "questions.jsonl"
    rows = [r for r in read_jsonl(installed) if r.get("corpus") == "seeds"][:5]
    assert len(rows) == 5
    questions = work / "five.jsonl"
    questions.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    evaluate = [rag, "eval", "--config", "seeds", "--index", index, "--questions", str(questions)]
    evaluate += ["--no-baselines", "--json"]
    done = subprocess.run(evaluate, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["papers"] == 38 and sum(report["counts"].values()) == 5, report
    hybrid = report["systems"][0]
    assert hybrid["name"] == "hybrid" and hybrid["overall"]["recall_5"] >= 0.8, hybrid
