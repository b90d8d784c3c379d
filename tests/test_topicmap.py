"""The topic map and related papers, on real indexes (real Chroma, the bundled model).

At scale: the 2,123-paper layout keeps neighbourhoods (trustworthiness at k = 10 >= 0.85),
every paper has a topic, topic labels are non-empty and distinct. The cache: computed once per
index generation, kept by an unchanged re-ingest, recomputed when a paper changes, and kept
per server in server mode, beside the BM25 cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag.cli.main import main
from rag.explore.labels import distinct_labels, topic_terms
from rag.explore.related import related_papers
from rag.explore.topicmap import (
    FORMAT,
    TopicMap,
    compute_topic_map,
    load_topic_map,
    map_path,
    trustworthiness,
)
from rag.index.ingest import build_index
from rag.index.papers import PaperIndex
from rag.index.vectors import PaperVectors, read_paper_vectors
from rag.models.minilm import LocalEmbeddings
from rag.settings import SEED_FILES, Settings, with_overrides
from tests.helpers import copy_index, make_settings


@pytest.fixture(scope="module")
def corpus(corpus_settings: Settings, embeddings: LocalEmbeddings) -> PaperVectors:
    return read_paper_vectors(PaperIndex.open(corpus_settings, embeddings))


@pytest.fixture(scope="module")
def corpus_map(corpus: PaperVectors) -> TopicMap:
    texts = [f"{p.title}\n{p.abstract}" for p in corpus.papers]
    return compute_topic_map(corpus.ids, corpus.vectors, texts)


@pytest.mark.slow
def test_the_layout_keeps_neighbourhoods_and_every_paper_has_a_topic(
    corpus: PaperVectors, corpus_map: TopicMap
) -> None:
    assert len(corpus.papers) == 2123 and corpus_map.paper_ids == corpus.ids
    assert trustworthiness(corpus.vectors, corpus_map.xy, k=10) >= 0.85
    assert corpus_map.xy.shape == (2123, 2) and np.isfinite(corpus_map.xy).all()
    assert np.abs(corpus_map.xy).max() == pytest.approx(1.0)
    topics = corpus_map.topic_list
    assert 15 <= len(topics) <= 60
    assert set(corpus_map.topics.tolist()) == {t.id for t in topics}
    assert sum(t.size for t in topics) == 2123
    labels = [t.label for t in topics]
    assert all(label.strip() for label in labels) and len(set(labels)) == len(labels)


@pytest.mark.slow
def test_topics_are_about_what_their_papers_say(corpus: PaperVectors, corpus_map: TopicMap) -> None:
    """A label's terms occur in its topic's papers (c-TF-IDF picks what they share)."""
    shares = []
    for topic in corpus_map.topic_list:
        members = [corpus.papers[i] for i in np.flatnonzero(corpus_map.topics == topic.id)]
        terms = topic.label.split(", ")
        text = [f"{p.title} {p.abstract}".lower() for p in members]
        shares.append(np.mean([any(t in x for t in terms) for x in text]))
    assert min(shares) >= 0.35 and np.median(shares) >= 0.6, shares
    # Topics group near papers: a paper's nearest neighbour by vector mostly shares its topic
    # (0.86 measured), and so do its 10 nearest points on the map (0.90).
    sims = corpus.vectors @ corpus.vectors.T
    np.fill_diagonal(sims, -1)
    nearest = sims.argmax(axis=1)
    assert np.mean(corpus_map.topics[nearest] == corpus_map.topics) >= 0.75
    from sklearn.neighbors import NearestNeighbors

    _, near = NearestNeighbors(n_neighbors=11).fit(corpus_map.xy).kneighbors(corpus_map.xy)
    assert np.mean(corpus_map.topics[near[:, 1:]] == corpus_map.topics[:, None]) >= 0.8


@pytest.mark.slow
def test_the_same_seed_gives_the_same_map(corpus: PaperVectors, corpus_map: TopicMap) -> None:
    subset = slice(0, 400)
    texts = [f"{p.title}\n{p.abstract}" for p in corpus.papers[subset]]
    a = compute_topic_map(corpus.ids[subset], corpus.vectors[subset], texts)
    b = compute_topic_map(corpus.ids[subset], corpus.vectors[subset], texts)
    assert np.array_equal(a.xy, b.xy) and np.array_equal(a.topics, b.topics)
    assert [t.label for t in a.topic_list] == [t.label for t in b.topic_list]


@pytest.mark.slow
def test_related_papers_are_the_nearest_by_paper_vector(corpus: PaperVectors) -> None:
    pid = corpus.ids[100]
    related = related_papers(corpus, pid)
    assert len(related) == 5 and pid not in {r.paper.id for r in related}
    sims = corpus.vectors @ corpus.vectors[100]
    sims[100] = -1
    assert [r.paper.id for r in related] == [corpus.ids[i] for i in np.argsort(-sims)[:5]]
    assert all(a.similarity >= b.similarity for a, b in zip(related, related[1:], strict=False))
    orals = related_papers(corpus, pid, tiers=["Oral"])
    assert len(orals) == 5 and {r.paper.tier for r in orals} == {"Oral"}
    assert related_papers(corpus, "no-such-paper") == []


def test_labels_are_distinct_and_keep_the_longer_phrase() -> None:
    labels = distinct_labels(
        [
            ["diffusion", "diffusion models", "image", "graphs", "graph"],
            ["diffusion", "diffusion models", "image", "video"],
            [],
        ]
    )
    assert labels[0][0] == "diffusion models, image, graphs"
    assert labels[1][0] == "diffusion models, image, video"
    assert labels[2][0] == "topic 3"


def test_a_label_repeats_no_word() -> None:
    """The bundled map labelled a topic "reinforcement rl, reinforcement, policy": a phrase
    over two terms already picked replaced one and kept the other."""
    [(label, _)] = distinct_labels([["rl", "reinforcement", "reinforcement rl", "policy"]])
    assert label == "rl, reinforcement, policy"


def test_c_tf_idf_picks_each_topics_own_terms() -> None:
    texts = [
        "protein folding with structure prediction of protein sequences",
        "protein design and protein structure generation",
        "graph neural networks on molecular graphs and node features",
        "message passing graph networks for node classification on graphs",
    ]
    terms = topic_terms(texts, np.array([0, 0, 1, 1]))
    assert terms[0][0].startswith("protein") and "graph" not in " ".join(terms[0][:3])
    assert terms[1][0].startswith("graph") and "protein" not in " ".join(terms[1][:3])


@pytest.mark.slow
def test_map_is_cached_per_generation_and_recomputed_only_when_papers_change(
    tmp_path: Path, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    settings = copy_index(seed_settings, tmp_path / "index")
    index = PaperIndex.open(settings, embeddings)
    stages: list[str] = []
    first = load_topic_map(index, progress=lambda stage, share: stages.append(stage))
    path = map_path(settings)
    assert path.parent == settings.store.index_dir and path.exists()
    assert "laying out the map" in stages and stages[-1] == "done"
    assert first.generation == index.current_generation() and len(first) == 38
    stamp = path.stat().st_mtime_ns
    # An unchanged re-ingest keeps the generation, so the cache is used as it is.
    build_index(settings, list(SEED_FILES), embeddings=embeddings)
    stages.clear()
    again = load_topic_map(
        PaperIndex.open(settings, embeddings), progress=lambda *a: stages.append(a[0])
    )
    assert stages == [] and path.stat().st_mtime_ns == stamp
    assert again.paper_ids == first.paper_ids and np.allclose(again.xy, first.xy, atol=1e-4)
    # A new paper is a new generation: the map is recomputed and has it.
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps(
            {
                "id": "new-paper",
                "title": "A new paper on protein folding",
                "abstract": "We fold proteins with a diffusion model. It works well.",
            }
        )
        + "\n"
    )
    build_index(settings, [*SEED_FILES, extra], embeddings=embeddings)
    index = PaperIndex.open(settings, embeddings)
    changed = load_topic_map(index)
    assert changed.generation != first.generation and len(changed) == 39
    assert changed.position("new-paper") is not None
    assert json.loads(path.read_text())["generation"] == changed.generation


def test_a_corrupt_cache_is_recomputed(
    tmp_path: Path, seed_settings: Settings, embeddings: LocalEmbeddings
) -> None:
    settings = copy_index(seed_settings, tmp_path / "index")
    index = PaperIndex.open(settings, embeddings)
    map_path(settings).write_text("{not json")
    assert len(load_topic_map(index)) == 38
    assert json.loads(map_path(settings).read_text())["format"] == FORMAT


def test_server_mode_keeps_one_map_cache_per_server(tmp_path: Path) -> None:
    from rag.index.bm25 import keyword_dir

    base = make_settings(tmp_path / "cache")
    one = with_overrides(base, {"store": {"mode": "http", "host": "10.0.0.1", "port": 8000}})
    two = with_overrides(base, {"store": {"mode": "http", "host": "10.0.0.2", "port": 8000}})
    assert map_path(one) != map_path(two)
    for settings in (one, two):
        assert map_path(settings).parent == keyword_dir(settings).parent
        assert "10.0.0" in map_path(settings).name and "topicmap" in map_path(settings).name
    assert map_path(base).name == "topicmap.json"


@pytest.mark.slow
def test_rag_map_json_has_the_documented_shape(
    tmp_path: Path,
    seed_settings: Settings,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = copy_index(seed_settings, tmp_path / "index")
    assert main(["map", "--json", "--index", str(settings.store.index_dir)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == ["papers", "topics"]
    assert len(printed["papers"]) == 38
    assert all(list(p) == ["paper_id", "x", "y", "topic"] for p in printed["papers"])
    assert all(list(t) == ["id", "label", "size"] for t in printed["topics"])
    ids = {t["id"] for t in printed["topics"]}
    assert {p["topic"] for p in printed["papers"]} == ids
    assert sum(t["size"] for t in printed["topics"]) == 38
    assert main(["map", "--index", str(settings.store.index_dir)]) == 0
    assert capsys.readouterr().out.startswith("38 papers in ")


def test_rag_related_and_errors(
    seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(seed_settings.store.index_dir)
    seeds = read_paper_ids(seed_settings)
    assert main(["related", seeds[0], "--json", "--index", index]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["paper_id"] == seeds[0] and len(printed["related"]) == 5
    assert seeds[0] not in {r["paper_id"] for r in printed["related"]}
    assert main(["related", "nope", "--index", index]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no paper with id 'nope'") and err.count("\n") == 1


def read_paper_ids(settings: Settings) -> list[str]:
    from rag.index.store import make_client

    client = make_client(settings)
    return sorted(client.get_collection(f"{settings.store.collection}_papers").get()["ids"])
