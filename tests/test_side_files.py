"""Files beside the code and the index are read bounded and checked before use (issue 32: M5,
L4, L5, L9): shipped vectors, the chunk plan, the topic map, the BM25, names and ONNX caches,
conversation files. A damaged one is recomputed with one warning line, or refused with one
line; never a traceback, never a silently wrong index.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rag.index.shipped as shipped
import rag.index.shipped_chunks as shipped_chunks
from rag.explore.topicmap import FORMAT as MAP_FORMAT
from rag.explore.topicmap import read_cached_map
from rag.index.shipped import read_stored, text_hash
from rag.settings import Settings, get_settings
from rag.types import Paper
from tests.helpers import make_settings

MINILM_KEY = {"format": 1, "model": "all-MiniLM-L6-v2", "backend": "test"}


def record_sums(folder: Path) -> None:
    """SHA256SUMS as `sha256sum` writes it, for every file in `folder` (no code under test)."""
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n"
        for p in sorted(folder.iterdir())
        if p.name != "SHA256SUMS"
    ]
    (folder / "SHA256SUMS").write_text("".join(lines))


def unit_rows(n: int, width: int = 384, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, width))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float16)


def npz(key: Any, hashes: np.ndarray, vectors: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, key=np.array(json.dumps(key)), hashes=hashes, vectors=vectors)
    return buffer.getvalue()


TEXTS = [f"chunk text {i}" for i in range(40)]
HASHES = np.array([text_hash(t) for t in TEXTS], dtype="S32")


def good_file(tmp_path: Path) -> Path:
    path = tmp_path / "vectors-minilm-test.npz"
    path.write_bytes(npz(MINILM_KEY, HASHES, unit_rows(40)))
    record_sums(tmp_path)
    return path


def test_a_valid_shipped_file_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stored = read_stored(good_file(tmp_path))
    assert stored is not None and len(stored) == 40 and stored.key == MINILM_KEY
    found = stored.lookup(TEXTS[:3])
    assert all(v is not None and abs(np.linalg.norm(v) - 1) < 1e-3 for v in found)
    assert capsys.readouterr().err == ""


def _nan(vectors: np.ndarray) -> np.ndarray:
    vectors[3, 5] = np.nan
    return vectors


def _inf(vectors: np.ndarray) -> np.ndarray:
    vectors[7, 0] = np.inf
    return vectors


def _zero_row(vectors: np.ndarray) -> np.ndarray:
    vectors[1] = 0
    return vectors


# Files whose SHA-256 is recorded (so only their content can be wrong) ...
BAD_CONTENT = {
    "NaN in a row": lambda: npz(MINILM_KEY, HASHES, _nan(unit_rows(40))),
    "inf in a row": lambda: npz(MINILM_KEY, HASHES, _inf(unit_rows(40))),
    "a zero vector": lambda: npz(MINILM_KEY, HASHES, _zero_row(unit_rows(40))),
    "zero rows": lambda: npz(MINILM_KEY, HASHES[:0], unit_rows(0)),
    "wrong width": lambda: npz(MINILM_KEY, HASHES, unit_rows(40, width=128)),
    "fewer vectors than hashes": lambda: npz(MINILM_KEY, HASHES, unit_rows(39)),
    "float32 vectors": lambda: npz(MINILM_KEY, HASHES, unit_rows(40).astype(np.float32)),
    "hashes not hex": lambda: npz(
        MINILM_KEY, np.array([b"z" * 32] * 40, dtype="S32"), unit_rows(40)
    ),
    "hashes repeated": lambda: npz(MINILM_KEY, np.array([HASHES[0]] * 40), unit_rows(40)),
    "key not an object": lambda: npz([1, 2], HASHES, unit_rows(40)),
    "key nested too deeply": lambda: _raw_key("[" * 100_000),
    "truncated": lambda: npz(MINILM_KEY, HASHES, unit_rows(40))[:-200],
    "empty": lambda: b"",
    "garbage": lambda: b"PK\x03\x04" + bytes(range(256)) * 40,
    "object array": lambda: _object_array(),
    "a header larger than its bytes": lambda: _lying_header(),
}


def _raw_key(text: str) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, key=np.array(text), hashes=HASHES, vectors=unit_rows(40))
    return buffer.getvalue()


def _object_array() -> bytes:
    buffer = io.BytesIO()
    vectors = np.empty(40, dtype=object)
    np.savez(buffer, key=np.array(json.dumps(MINILM_KEY)), hashes=HASHES, vectors=vectors)
    return buffer.getvalue()


def _lying_header() -> bytes:
    """vectors.npy says (10**9, 384) float16 and holds 40 rows."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f2", "fortran_order": False, "shape": (10**9, 384)}
    )
    body = b"\x93NUMPY\x01\x00" + header.getvalue()[8:] + unit_rows(40).tobytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, array in (("key", np.array(json.dumps(MINILM_KEY))), ("hashes", HASHES)):
            member = io.BytesIO()
            np.save(member, array)
            archive.writestr(f"{name}.npy", member.getvalue())
        archive.writestr("vectors.npy", body)
    return buffer.getvalue()


@pytest.mark.parametrize("name", list(BAD_CONTENT))
def test_a_damaged_shipped_file_is_one_warning_and_computed_instead(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "vectors-minilm-test.npz"
    path.write_bytes(BAD_CONTENT[name]())
    record_sums(tmp_path)
    assert read_stored(path) is None, name
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: ") and "computed" in err[0], err


def test_shuffled_rows_fail_the_recorded_sum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every shape and value still valid: only the SHA-256 recorded by `rag vectors build`
    tells a shuffled file from the shipped one."""
    path = good_file(tmp_path)
    rows = unit_rows(40)
    order = np.random.default_rng(1).permutation(40)
    path.write_bytes(npz(MINILM_KEY, HASHES, rows[order]))
    assert read_stored(path) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SHA-256" in err


@pytest.mark.parametrize("sums", ["", "0" * 64 + "  vectors-minilm-test.npz\n", None])
def test_a_file_without_its_recorded_sum_is_not_used(
    tmp_path: Path, sums: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = good_file(tmp_path)
    if sums is None:
        (tmp_path / "SHA256SUMS").unlink()
    else:
        (tmp_path / "SHA256SUMS").write_text(sums)
    assert read_stored(path) is None
    assert capsys.readouterr().err.startswith("warning: ")


def test_a_zip_bomb_is_refused_before_it_is_inflated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 64 kB file whose vectors inflate to 64 MB (the reported one: 2 MB to 3-4.5 GB)."""
    monkeypatch.setattr(shipped, "MAX_FILE_BYTES", 1 << 20, raising=False)
    n = (64 << 20) // (384 * 2)
    hashes = np.array([text_hash(str(i)) for i in range(n)], dtype="S32")[:1].repeat(n)
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        key=np.array(json.dumps(MINILM_KEY)),
        hashes=hashes,
        vectors=np.zeros((n, 384), dtype=np.float16),
    )
    path = tmp_path / "vectors-minilm-test.npz"
    path.write_bytes(buffer.getvalue())
    record_sums(tmp_path)
    assert path.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        assert read_stored(path) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_the_shipped_sums_match_the_shipped_files() -> None:
    """data/iclr2025/SHA256SUMS is what `rag vectors build` wrote for the files beside it."""
    from rag.index.shipped import MULTILINGUAL_FILE, chunk_file
    from rag.index.shipped_manifest import recorded_sums

    folder = MULTILINGUAL_FILE.parent
    sums = recorded_sums(folder)
    shipped_files = [chunk_file("float32"), MULTILINGUAL_FILE]
    shipped_files += [folder / "chunks.json.gz", folder / "topicmap.json.gz"]
    for path in shipped_files:
        assert sums.get(path.name) == hashlib.sha256(path.read_bytes()).hexdigest(), (
            f"{path} does not match SHA256SUMS: run `rag vectors sums` after `rag vectors build`"
        )
        assert read_stored(path) is not None if path.suffix == ".npz" else True


# The chunk plan (M5, L9, L4) ---------------------------------------------------------------

PAPER = Paper(
    id="p1",
    title="A Paper",
    abstract="First sentence of the abstract. Second sentence follows here. Third one ends it.",
)


def write_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    path = tmp_path / "chunks.json.gz"
    path.write_bytes(data)
    record_sums(tmp_path)
    monkeypatch.setattr(shipped_chunks, "PLAN_FILE", path)


def plan_bytes(settings: Settings, spans: Any, key: Any = None) -> bytes:
    key = shipped_chunks.plan_key(settings) if key is None else key
    return gzip.compress(json.dumps({"key": key, "spans": spans}).encode())


def whole(abstract: str) -> list[list[int]]:
    return [[0, len(abstract), 20]]


SETTINGS = get_settings()
KEY = shipped_chunks.paper_key(PAPER)
N = len(PAPER.abstract)
BAD_PLANS: dict[str, Any] = {
    "10 characters a paper": {KEY: [[0, 10, 3]]},
    "a span past the abstract": {KEY: [[0, N + 50, 20]]},
    "a gap between spans": {KEY: [[0, 31, 8], [40, N, 12]]},
    "spans out of order": {KEY: [[32, N, 12], [0, 31, 8]]},
    "an empty span": {KEY: [[0, 0, 1], [0, N, 20]]},
    "1,000 chunks": {KEY: [[0, N, 20]] * 1000},
    "strings for numbers": {KEY: [["0", str(N), "20"]]},
    "floats": {KEY: [[0.0, float(N), 20.0]]},
    "negative": {KEY: [[-5, N, 20]]},
    "booleans": {KEY: [[False, True, True]]},
    "not a list": {KEY: "0-80"},
    "spans a list": [[0, N, 20]],
}


@pytest.mark.parametrize("name", list(BAD_PLANS))
def test_a_malformed_chunk_plan_never_indexes_its_spans(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embeddings: Any,
    name: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_plan(tmp_path, monkeypatch, plan_bytes(SETTINGS, BAD_PLANS[name]))
    plan = shipped_chunks.chunk_plan(SETTINGS, embeddings)
    assert plan is None or plan.chunks(PAPER) is None, name
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: "), err


@pytest.mark.parametrize(
    "data",
    [b"", b"not gzip", gzip.compress(b"[" * 100_000), gzip.compress(b"\xff\xfe"), b"\x1f\x8b\x08"],
    ids=["empty", "not gzip", "nested", "not UTF-8", "truncated"],
)
def test_an_unreadable_chunk_plan_is_one_warning(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embeddings: Any,
    data: bytes,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_plan(tmp_path, monkeypatch, data)
    assert shipped_chunks.chunk_plan(SETTINGS, embeddings) is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: "), err


def test_a_valid_plan_still_chunks_the_paper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embeddings: Any
) -> None:
    write_plan(tmp_path, monkeypatch, plan_bytes(SETTINGS, {KEY: [[0, 31, 8], [32, N, 12]]}))
    plan = shipped_chunks.chunk_plan(SETTINGS, embeddings)
    chunks = plan.chunks(PAPER) if plan else None
    assert chunks is not None and [c.text for c in chunks] == [
        "A Paper\nFirst sentence of the abstract.",
        "A Paper\nSecond sentence follows here. Third one ends it.",
    ]


def test_a_chunk_plan_gzip_bomb_is_refused_before_it_is_inflated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embeddings: Any
) -> None:
    monkeypatch.setattr(shipped_chunks, "MAX_PLAN_BYTES", 1 << 20, raising=False)
    bomb = gzip.compress(b" " * (64 << 20), compresslevel=9)
    write_plan(tmp_path, monkeypatch, bomb)
    tracemalloc.start()
    try:
        assert shipped_chunks.chunk_plan(SETTINGS, embeddings) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


# Topic maps (L5: a bad topic id must not crash the Map view) -------------------------------


def map_file(topic: Any = 0, x: Any = 0.5, topics: int = 2) -> dict[str, Any]:
    return {
        "format": MAP_FORMAT,
        "generation": "g1",
        "papers": [
            {"paper_id": "a", "x": x, "y": 0.1, "topic": topic},
            {"paper_id": "b", "x": 0.2, "y": 0.3, "topic": 1},
        ],
        "topics": [{"id": i, "label": f"t{i}", "size": 1} for i in range(topics)],
    }


@pytest.mark.parametrize(
    "data",
    [
        map_file(topic=99),
        map_file(topic=-1),
        map_file(topic="0"),
        map_file(topic=1.5),
        map_file(x="NaN"),
        map_file(x=float("inf")),
        map_file(topics=0),
        {**map_file(), "topics": [{"id": 5, "label": "x", "size": 1}] * 2},
        {**map_file(), "papers": "all"},
    ],
    ids=[
        "past the list",
        "negative",
        "a string",
        "a float",
        "NaN",
        "inf",
        "no topics",
        "ids not 0..n",
        "papers not a list",
    ],
)
def test_a_cached_map_with_a_bad_topic_is_recomputed(tmp_path: Path, data: Any) -> None:
    path = tmp_path / "topicmap.json"
    path.write_text(json.dumps(data))
    assert read_cached_map(path, "g1") is None


def test_a_cached_map_nested_too_deeply_is_recomputed(tmp_path: Path) -> None:
    path = tmp_path / "topicmap.json"
    path.write_text("[" * 100_000)
    assert read_cached_map(path, "g1") is None
    path.write_text(json.dumps(map_file()))
    cached = read_cached_map(path, "g1")
    assert cached is not None and cached.topic_of("a") is not None


def test_the_shipped_map_with_a_bad_topic_is_computed_instead(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag.explore.shipped_map import read_shipped_map

    path = tmp_path / "topicmap.json.gz"
    path.write_bytes(gzip.compress(json.dumps({**map_file(topic=99), "key": "k"}).encode()))
    record_sums(tmp_path)
    assert read_shipped_map("k", path) is None
    assert capsys.readouterr().err.startswith("warning: ")


# Caches checked against the index (L4, L5) ---------------------------------------------------


@pytest.fixture
def seed_copy(tmp_path: Path, seed_settings: Settings) -> Settings:
    index_dir = tmp_path / "index"
    shutil.copytree(seed_settings.store.index_dir, index_dir)
    return make_settings(index_dir, embedding={"bundled_vectors": False})


def _open(settings: Settings, embeddings: Any) -> Any:
    from rag.index.papers import PaperIndex

    return PaperIndex.open(settings, embeddings)


def test_a_reordered_bm25_cache_is_rebuilt(seed_copy: Settings, embeddings: Any) -> None:
    index = _open(seed_copy, embeddings)
    before = index.keyword_index()
    query = "quantum state preparation with variational circuits"
    expected = before.search(query, 5)
    meta_path = index.keyword_cache.directory / "meta.json"
    meta = json.loads(meta_path.read_text())
    order = list(range(len(meta["chunk_ids"])))[::-1]
    meta["chunk_ids"] = [meta["chunk_ids"][i] for i in order]
    meta["paper_ids"] = [meta["paper_ids"][i] for i in order]
    meta_path.write_text(json.dumps(meta))
    fresh = _open(seed_copy, embeddings)
    assert fresh.keyword_index().chunk_ids == before.chunk_ids
    assert fresh.keyword_index().search(query, 5) == expected


@pytest.mark.parametrize(
    "damage",
    [
        "empty matrix",
        "meta nested",
        "vocab a list",
        "chunk ids not strings",
        "params garbage",
        "phrase matrix empty",
        "phrase index missing",
    ],
)
def test_a_corrupt_bm25_cache_is_rebuilt(seed_copy: Settings, embeddings: Any, damage: str) -> None:
    index = _open(seed_copy, embeddings)
    before = index.keyword_index()
    folder = index.keyword_cache.directory
    if damage == "empty matrix":
        (folder / "bm25" / "data.csc.index.npy").write_bytes(b"")
    elif damage == "meta nested":
        (folder / "meta.json").write_text("[" * 100_000)
    elif damage == "vocab a list":
        (folder / "bm25" / "vocab.index.json").write_text("[1, 2, 3]")
    elif damage == "chunk ids not strings":
        meta = json.loads((folder / "meta.json").read_text())
        meta["chunk_ids"] = list(range(len(meta["chunk_ids"])))
        (folder / "meta.json").write_text(json.dumps(meta))
    elif damage == "phrase matrix empty":
        (folder / "phrases" / "data.csc.index.npy").write_bytes(b"")
    elif damage == "phrase index missing":
        shutil.rmtree(folder / "phrases")
    else:
        (folder / "bm25" / "params.index.json").write_text('{"k1": "x", "method": [1]}')
    fresh = _open(seed_copy, embeddings).keyword_index()
    assert fresh.chunk_ids == before.chunk_ids
    assert fresh.search("attention", 3) == before.search("attention", 3)
    assert fresh.search("self attention", 3) == before.search("self attention", 3)  # a phrase


NAMED = [
    Paper(
        id="DiffT",
        title="Differential Transformer",
        abstract="We introduce the Differential Transformer, which amplifies attention to the "
        "relevant context while canceling noise, by taking the difference of two softmax maps.",
    ),
    Paper(
        id="SweS",
        title="SWE-Search: Enhancing Software Agents with Monte Carlo Tree Search",
        abstract="SWE-Search is a multi-agent framework that integrates Monte Carlo Tree Search "
        "with software agents to explore repository-level tasks and refine their plans.",
    ),
    Paper(
        id="Other",
        title="FlexPrefill: A Context-Aware Sparse Attention Mechanism",
        abstract="FlexPrefill adapts sparse attention patterns to each input during prefill.",
    ),
]


@pytest.fixture
def named_index(tmp_path: Path, embeddings: Any) -> Settings:
    from rag.index.ingest import build_index

    corpus = tmp_path / "named.jsonl"
    corpus.write_text("".join(json.dumps(p.__dict__ | {"extra": None}) + "\n" for p in NAMED))
    settings = make_settings(tmp_path / "index", embedding={"bundled_vectors": False})
    build_index(settings, [corpus], embeddings=embeddings)
    return settings


def test_a_rewritten_names_cache_never_answers_with_another_paper(
    named_index: Settings, embeddings: Any
) -> None:
    from rag.retrieval.names import PaperNames

    index = _open(named_index, embeddings)
    names = PaperNames(index)
    assert names.named("What is Differential Transformer?").paper_ids == ("DiffT",)
    path = index.keyword_cache.directory / "names.json"
    saved = json.loads(path.read_text())
    saved["value"]["papers"]["differential transformer"] = ["SweS"]
    path.write_text(json.dumps(saved))
    fresh = PaperNames(_open(named_index, embeddings))
    match = fresh.named("What is Differential Transformer?")
    assert match is not None and match.paper_ids == ("DiffT",)


@pytest.mark.parametrize(
    "value",
    ["[" * 100_000, json.dumps({"papers": {"x": [1]}, "written": {"x": 5}}), '{"papers": 3}'],
    ids=["nested", "ids not strings", "papers not a dict"],
)
def test_a_corrupt_names_cache_is_rebuilt(
    named_index: Settings, embeddings: Any, value: str
) -> None:
    from rag.retrieval.names import NAMES_VERSION, PaperNames

    index = _open(named_index, embeddings)
    generation = index.keyword_index().generation
    path = index.keyword_cache.directory / "names.json"
    body = (
        value
        if value.startswith("[")
        else (
            json.dumps(
                {"generation": generation, "version": NAMES_VERSION, "value": json.loads(value)}
            )
        )
    )
    path.write_text(body)
    match = PaperNames(_open(named_index, embeddings)).named("What is FlexPrefill?")
    assert match is not None and match.paper_ids == ("Other",)


# Conversation files (L4) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    ['["\\ud800 what is attention?"]', "[" * 100_000 + "]" * 100_000, '["ok", "\\udfff"]'],
    ids=["lone surrogate", "nested", "low surrogate"],
)
def test_a_bad_conversation_file_is_one_usage_error(tmp_path: Path, line: str) -> None:
    from rag.cli.inputs import read_conversations
    from rag.errors import UsageError

    path = tmp_path / "conversations.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(UsageError, match="line 1"):
        read_conversations(path)


# The ONNX export cache (L4) ------------------------------------------------------------------


@pytest.mark.slow  # exports the model again (torch), about 20 s
def test_a_damaged_onnx_cache_is_exported_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag.models.minilm import BUNDLED_SHA256, LocalEmbeddings, model_cache_dir

    reference = LocalEmbeddings().embed_query("sparse attention")
    cache = tmp_path / "cache"
    monkeypatch.setenv("RAG_MODEL_CACHE", str(cache))
    folder = model_cache_dir() / f"minilm-l6-{BUNDLED_SHA256[:12]}"
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"not an onnx model")  # the default, float32
    again = LocalEmbeddings().embed_query("sparse attention")
    assert float(np.dot(reference, again)) > 0.999
    assert "exported again" in capsys.readouterr().err


# A damaged Chroma database (L4) ------------------------------------------------------------


@pytest.mark.slow  # a real ingest of a seed file
def test_a_damaged_chroma_database_is_one_line_and_rebuild_is_the_way_out(
    seed_copy: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    from rag.cli.main import main
    from rag.settings import SEED_FILES

    index_dir = seed_copy.store.index_dir
    (index_dir / "chroma" / "chroma.sqlite3").write_bytes(bytes(range(256)) * 400)
    argv = ["--index", str(index_dir)]
    assert main(["stats", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rag ingest --rebuild" in err[0], err
    assert main(["ingest", str(SEED_FILES[0]), "--rebuild", *argv]) == 0
    err = capsys.readouterr().err
    assert "could not be opened; it was moved to" in err and "Traceback" not in err
    assert main(["stats", "--json", *argv]) == 0
    assert json.loads(capsys.readouterr().out)["papers"] > 0
    assert [p.name.startswith("chroma.damaged-") for p in index_dir.glob("chroma.*")] == [True]


# The build record and the SHA-256 memo (L4) --------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        json.dumps({"pid": -1, "done": 1, "total": 2, "started": 0, "updated": 1}),
        json.dumps({"pid": 0, "done": 1, "total": 2, "started": 0, "updated": 1}),
        json.dumps({"pid": "1", "done": 1, "total": 2, "started": 0, "updated": 1}),
        json.dumps({"pid": 1, "done": [1], "total": 2, "started": 0, "updated": 1}),
    ],
    ids=["nested", "pid -1", "pid 0", "pid a string", "done a list"],
)
def test_a_tampered_build_record_is_no_build(tmp_path: Path, text: str) -> None:
    from rag.index.build_status import read_build_status, status_path

    settings = make_settings(tmp_path / "index")
    status_path(settings).write_text(text)
    assert read_build_status(settings) is None


def test_a_nested_sha256_memo_is_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag.models.minilm import file_sha256

    monkeypatch.setenv("RAG_MODEL_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "sha256.json").write_text("[" * 100_000)
    target = tmp_path / "weights.bin"
    target.write_bytes(b"weights")
    assert file_sha256(target) == hashlib.sha256(b"weights").hexdigest()


def test_a_first_ingest_with_a_truncated_shipped_file_embeds_instead(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embeddings: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The reported first `make run`: a BadZipFile traceback; now one warning, all embedded."""
    from rag.index.ingest import build_index

    shipped_dir = tmp_path / "shipped"
    shipped_dir.mkdir()
    path = shipped_dir / "vectors-minilm-float32.npz"
    path.write_bytes(shipped.chunk_file("float32").read_bytes()[:100_000])
    record_sums(shipped_dir)
    monkeypatch.setattr(shipped, "chunk_file", lambda vectors: path)
    corpus = tmp_path / "named.jsonl"
    corpus.write_text("".join(json.dumps(p.__dict__ | {"extra": None}) + "\n" for p in NAMED))
    settings = make_settings(tmp_path / "index", embedding={"multilingual": False})
    report = build_index(settings, [corpus], embeddings=embeddings)
    assert report.added == 3 and report.stored_chunks == 0 and report.embedded_chunks >= 3
    err = capsys.readouterr().err
    assert err.count("warning: ") == 1 and "computed instead" in err and "Traceback" not in err
