"""The wheel: a plain `pip install .` ships config/ as rag/config/ and finds every preset there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.helpers import ROOT

PRESETS = sorted(p.name for p in (ROOT / "config").glob("*.toml"))


def build_wheel(tmp_path: Path) -> Path:
    """Build the wheel from a copy of the project (no build/ or egg-info left in the tree)."""
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in ("rag", "ui", "config"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    dist = tmp_path / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    command += ["--no-index", "-q", "-w", str(dist), str(src)]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("iclr_rag-*.whl")
    return wheel


def test_the_wheel_ships_default_toml_and_every_preset(tmp_path: Path) -> None:
    assert "default.toml" in PRESETS and len(PRESETS) >= 6
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    for preset in PRESETS:
        packaged = zipfile.ZipFile(wheel).read(f"rag/config/{preset}")
        assert packaged == (ROOT / "config" / preset).read_bytes(), preset
    assert {"rag/settings.py", "ui/app.py", "ui/render.py"} <= names
    glossary = zipfile.ZipFile(wheel).read("rag/lang/glossary_zh.tsv")
    assert glossary == (ROOT / "rag" / "lang" / "glossary_zh.tsv").read_bytes()

    # Installed away from any checkout, settings find the presets through importlib.resources.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = (
        "import json; from rag.settings import CONFIG_DIR, Settings, get_settings, preset_names; "
        "print(json.dumps([str(CONFIG_DIR), preset_names(), get_settings('offline').llm.model, "
        "get_settings() == Settings()]));"
        "from rag.lang.gloss import GLOSSARY; print(GLOSSARY['强化学习'])"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["PYTHONPATH"] = str(site)
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    printed, glossed = done.stdout.splitlines()
    config_dir, presets, offline_model, agree = json.loads(printed)
    assert glossed == "reinforcement learning"  # the glossary, read from the installed package
    assert config_dir == str(site / "rag" / "config")
    assert presets == sorted(p.removesuffix(".toml") for p in PRESETS if p != "default.toml")
    assert offline_model == "offline" and agree
