"""Loaders on real data (the seeds, the 2,105-paper JSONL, a CSV made from it) and bad input.

Bad input must raise LoadError naming the file and line, and through `rag ingest` exit non-zero
with one `error: ...` line, leaving an existing index exactly as it was.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.errors import LoadError
from rag.settings import SEED_FILES, Settings
from rag.types import Paper
from tests.helpers import CORPUS_JSONL, ROOT, copy_index, index_snapshot, read_jsonl


@pytest.fixture(scope="module")
def corpus_records() -> list[dict[str, Any]]:
    return read_jsonl(CORPUS_JSONL)


# Seed text -------------------------------------------------------------------------------


def seed_paragraphs(path: Path) -> list[tuple[int, str]]:
    """(first line number, text) of each paragraph after the header, read independently."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, start, current = [], 0, []
    for number, line in enumerate(lines[1:] + [""], start=2):
        if line.strip():
            start = start if current else number
            current.append(line.strip())
        elif current:
            found.append((start, " ".join(current)))
            current = []
    return found


def test_seed_text_loads_every_abstract_with_source_and_position(seed_papers: list[Paper]) -> None:
    assert len(SEED_FILES) == 2
    assert len(seed_papers) == 38
    expected = [(f.name, line, text) for f in SEED_FILES for line, text in seed_paragraphs(f)]
    assert [(p.source, p.position, p.abstract) for p in seed_papers] == expected
    assert len({p.id for p in seed_papers}) == 38
    # The header line ("ICLR 2025 论文列表") is not a paper.
    assert not any("论文" in p.abstract for p in seed_papers)


def test_seed_ids_are_stable_across_loads(seed_papers: list[Paper]) -> None:
    again = load_papers(list(SEED_FILES))
    assert [p.id for p in again] == [p.id for p in seed_papers]
    assert [p.content_hash for p in again] == [p.content_hash for p in seed_papers]


def test_seed_labels_name_the_method_the_abstract_introduces(seed_papers: list[Paper]) -> None:
    titles = {p.title: p for p in seed_papers}
    for name in ("ReBIND", "SINGER", "LOTOS", "PivotMesh", "TimeKAN", "GrabS", "Q-Adapter"):
        assert name in titles, f"no paper labelled {name}"
        assert name in titles[name].abstract
    assert titles["SINGER"].abstract.startswith("We present a novel framework, StochastIc")
    assert titles["PivotMesh"].abstract.startswith("Generating compact and sharply detailed 3D")


def test_seed_labels_are_short_and_fall_back_to_the_first_sentence(
    seed_papers: list[Paper],
) -> None:
    for paper in seed_papers:
        assert paper.title and len(paper.title.split()) <= 10, paper.title
    fallback = [p for p in seed_papers if p.title.endswith("…")]
    assert fallback, "some seed abstracts introduce no named method"
    for paper in fallback:
        assert paper.abstract.startswith(paper.title.rstrip("…"))
    # An abstract that only extends prior work is not labelled with the prior work's name.
    assert "FlashAttention" not in {p.title for p in seed_papers}


# JSONL ------------------------------------------------------------------------------------


def test_the_real_jsonl_loads_as_is(corpus_records: list[dict[str, Any]]) -> None:
    papers = load_papers([CORPUS_JSONL])
    assert len(papers) == len(corpus_records) == 2105
    assert [p.id for p in papers] == [r["id"] for r in corpus_records]
    for paper, record in zip(papers, corpus_records, strict=True):
        assert paper.title == " ".join(record["title"].split())
        assert paper.abstract == " ".join(record["abstract"].split())
        assert list(paper.authors) == record["authors"]
        assert paper.decision == record["decision"]
        assert paper.url == record["url"]
        assert paper.source == CORPUS_JSONL.name
        # Fields we do not know are kept, not errors.
        assert paper.extra["source"] == record["source"]
        assert set(paper.extra) == set(record) - {
            "id",
            "title",
            "abstract",
            "authors",
            "keywords",
            "decision",
            "url",
        }
    assert [p.position for p in papers] == list(range(1, 2106))
    tiers = {p.tier for p in papers}
    assert tiers == {"Oral", "Spotlight", "Poster"}
    assert sum(p.tier == "Oral" for p in papers) == sum(
        r["decision"] == "Accept (Oral)" for r in corpus_records
    )


def test_jsonl_optional_fields_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "few.jsonl"
    path.write_text(
        json.dumps({"id": 7, "abstract": "We propose FooNet, a network. It works."})
        + "\n\n"
        + json.dumps({"title": "Given", "abstract": "Plain text.", "keywords": "a; b"})
        + "\n"
    )
    first, second = load_papers([path])
    assert first.id == "7" and first.title == "FooNet" and first.position == 1
    assert second.title == "Given" and second.keywords == ("a", "b") and second.position == 3
    assert second.id and second.id != first.id
    assert load_papers([path])[1].id == second.id  # derived ids are stable


# CSV ---------------------------------------------------------------------------------------


def test_csv_with_the_same_columns_matches_the_jsonl(
    tmp_path: Path, corpus_records: list[dict[str, Any]]
) -> None:
    records = corpus_records[:40]
    jsonl = tmp_path / "part.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    path = tmp_path / "part.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["id", "title", "abstract", "authors", "decision", "url", "src"])
        writer.writeheader()
        for r in records:
            writer.writerow(
                {
                    "id": r["id"],
                    "title": r["title"],
                    "abstract": r["abstract"],
                    "authors": "; ".join(r["authors"]),
                    "decision": r["decision"],
                    "url": r["url"],
                    "src": "csv export",
                }
            )
    from_csv, from_jsonl = load_papers([path]), load_papers([jsonl])
    assert len(from_csv) == 40
    for a, b in zip(from_csv, from_jsonl, strict=True):
        assert (a.id, a.title, a.abstract, a.authors, a.decision, a.url) == (
            b.id,
            b.title,
            b.abstract,
            b.authors,
            b.decision,
            b.url,
        )
        assert a.content_hash == b.content_hash
        assert a.extra == {"src": "csv export"}
        assert a.source == "part.csv"
    assert [p.position for p in from_csv] == list(range(2, 42))  # line 1 is the header


def test_csv_column_names_are_case_insensitive_and_multiline_cells_work(tmp_path: Path) -> None:
    path = tmp_path / "upper.csv"
    path.write_text('ID,Title,Abstract\nx1,A title,"First line.\nSecond line."\n')
    (paper,) = load_papers([path])
    assert (paper.id, paper.title, paper.abstract) == ("x1", "A title", "First line. Second line.")


def test_a_folder_loads_every_supported_file(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "a", "abstract": "One."}) + "\n")
    (tmp_path / "b.csv").write_text("id,abstract\nb,Two.\n")
    (tmp_path / "notes.md").write_text("ignored")
    assert [p.id for p in load_papers([tmp_path])] == ["a", "b"]


# Bad input ---------------------------------------------------------------------------------

GOOD = json.dumps({"id": "p1", "title": "Fine", "abstract": "A fine abstract."})


def bad_inputs() -> list[Any]:
    """(name, {file: bytes}, failing file, line, words the message must contain)."""
    cases = [
        (
            "malformed-jsonl",
            {"bad.jsonl": f'{GOOD}\n\n{{"id": "p2", "abstract": "cut off\n'.encode()},
            "bad.jsonl",
            3,
            ["not valid JSON"],
        ),
        (
            "jsonl-not-an-object",
            {"bad.jsonl": f"{GOOD}\n[1, 2]\n".encode()},
            "bad.jsonl",
            2,
            ["JSON object"],
        ),
        (
            "csv-without-abstract-column",
            {"bad.csv": b"id,title,summary\nx,T,some text\n"},
            "bad.csv",
            1,
            ["abstract", "column"],
        ),
        (
            "empty-abstract-jsonl",
            {"bad.jsonl": f'{GOOD}\n{{"id": "p2", "title": "T", "abstract": "  \\n "}}\n'.encode()},
            "bad.jsonl",
            2,
            ["empty abstract"],
        ),
        (
            "empty-abstract-csv",
            {"bad.csv": b"id,title,abstract\nx,T,Some text.\ny,U,\n"},
            "bad.csv",
            3,
            ["empty abstract"],
        ),
        (
            "missing-abstract-jsonl",
            {"bad.jsonl": b'{"id": "p9", "title": "No abstract here"}\n'},
            "bad.jsonl",
            1,
            ["no abstract"],
        ),
        (
            "not-utf8-jsonl",
            {
                "bad.jsonl": f"{GOOD}\n{GOOD.replace('p1', 'p2')}\n".encode() + b'{"id": "p3", '
                b'"abstract": "caf\xe9 au lait"}\n'
            },
            "bad.jsonl",
            3,
            ["UTF-8"],
        ),
        (
            "not-utf8-csv",
            {"bad.csv": b"id,abstract\nx,Fine.\ny,Na\xefve text.\n"},
            "bad.csv",
            3,
            ["UTF-8"],
        ),
        (
            "not-utf8-seed-text",
            {"bad.txt": b"Header\n\nFirst abstract.\n\nSecond \xff\xfe abstract.\n"},
            "bad.txt",
            5,
            ["UTF-8"],
        ),
        (
            "duplicate-ids-one-file",
            {"bad.jsonl": f"{GOOD}\n{GOOD.replace('Fine', 'Other')}\n".encode()},
            "bad.jsonl",
            2,
            ["duplicate id", "'p1'", "line 1"],
        ),
        (
            "duplicate-ids-two-files",
            {
                "a.jsonl": f"{GOOD.replace('p1', 'p0')}\n{GOOD}\n".encode(),
                "b.csv": b"id,abstract\nq1,Other.\np1,Again.\n",
            },
            "b.csv",
            3,
            ["duplicate id", "'p1'", "a.jsonl, line 2"],
        ),
    ]
    return [pytest.param(*case, id=case[0]) for case in cases]


def write_files(folder: Path, files: dict[str, bytes]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return [folder / name for name in files]


@pytest.mark.parametrize(("name", "files", "culprit", "line", "words"), bad_inputs())
def test_bad_input_raises_load_error_with_file_and_line(
    tmp_path: Path, name: str, files: dict[str, bytes], culprit: str, line: int, words: list[str]
) -> None:
    paths = write_files(tmp_path / name, files)
    with pytest.raises(LoadError) as e:
        load_papers(paths)
    assert Path(e.value.path).name == culprit
    assert e.value.line == line
    message = str(e.value)
    assert message.startswith(f"{tmp_path / name / culprit}, line {line}: ")
    for word in words:
        assert word in message


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.jsonl"
    with pytest.raises(LoadError) as e:
        load_papers([*SEED_FILES, missing])
    assert e.value.path == str(missing) and e.value.line is None
    assert str(e.value) == f"{missing}: file not found"


def test_unsupported_extension_and_empty_file(tmp_path: Path) -> None:
    (tmp_path / "papers.pdf").write_bytes(b"%PDF")
    with pytest.raises(LoadError, match=r"papers\.pdf: unsupported file type"):
        load_papers([tmp_path / "papers.pdf"])
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(LoadError, match=r"empty\.jsonl: no papers"):
        load_papers([tmp_path / "empty.jsonl"])


# Bad input through the CLI ------------------------------------------------------------------


@pytest.fixture
def existing_index(tmp_path: Path, seed_settings: Settings) -> Settings:
    return copy_index(seed_settings, tmp_path / "index")


@pytest.mark.parametrize(("name", "files", "culprit", "line", "words"), bad_inputs())
def test_bad_input_through_rag_ingest_leaves_the_index_as_it_was(
    tmp_path: Path,
    existing_index: Settings,
    capsys: pytest.CaptureFixture[str],
    name: str,
    files: dict[str, bytes],
    culprit: str,
    line: int,
    words: list[str],
) -> None:
    before = index_snapshot(existing_index)
    paths = write_files(tmp_path / name, files)
    index_dir = str(existing_index.store.index_dir)
    code = main(["ingest", *map(str, paths), "--index", index_dir])
    out, err = capsys.readouterr()
    assert code != 0
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert f"{culprit}, line {line}: " in err
    assert "Traceback" not in err and out == ""
    assert index_snapshot(existing_index) == before
    assert before["papers"] == 38


@pytest.mark.slow
def test_missing_file_through_the_installed_command(
    tmp_path: Path, existing_index: Settings
) -> None:
    """The real entry point, in a fresh process: exit status, one line on stderr, index intact."""
    before = index_snapshot(existing_index)
    missing = tmp_path / "missing.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("rag")),
            "ingest",
            str(missing),
            "--index",
            str(existing_index.store.index_dir),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert done.returncode != 0
    assert done.stderr.strip() == f"error: {missing}: file not found"
    assert done.stdout == ""
    assert index_snapshot(existing_index) == before
