"""Load papers from the seed text format, JSONL or CSV, chosen by file extension.

Every problem raises `LoadError` naming the file and, where there is one, the line.
"""

from __future__ import annotations

import csv
import io
import json
import re
import stat
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rag.errors import LoadError
from rag.types import Paper

SUFFIXES = (".txt", ".jsonl", ".csv")
KNOWN_FIELDS = ("id", "title", "abstract", "authors", "keywords", "decision", "url")
MAX_FILE_BYTES = 1 << 30  # the real corpus is 3 MB; a bigger file is a mistake, not papers
# OpenReview caps an abstract at 5,000 characters; a 10 MB one would be embedded for minutes
# and fill every prompt. Longer ones are cut at a word (`abstract_truncated` in the record).
MAX_ABSTRACT_CHARS = 20_000
# Lists of titles without abstracts (data/iclr2025/*_no_abstract.jsonl) only name seeds
# (rag/corpus/seeds.py); a folder's papers are its other files.
TITLE_LIST_SUFFIX = "_no_abstract.jsonl"


def load_papers(paths: list[Path]) -> list[Paper]:
    """Load every supported file under `paths`; ids must be unique across all of them."""
    papers: list[Paper] = []
    seen: dict[str, Paper] = {}
    for path in _expand(paths):
        for paper in load_file(path):
            if paper.id in seen:
                first = seen[paper.id]
                raise LoadError(
                    path,
                    f"duplicate id {paper.id!r} (first seen in {first.source}, "
                    f"line {first.position})",
                    paper.position,
                )
            seen[paper.id] = paper
            papers.append(paper)
    return papers


def _expand(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(
                p
                for p in path.iterdir()
                if p.suffix.lower() in SUFFIXES and not p.name.endswith(TITLE_LIST_SUFFIX)
            )
            if not found:
                raise LoadError(path, f"no {', '.join(SUFFIXES)} files in this folder")
            files.extend(found)
        elif path.exists():
            files.append(path)
        else:
            raise LoadError(path, "file not found")
    return files


def load_file(path: Path) -> list[Paper]:
    loaders = {".txt": load_seed_text, ".jsonl": load_jsonl, ".csv": load_csv}
    loader = loaders.get(path.suffix.lower())
    if loader is None:
        raise LoadError(path, f"unsupported file type; use one of {', '.join(SUFFIXES)}")
    papers = loader(path)
    if not papers:
        raise LoadError(path, "no papers in this file")
    return papers


def read_text(path: Path) -> str:
    """A user's text file, checked before it is read: a regular file of at most MAX_FILE_BYTES.

    Every file the program reads for a user goes through here (corpus files, question and
    conversation files of the CLI): a LoadError (one line) for anything else.
    """
    limit = MAX_FILE_BYTES
    try:
        info = path.stat()  # follows symlinks: a link to /dev/zero is a device
        if not stat.S_ISREG(info.st_mode):
            # Reading a FIFO waits for a writer forever; a device never ends.
            raise LoadError(path, f"not a regular file ({_file_kind(info.st_mode)})")
        if info.st_size > limit:
            raise LoadError(path, f"{info.st_size:,} bytes is too big (the limit is {limit:,})")
        with path.open("rb") as f:
            data = f.read(limit + 1)  # a file that grew since, or a /proc file sized 0
        if len(data) > limit:
            raise LoadError(path, f"more than {limit:,} bytes is too big (the limit)")
    except FileNotFoundError:
        raise LoadError(path, "file not found") from None
    except IsADirectoryError:
        raise LoadError(path, "not a regular file (a folder)") from None
    except OSError as e:
        raise LoadError(path, f"cannot read: {e.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise LoadError(path, f"bytes that are not UTF-8 (at byte {e.start})", line) from None


def _file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a file")


def _read_lines(path: Path) -> list[str]:
    # Lines end at "\n" only, as editors count them: U+2028, form feeds and the like are text
    # (inside a JSON string, say), not line breaks.
    return read_text(path).split("\n")


def load_seed_text(path: Path) -> list[Paper]:
    """A header line, then one abstract per blank-line-separated paragraph, no titles."""
    lines = _read_lines(path)
    papers: list[Paper] = []
    paragraph: list[str] = []
    start = 0
    for number, line in enumerate([*lines[1:], ""], start=2):
        if line.strip():
            if not paragraph:
                start = number
            paragraph.append(line)
        elif paragraph:
            abstract = " ".join(" ".join(paragraph).split())
            if not visible(abstract):
                raise LoadError(path, "the abstract has only invisible characters", start)
            papers.append(
                Paper(
                    id=f"{path.stem}-{len(papers) + 1:03d}",
                    title=derive_label(abstract),
                    abstract=abstract,
                    source=path.name,
                    position=start,
                )
            )
            paragraph = []
    return papers


def json_lines(path: Path, lines: Iterable[str]) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSONL file; a line that is not JSON
    is a LoadError naming it. One reader for papers, title lists and question files."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            reason = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            raise LoadError(path, f"not valid JSON: {reason}", number) from None


def load_jsonl(path: Path) -> list[Paper]:
    papers = []
    for number, record in json_lines(path, _read_lines(path)):
        if not isinstance(record, dict):
            raise LoadError(path, "each line must be a JSON object", number)
        papers.append(_paper_from_record(record, path, number))
    return papers


def load_csv(path: Path) -> list[Paper]:
    text = read_text(path)
    # strict: an unclosed quote is an error, not a field that swallows the rest of the file.
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    start = 1  # the line the record being read starts on
    try:
        columns = [c.strip().lower() for c in reader.fieldnames or []]
        if "abstract" not in columns:
            found = ", ".join(columns) or "none"
            raise LoadError(path, f"no 'abstract' column (columns: {found})", 1)
        reader.fieldnames = columns
        papers = []
        start = reader.reader.line_num + 1
        for row in reader:
            if None in row:
                raise LoadError(path, "more values than columns", reader.line_num)
            # An empty abstract cell is kept, so it is reported as empty rather than missing.
            record = {k: v for k, v in row.items() if v not in (None, "") or k == "abstract"}
            # A paper's position (and default id) is the line its record ends on.
            papers.append(_paper_from_record(record, path, reader.line_num))
            start = reader.reader.line_num + 1
    except csv.Error as e:
        raise LoadError(path, _csv_problem(e), start) from None
    return papers


def _csv_problem(error: csv.Error) -> str:
    text = str(error)
    if "unexpected end of data" in text:
        return "not valid CSV: a quoted field opened here is never closed"
    if "field larger than field limit" in text:
        return f"not valid CSV: a field longer than {csv.field_size_limit():,} characters"
    return f"not valid CSV: {text}"


def _paper_from_record(record: dict[str, Any], path: Path, line: int) -> Paper:
    abstract = record.get("abstract")
    if not isinstance(abstract, str):
        problem = "no abstract" if abstract is None else "abstract is not text"
        raise LoadError(path, problem, line)
    abstract, cut = cap_abstract(" ".join(abstract.split()))
    if not abstract:
        raise LoadError(path, "empty abstract", line)
    if not visible(abstract):
        raise LoadError(path, "the abstract has only invisible characters", line)
    text = {}
    for key in ("id", "title", "decision", "url"):
        value = record.get(key, "")
        if value is None:
            value = ""
        if isinstance(value, (int, float)) and key == "id":
            value = str(value)
        if not isinstance(value, str):
            raise LoadError(path, f"field {key!r} must be text", line)
        text[key] = " ".join(value.split()) if visible(value) else ""
    return Paper(
        id=text["id"] or f"{path.stem}-{line:05d}",
        title=text["title"] or derive_label(abstract),
        abstract=abstract,
        authors=_text_list(record.get("authors"), path, line, "authors"),
        keywords=_text_list(record.get("keywords"), path, line, "keywords"),
        decision=text["decision"],
        url=text["url"],
        source=path.name,
        position=line,
        extra={k: v for k, v in record.items() if k not in KNOWN_FIELDS}
        | ({"abstract_truncated": True} if cut else {}),
    )


def cap_abstract(abstract: str, limit: int | None = None) -> tuple[str, bool]:
    """`abstract` cut at a word to at most `limit` (MAX_ABSTRACT_CHARS) characters, and whether
    it was cut."""
    limit = MAX_ABSTRACT_CHARS if limit is None else limit
    if len(abstract) <= limit:
        return abstract, False
    head = abstract[: limit + 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut[:limit].rstrip(), True


def visible(text: str) -> bool:
    """Whether `text` has a character that shows: not only spaces, zero-width or control ones."""
    return any(unicodedata.category(c)[0] not in "ZC" for c in text)


def _text_list(value: Any, path: Path, line: int, key: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(";") if p.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise LoadError(path, f"field {key!r} must be a list of text or ';'-separated text", line)


_INTRO = re.compile(
    r"\b(?:propose|introduce|present|develop|call|name|dub|term|coin)(?:s|d|ed)?\b"
    r"|\b(?:called|named|dubbed|termed|coined)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<![\w-])([A-Za-z][A-Za-z0-9]*(?:[-+][A-Za-z0-9]+)*)(?![\w-])")
_COMMON_ACRONYMS = {
    "AI",
    "LLM",
    "LLMS",
    "GNN",
    "GNNS",
    "PDE",
    "PDES",
    "ML",
    "RL",
    "NLP",
    "CNN",
    "CNNS",
    "GPU",
    "GPUS",
    "CPU",
    "API",
    "ARM",
    "ARMS",
    "MDM",
    "MDMS",
    "SOTA",
    "VLM",
    "VLMS",
    "MLLM",
    "MLLMS",
    "DNN",
    "DNNS",
    "ILP",
    "ILPS",
    "SOM",
    "QA",
    "IID",
    "ODE",
    "ODES",
    "SDE",
    "SDES",
    "RAG",
    "KV",
    "US",
    "UK",
    "EU",
    "TTS",
    "ASR",
    "OOD",
    "MLP",
    "MLPS",
    "LM",
    "LMS",
    "GSM8K",
    "RF",
    "GBDT",
    "PRM",
    "PRMS",
    "DPO",
    "RLHF",
    "SFT",
    "BON",
    "IT",
    "OCR",
    "FID",
    "BERT",
    "GPT",
    "ROC",
    "AUC",
    "FLOPS",
    "TPU",
    "SGD",
    "ADAM",
    "MSE",
    "ICL",
    "COT",
}


def _looks_like_name(word: str) -> bool:
    if word.upper() in _COMMON_ACRONYMS or len(word) < 3:
        return False
    if any(part.islower() for part in word.split("-")[1:]):
        return False  # "PCA-based", "LLM-guided": a description, not a name
    inner_caps = sum(c.isupper() for c in word[1:])
    return (word[0].isupper() and inner_caps >= 1) or (word.isupper() and len(word) >= 3)


_CAPITALISED_RUN = re.compile(
    r"^(?:(?:a|an|the|novel|new)\s+)*((?:[A-Z][\w-]*\s+){1,4}[A-Z][\w-]*|[A-Z][\w-]*(?=[,:]))"
)
# Names after these words belong to prior work ("an extension of FlashAttention").
_PRIOR_WORK = re.compile(r"\b(?:of|upon|like|such as|than|from|over|to)\b")


def derive_label(abstract: str) -> str:
    """A short label for an untitled abstract: the method it introduces, else its first gist."""
    text = abstract.replace("**", "").replace("*", "")
    for match in _INTRO.finditer(text):
        window = text[match.end() : match.end() + 160].strip()
        window = re.split(r"(?<=[.;:])\s", window, maxsplit=1)[0]
        acronym = re.search(r"\(([^()]{2,24})\)", window)
        if acronym and _looks_like_name(acronym.group(1).rstrip("s")):
            return acronym.group(1)
        run = _CAPITALISED_RUN.match(window)
        if run and not _PRIOR_WORK.search(run.group(1)):
            return run.group(1)
        own = _PRIOR_WORK.split(" ".join(window.split()[:10]), maxsplit=1)[0]
        names = [w for w in _NAME.findall(own) if _looks_like_name(w)]
        if names:
            return names[0]
    return _gist(abstract)


def _gist(abstract: str, words: int = 10) -> str:
    first = re.split(r"(?<=[.!?])\s", abstract, maxsplit=1)[0].rstrip(".!?")
    tokens = first.split()
    return " ".join(tokens[:words]) + ("…" if len(tokens) > words else "")
