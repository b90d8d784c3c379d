"""The docs stay true to the code: the settings table, the README's length, relative links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag import settings_table as st
from rag.settings import PROJECT_ROOT, Settings

README = PROJECT_ROOT / "README.md"
DOCS = sorted((PROJECT_ROOT / "docs").glob("*.md"))
MAX_README_LINES = 250

# [text](target) and ![alt](target); the text may span lines, the target may carry a "title".
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


def relative_links(markdown: str) -> list[str]:
    """Targets of the links that point into the repository (no URL scheme, no bare anchor)."""
    text = CODE_SPAN.sub("", FENCE.sub("", markdown))
    targets = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def leaf_settings() -> list[str]:
    keys = []
    for name, info in Settings.model_fields.items():
        section = info.annotation
        if isinstance(section, type) and hasattr(section, "model_fields"):
            keys += [f"{name}.{field}" for field in section.model_fields]
        else:
            keys.append(name)
    return keys


def test_the_settings_table_in_the_docs_is_up_to_date() -> None:
    page = st.DOC.read_text(encoding="utf-8")
    assert st.current_block(page) == st.settings_table(), (
        f"the settings table in {st.DOC.relative_to(PROJECT_ROOT)} is out of date: "
        "run `python -m rag.settings_table --write`"
    )


def test_the_table_has_one_row_per_setting_with_its_default() -> None:
    table = st.settings_table().splitlines()
    rows = table[len(st.HEADER) :]
    keys = [row.split("|")[1].strip().strip("`") for row in rows]
    assert keys == leaf_settings()
    assert '`llm.model` | `"auto"`' in st.settings_table()
    by_key = dict(zip(keys, rows, strict=True))
    assert "| `5` | ≥ 1, ≤ 50 |" in by_key["retrieval.k"]
    assert '`"embedded"` or `"http"`' in by_key["store.mode"]
    assert "\\|" in by_key["llm.model"]  # a | in a description cannot split the cell
    assert all(row.count(" | ") == 3 for row in rows)


def test_a_stale_table_is_found_and_rewritten(tmp_path: Path) -> None:
    page = tmp_path / "configuration.md"
    page.write_text(f"# Settings\n\n{st.START}\n| old | table |\n{st.END}\n\nAfter.\n")
    assert st.main(["--check", "--doc", str(page)]) == 1
    assert st.main(["--write", "--doc", str(page)]) == 0
    text = page.read_text()
    assert st.current_block(text) == st.settings_table()
    assert text.startswith("# Settings\n\n") and text.endswith(f"{st.END}\n\nAfter.\n")
    assert st.main(["--check", "--doc", str(page)]) == 0


def test_a_page_without_the_markers_is_an_error() -> None:
    with pytest.raises(ValueError, match="settings-table:start"):
        st.current_block("# no table here\n")


def test_env_names_follow_the_settings_prefix() -> None:
    assert st.env_name("llm.model") == "RAG_LLM__MODEL"
    assert st.env_name("corpus") == "RAG_CORPUS"


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines (at most {MAX_README_LINES}): move the detail to docs/"
    )


def test_the_docs_exist() -> None:
    names = {p.name for p in DOCS}
    expected = {
        "architecture.md",
        "benchmarks.md",
        "cli.md",
        "configuration.md",
        "deploy.md",
        "development.md",
        "ui.md",
    }
    assert expected <= names


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: p.name)
def test_every_relative_link_points_at_a_file(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = [t for t in relative_links(text) if t and not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(PROJECT_ROOT)}: links to missing files: {broken}"


def test_the_link_check_finds_links_and_skips_code() -> None:
    text = (
        'See [the CLI](docs/cli.md#ingest) and ![map](bench/x.png "a map"),\n'
        "[a site](https://example.org), [here](#top), `[not](a-link.md)`, and\n"
        "```\n[nor](this.md)\n```\n[split\ntext](docs/ui.md)"
    )
    assert relative_links(text) == ["docs/cli.md", "bench/x.png", "docs/ui.md"]
