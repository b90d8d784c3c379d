"""Search on the seed index: the right paper first for the kept question set, and the CLI's JSON.

The questions (tests/data/seed_questions.jsonl) paraphrase a paper, or ask about a fact near the
end of a long abstract ("tail"); the right paper is the one whose abstract holds the gold snippet.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag.cli.main import main
from rag.index.ingest import build_index
from rag.index.papers import PaperIndex
from rag.models.minilm import load_tokenizer
from rag.retrieval.retriever import Retriever
from rag.settings import Settings
from rag.types import Filters, Paper
from tests.helpers import CORPUS_JSONL, DATA, make_settings, read_jsonl, run_cli

QUESTIONS = read_jsonl(DATA / "seed_questions.jsonl")
RESULT_KEYS = {"paper_id", "title", "abstract", "url", "decision", "score"} | {
    "authors",  # issue 30: the authors as recorded, whether in the paper's order,
    "authors_ordered",
    "has_abstract",  # and whether the corpus holds the abstract (False: a title record)
}

# Measured on the 25 questions of 2026-11-30 with the bundled model: hybrid 25/25 first,
# dense 24/25 first, keyword 24/25 first, every mode 25/25 in the top 3 (torch); with the int8
# ONNX backend dense alone has one question at rank 4. The floors leave room for one or two
# misses as the question set grows, and fail on any real regression (a missing tail chunk, a
# broken fusion, a wrong grouping of chunks into papers). Hybrid, what the app uses, keeps 100%.
HYBRID_TOP1 = 0.9
SINGLE_MODE_TOP1 = 0.8
TOP3 = {"hybrid": 1.0, "dense": 0.96, "keyword": 0.96}


@pytest.fixture(scope="module")
def retriever(seed_settings: Settings, embeddings: Any) -> Retriever:
    index = PaperIndex.open(seed_settings, embeddings)
    return Retriever(index, embeddings, seed_settings.retrieval)


def gold_paper(question: dict[str, Any], papers: list[Paper]) -> Paper:
    found = [p for p in papers if any(g in p.abstract for g in question["gold"])]
    assert len(found) == 1, f"{question['id']}: gold snippet matches {len(found)} seed papers"
    return found[0]


def gold_ranks(retriever: Retriever, papers: list[Paper], mode: str) -> dict[str, int]:
    ranks = {}
    for question in QUESTIONS:
        ids = [r.paper.id for r in retriever.search(question["question"], k=10, mode=mode)]
        gold = gold_paper(question, papers).id
        ranks[question["id"]] = ids.index(gold) + 1 if gold in ids else 99
    return ranks


def test_the_question_set_is_what_the_tests_assume(seed_papers: list[Paper]) -> None:
    kinds = {q["kind"] for q in QUESTIONS}
    assert kinds == {"paraphrase", "tail"}
    assert len(QUESTIONS) >= 20
    assert all(set(q) >= {"id", "kind", "question", "gold"} and q["gold"] for q in QUESTIONS)
    for question in QUESTIONS:
        gold_paper(question, seed_papers)
    # Paraphrases do not copy the abstract: the gold snippet is not in the question.
    for question in QUESTIONS:
        assert not any(g.lower() in question["question"].lower() for g in question["gold"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "top1"),
    [("hybrid", HYBRID_TOP1), ("dense", SINGLE_MODE_TOP1), ("keyword", SINGLE_MODE_TOP1)],
)
def test_the_right_paper_comes_first(
    retriever: Retriever, seed_papers: list[Paper], mode: str, top1: float
) -> None:
    ranks = gold_ranks(retriever, seed_papers, mode)
    share_first = sum(r == 1 for r in ranks.values()) / len(ranks)
    share_top3 = sum(r <= 3 for r in ranks.values()) / len(ranks)
    assert share_first >= top1, ranks
    assert share_top3 >= TOP3[mode], ranks
    for kind in ("paraphrase", "tail"):
        of_kind = [ranks[q["id"]] for q in QUESTIONS if q["kind"] == kind]
        assert sum(r == 1 for r in of_kind) / len(of_kind) >= top1 - 0.1, (kind, ranks)


def test_tail_facts_are_matched_by_their_own_chunk(
    seed_settings: Settings, embeddings: Any, seed_papers: list[Paper]
) -> None:
    """Facts past the model's 256-word-piece window are found through the chunk that holds them.

    Ranking alone cannot show this on 38 papers (the topic gives the paper away), so look at
    which chunk the dense search matched.
    """
    tokenizer = load_tokenizer()
    index = PaperIndex.open(seed_settings, embeddings)
    tail = [q for q in QUESTIONS if q["kind"] == "tail"]
    beyond_window, matched = 0, 0
    for question in tail:
        paper = gold_paper(question, seed_papers)
        snippet = next(g for g in question["gold"] if g in paper.abstract)
        seen = tokenizer(paper.abstract, truncation=True, max_length=256)["input_ids"]
        visible = tokenizer.decode(seen, skip_special_tokens=True)
        beyond_window += snippet.lower() not in visible.lower()
        top = index.dense_search(embeddings.embed_query(question["question"]), 1)[0]
        start, end = chunk_span(index, top.chunk_id)
        at = paper.abstract.index(snippet)
        matched += top.paper_id == paper.id and start <= at < end
    assert beyond_window >= 4  # the set really asks about text a truncating model never reads
    assert matched / len(tail) >= 0.8  # measured 9/10


def chunk_span(index: PaperIndex, chunk_id: str) -> tuple[int, int]:
    from rag.index.store import make_client

    chunks = make_client(index.settings).get_collection(index.chunks_name)
    meta = chunks.get(ids=[chunk_id], include=["metadatas"])["metadatas"][0]
    return int(meta["start"]), int(meta["end"])


def test_results_are_papers_not_chunks(retriever: Retriever, seed_papers: list[Paper]) -> None:
    by_id = {p.id: p for p in seed_papers}
    results = retriever.search("transformers attention long sequences", k=38)
    ids = [r.paper.id for r in results]
    assert len(ids) == len(set(ids)) >= 30
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)
    for r in results:
        assert r.paper.abstract == by_id[r.paper.id].abstract  # the full abstract
        assert r.paper.title == by_id[r.paper.id].title


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "???",
        "的 模型",
        "$\\mathcal{O}(N^2)$ \\ours{}",
        "attention " * 600,
        "\x00\x1b[31m",
    ],
)
def test_odd_questions_do_not_break_search(retriever: Retriever, query: str) -> None:
    results = retriever.search(query, k=5)
    assert len(results) <= 5
    assert len({r.paper.id for r in results}) == len(results)
    if not query.strip():
        assert results == []


# The CLI -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_search_json_schema(
    seed_settings: Settings, seed_papers: list[Paper], capsys: pytest.CaptureFixture[str]
) -> None:
    question = QUESTIONS[0]
    index_dir = str(seed_settings.store.index_dir)
    code, out, err = run_cli(
        ["search", question["question"], "--json", "--index", index_dir], capsys
    )
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1
    document = json.loads(lines[0])
    assert set(document) == {"results"}
    results = document["results"]
    assert len(results) == 5  # retrieval.k
    by_id = {p.id: p for p in seed_papers}
    for row in results:
        assert set(row) == RESULT_KEYS
        paper = by_id[row["paper_id"]]
        assert row["abstract"] == paper.abstract and row["title"] == paper.title
        assert row["url"] == "" and row["decision"] == ""  # the seeds have neither
        assert row["authors"] == [] and row["has_abstract"] is True
        assert isinstance(row["score"], float)
    assert len({r["paper_id"] for r in results}) == 5
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert results[0]["paper_id"] == gold_paper(question, seed_papers).id
    # A long abstract comes back whole, not as the chunk that matched.
    long_ones = [r for r in results if len(r["abstract"]) > 1400]
    assert long_ones

    code, out, _ = run_cli(
        ["search", question["question"], "--json", "--k", "2", "--index", index_dir], capsys
    )
    assert code == 0 and len(json.loads(out)["results"]) == 2


def test_search_batch_prints_one_json_line_per_question_and_loads_models_once(
    tmp_path: Path,
    seed_settings: Settings,
    seed_papers: list[Paper],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rag.models.factory

    made = []
    real = rag.models.factory.make_embeddings

    def counting(settings: Any) -> Any:
        made.append(settings)
        return real(settings)

    monkeypatch.setattr(rag.models.factory, "make_embeddings", counting)
    chosen = QUESTIONS[:3] + [q for q in QUESTIONS if q["kind"] == "tail"][:2]
    batch = tmp_path / "questions.txt"
    batch.write_text(
        "\n".join(q["question"] for q in chosen[:3])
        + "\n\n"
        + "\n".join(q["question"] for q in chosen[3:])
        + "\n"
    )
    index_dir = str(seed_settings.store.index_dir)
    code, out, err = run_cli(
        ["search", "--batch", str(batch), "--json", "--index", index_dir], capsys
    )
    assert code == 0, err
    assert len(made) == 1
    lines = out.splitlines()
    assert len(lines) == 5  # the blank line is skipped
    for line, question in zip(lines, chosen, strict=True):
        document = json.loads(line)
        assert set(document) == {"query", "results"}
        assert document["query"] == question["question"]
        assert all(set(row) == RESULT_KEYS for row in document["results"])
        assert document["results"][0]["paper_id"] == gold_paper(question, seed_papers).id


def test_search_text_output_and_usage_errors(
    tmp_path: Path, seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    index_dir = str(seed_settings.store.index_dir)
    code, out, _ = run_cli(
        ["search", "3D mesh generation with pivot vertices", "--index", index_dir], capsys
    )
    assert code == 0
    assert out.splitlines()[0].startswith("1. PivotMesh (an unidentified seed abstract)  (")
    code, out, err = run_cli(["search", "--index", index_dir], capsys)
    assert code != 0 and err.startswith("error: ") and "QUESTION" in err
    missing = tmp_path / "nope.txt"
    code, out, err = run_cli(["search", "--batch", str(missing), "--index", index_dir], capsys)
    assert code != 0 and err.startswith("error: ") and "nope.txt" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = run_cli(["search", "anything", "--index", str(tmp_path / "none")], capsys)
    assert code != 0 and "rag ingest" in err and len(err.strip().splitlines()) == 1


# Tiers (Oral / Spotlight / Poster) on a small real index ---------------------------------------


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory, embeddings: Any) -> tuple[Settings, list]:
    """Eight real papers of each tier (the 2,105-paper index would cost minutes)."""
    records = read_jsonl(CORPUS_JSONL)
    chosen: list[dict[str, Any]] = []
    for tier in ("Oral", "Spotlight", "Poster"):
        chosen += [r for r in records if tier in r["decision"]][:8]
    folder = tmp_path_factory.mktemp("tiered")
    path = folder / "tiered.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    settings = make_settings(folder / "index")
    build_index(settings, [path], embeddings=embeddings)
    return settings, chosen


def test_tier_filter(
    tiered: tuple[Settings, list], embeddings: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, records = tiered
    retriever = Retriever(PaperIndex.open(settings, embeddings), embeddings, settings.retrieval)
    oral = next(r for r in records if "Oral" in r["decision"])
    assert retriever.search(oral["title"])[0].paper.id == oral["id"]
    for tiers in (["Spotlight"], ["Poster"], ["Spotlight", "Poster"]):
        results = retriever.search(oral["title"], k=10, filters=Filters(tiers=tiers))
        assert len(results) == min(10, 8 * len(tiers))
        assert {r.paper.tier for r in results} == set(tiers)
        assert oral["id"] not in {r.paper.id for r in results}

    code = main(
        [
            "search",
            oral["title"],
            "--tier",
            "Oral",
            "--json",
            "--k",
            "20",
            "--index",
            str(settings.store.index_dir),
        ]
    )
    rows = json.loads(capsys.readouterr().out)["results"]
    assert code == 0 and len(rows) == 8
    assert {row["decision"] for row in rows} == {"Accept (Oral)"}
    assert rows[0]["paper_id"] == oral["id"] and rows[0]["url"] == oral["url"]


def test_equal_scores_keep_the_rank_order_in_every_process() -> None:
    """Fused scores that tie (papers dense search missed, with equal BM25 scores) keep the
    rank lists' order, not the order of a set of strings, which changes with each process's
    hash seed: the same question gave other sources from one run to the next."""
    from rag.retrieval.calibration import MINILM

    fusion = object.__new__(Retriever)  # `_fuse` reads the calibration alone
    fusion.calibration = MINILM
    assert MINILM.fusion == "weighted"
    dense = {"d0": 0, "d1": 1}
    tied = [f"paper-{i:02d}" for i in range(20)]  # all outside the dense list, all equal
    keyword = {pid: rank for rank, pid in enumerate(["d0", *tied])}
    scores = {pid: 1.0 for pid in keyword}
    fused = fusion._fuse(dense, keyword, {"d0": 0.9, "d1": 0.8}, scores)
    ranked = sorted(fused, key=lambda pid: -fused[pid])
    assert ranked == ["d0", *tied, "d1"]  # d1: a lower cosine and no keyword score
