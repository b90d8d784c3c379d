"""The bundled corpus: the whole conference by default, each seed merged into the paper it is.

The last tests are the issue's "done when" on a real index of the whole bundle: the ReBIND
question answered with its titled card, decision and OpenReview link, in the CLI and the page.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from rag.cli.main import main
from rag.corpus.loaders import load_papers
from rag.corpus.seeds import load_corpus, merge_seeds, normalise
from rag.errors import LoadError
from rag.settings import (
    BUNDLED_CORPUS,
    BUNDLED_PAPERS,
    PROJECT_ROOT,
    SEED_FILES,
    Settings,
    get_settings,
)
from tests.helpers import copy_index, index_snapshot, point_app_at, read_jsonl

TITLE_LIST = BUNDLED_CORPUS / "iclr2025_accepted_no_abstract.jsonl"
REBIND = "WNIEr5kydF"
REBIND_TITLE = (
    "REBIND: Enhancing Ground-state Molecular Conformation Prediction via Force-Based "
    "Graph Rewiring"
)
REBIND_QUESTION = "Which paper rewires molecular graphs using the Lennard-Jones potential?"

# Seeds whose abstract is a corpus paper's (checked by hand: same text up to whitespace).
SAME_ABSTRACT = {
    "000_8151f1bd5b6a28e2-001": "WNvvwK0tut",  # Scaling up Masked Diffusion Models on Text
    "000_8151f1bd5b6a28e2-002": REBIND,
    "000_8151f1bd5b6a28e2-003": "WLSrq1254E",  # Q-Adapter
    "000_8151f1bd5b6a28e2-004": "WKfb1xGXGx",  # Perm
    "000_8151f1bd5b6a28e2-005": "WKW5TG8ItY",  # LOTOS: Training Robust Ensembles ...
    "000_8151f1bd5b6a28e2-007": "WJaUkwci9o",  # Self-Improvement in Language Models
    "000_8151f1bd5b6a28e2-009": "WG7GzGx3G9",  # Rotated Runtime Smooth
    "000_8151f1bd5b6a28e2-010": "WEQL5ksDnB",  # CAV2vec: Multi-Task Corrupted Prediction
    "000_8151f1bd5b6a28e2-012": "WCRQFlji2q",  # Do I Know This Entity?
    "000_8151f1bd5b6a28e2-019": "W6yIKliMot",  # Don't Take Things Out of Context
    "003_4ff9ec978693024e-001": "wXSshrxlP4",  # GrabS
    "003_4ff9ec978693024e-002": "wWnsoLhHwt",  # Self-Generated-Text Recognition
    "003_4ff9ec978693024e-003": "wVTJRnZ11Z",  # When GNNs meet symmetry in ILPs
    "003_4ff9ec978693024e-005": "wUtXB43Chi",  # FlashMask
    "003_4ff9ec978693024e-007": "wUbum0nd9N",  # On Calibration of LLM-based Guard Models
    "003_4ff9ec978693024e-012": "wPMRwmytZe",  # Progressive distillation
    "003_4ff9ec978693024e-014": "wN3KaUXA5X",  # Diffusion On Syntax Trees
    "003_4ff9ec978693024e-016": "wM2sfVgMDH",  # Diffusion-Based Planning for Autonomous Driving
    "003_4ff9ec978693024e-017": "wLnls9LS3x",  # Kernel Matrix-Vector Multiplication
    "003_4ff9ec978693024e-018": "wLmJIs1uqG",  # LancBiO
}
# Seeds named by the list of accepted papers without an abstract: the title's leading name is
# the method the seed introduces, and the rest of the title agrees with the abstract.
NAMED_BY_TITLE = {
    "000_8151f1bd5b6a28e2-014": ("WAC8LmlKYf", "PivotMesh: Generic 3D Mesh Generation"),
    "000_8151f1bd5b6a28e2-018": ("W8K8slZ73R", "Adaptive Transformer Programs: Bridging"),
    "003_4ff9ec978693024e-004": ("wVADj7yKee", "SINGER: Stochastic Network Graph Evolving"),
    "003_4ff9ec978693024e-008": ("wTLc79YNbh", "TimeKAN: KAN-based Frequency Decomposition"),
    "003_4ff9ec978693024e-009": ("wSkvf2WyYz", "SBSC: Step-by-Step Coding"),
    # A question title the seed's abstract answers ("Not yet. We present SPACE, ...").
    "000_8151f1bd5b6a28e2-006": ("WK6K1FMEQ1", "Does Spatial Cognition Emerge in Frontier"),
}


@pytest.fixture(scope="module")
def bundle() -> Any:
    return load_corpus([BUNDLED_CORPUS])


def test_the_default_corpus_is_the_whole_bundle(bundle: Any) -> None:
    assert get_settings().corpus_paths() == [BUNDLED_CORPUS]
    papers = bundle.papers
    records = read_jsonl(BUNDLED_PAPERS)
    assert len(records) == 2105
    with_abstract = [p for p in papers if p.has_abstract]
    assert len(with_abstract) == 2105 + 38 - len(SAME_ABSTRACT) == 2123
    from_jsonl = [p.id for p in papers if p.source == BUNDLED_PAPERS.name]
    assert from_jsonl == [r["id"] for r in records]
    assert len({p.id for p in papers}) == len(papers)
    # No abstract twice: every seed that is a corpus paper appears once, as that paper.
    texts = [normalise(p.abstract) for p in with_abstract]
    assert len(set(texts)) == len(with_abstract)
    for seed in load_papers(list(SEED_FILES)):
        assert texts.count(normalise(seed.abstract)) == 1, seed.id


def test_every_accepted_paper_without_an_abstract_is_a_title_record(bundle: Any) -> None:
    """Issue 30: the 1,599 papers of the no-abstract list are indexed: 6 as the seeds they
    name (with the seed's abstract), the other 1,593 as title records (no abstract)."""
    rows = read_jsonl(TITLE_LIST)
    assert len(rows) == 1599
    by_id = {p.id: p for p in bundle.papers}
    assert all(r["id"] in by_id for r in rows)
    records = [p for p in bundle.papers if not p.has_abstract]
    assert len(records) == 1599 - len(NAMED_BY_TITLE) == 1593
    assert len(bundle.papers) == 2123 + 1593 == 3716
    kan = by_id["Ozo7qJ5vZi"]
    assert kan.title == "KAN: Kolmogorov–Arnold Networks" and kan.tier == "Oral"
    assert "Max Tegmark" in kan.authors and not kan.authors_ordered
    assert kan.url == "https://openreview.net/forum?id=Ozo7qJ5vZi" and kan.abstract == ""
    # All 3,704 accepted papers, each once, with its tier (the 12 unnamed seeds have none).
    tiers = Counter(p.tier for p in bundle.papers)
    assert tiers == {"Oral": 213, "Spotlight": 380, "Poster": 3111, "": 12}


def test_seeds_become_the_papers_they_are(bundle: Any) -> None:
    by_abstract = {m.seed_id: m.paper_id for m in bundle.matches if m.how == "abstract"}
    by_title = {m.seed_id: m.paper_id for m in bundle.matches if m.how == "title"}
    assert by_abstract == SAME_ABSTRACT
    assert by_title == {seed: pid for seed, (pid, _) in NAMED_BY_TITLE.items()}
    papers = {p.id: p for p in bundle.papers}
    rebind = papers[REBIND]
    assert rebind.title == REBIND_TITLE and rebind.decision == "Accept (Poster)"
    assert rebind.url == f"https://openreview.net/forum?id={REBIND}"
    assert rebind.extra["seeds"] == ["000_8151f1bd5b6a28e2-002"]
    assert not any(seed in papers for seed in SAME_ABSTRACT)


def test_a_seed_named_by_title_keeps_its_own_abstract(bundle: Any) -> None:
    seeds = {p.id: p for p in load_papers(list(SEED_FILES))}
    titles = {r["id"]: r for r in read_jsonl(TITLE_LIST)}
    papers = {p.id: p for p in bundle.papers}
    for seed_id, (paper_id, title_start) in NAMED_BY_TITLE.items():
        paper = papers[paper_id]
        assert paper.title.startswith(title_start) and paper.title == titles[paper_id]["title"]
        assert paper.abstract == seeds[seed_id].abstract
        assert paper.decision == titles[paper_id]["decision"].strip()
        assert paper.decision.startswith("Accept")
        assert paper.url == f"https://openreview.net/forum?id={paper_id}"
        assert paper.extra["seeds"] == [seed_id] and seed_id not in papers


def test_other_seeds_keep_their_labels(bundle: Any) -> None:
    seeds = load_papers(list(SEED_FILES))
    unmatched = [s for s in seeds if s.id not in SAME_ABSTRACT and s.id not in NAMED_BY_TITLE]
    assert len(unmatched) == 12
    papers = {p.id: p for p in bundle.papers}
    for seed in unmatched:
        assert papers[seed.id] == seed  # same label, no decision or link
    assert {"PQM", "LLM-TH", "Solution Path Pruning"} <= {s.title for s in unmatched}


def test_abstracts_match_across_whitespace_latex_and_punctuation(tmp_path: Path) -> None:
    corpus = tmp_path / "papers.jsonl"
    corpus.write_text(
        json.dumps(
            {
                "id": "abc",
                "title": "Fast Sorting",
                "abstract": r"We sort in $\mathcal{O}(n \log n)$ time—faster than before.",
                "decision": "Accept (Oral)",
                "url": "https://openreview.net/forum?id=abc",
            }
        )
        + "\n"
    )
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("header\n\nWe sort in O(n log n)\n  time -- faster than   before\n\nOther.\n")
    merged = load_corpus([corpus, seeds])
    assert [p.id for p in merged.papers] == ["abc", "seeds-002"]
    assert merged.papers[0].title == "Fast Sorting"
    assert merged.papers[0].extra["seeds"] == ["seeds-001"]


def row(pid: str, title: str) -> dict[str, Any]:
    return {"id": pid, "title": title, "decision": "Accept (Poster)", "url": f"u/{pid}"}


def test_a_title_names_a_seed_only_when_certain(tmp_path: Path) -> None:
    seeds = tmp_path / "s.txt"
    seeds.write_text(
        "header\n\nWe propose FooNet, a graph network for fast molecule sampling.\n\n"
        "Graph networks are slow at molecule sampling, which we study.\n"
    )
    papers = load_papers([seeds])
    assert [p.title for p in papers][0] == "FooNet"
    good = row("f1", "FooNet: Fast Molecule Sampling with Graph Networks")
    named = merge_seeds(papers, [good]).papers
    assert (named[0].id, named[0].title, named[0].url) == ("f1", good["title"], "u/f1")
    # Two papers by that name, a title about something else, or a seed with no name: no match.
    twin = row("f2", "FooNet: Fast Molecule Sampling Again")
    other = row("f3", "FooNet: Protein Folding in Vision Transformers")
    gist = row("f4", "Graph networks are slow: a study")
    for titles in ([good, twin], [other], [gist]):
        assert merge_seeds(papers, titles).papers == papers, titles


def test_a_question_title_names_the_seed_that_opens_by_answering_it(tmp_path: Path) -> None:
    """Issue 20 item 8: "Does X?" names the seed whose abstract opens "Not yet." and agrees
    with the title; no answer opening, two such titles, or a statement title: no match."""
    seeds = tmp_path / "s.txt"
    seeds.write_text(
        "header\n\nNot yet. We present QUUX, a benchmark of spatial memory in frontier models.\n"
        "\nWe present ZORB, a benchmark of spatial memory in frontier models.\n"
    )
    papers = load_papers([seeds])
    asked = row("q1", "Does Spatial Memory Emerge in Frontier Models?")
    named = merge_seeds(papers, [asked]).papers
    assert [p.id for p in named] == ["q1", papers[1].id]  # ZORB does not answer a question
    again = row("q2", "Is Spatial Memory Present in Frontier Models?")
    stated = row("q3", "Spatial Memory Emerges in Frontier Models")
    for titles in ([asked, again], [stated]):
        assert merge_seeds(papers, titles).papers == papers, titles


def test_title_words_agree_with_the_abstract_by_stem_not_by_prefix(tmp_path: Path) -> None:
    """The subtitle is compared with the abstract word by stem (rag.common.similarity.stem): a
    shared 5-letter prefix ("transfer", "transformers"; "generalization", "generators") is not
    agreement, while inflections ("Forecasting", "forecasts") are."""
    seeds = tmp_path / "s.txt"
    seeds.write_text(
        "header\n\nWe propose BarNet, which transfers generators between forecasts of traffic.\n"
    )
    papers = load_papers([seeds])
    assert papers[0].title == "BarNet"
    prefixes = row("b1", "BarNet: Transformers for Generalization in Traffic")
    assert merge_seeds(papers, [prefixes]).papers == papers  # 1 of 3 words agrees
    inflected = row("b2", "BarNet: Transferring Generator Forecasting")
    assert merge_seeds(papers, [inflected]).papers[0].id == "b2"


def test_a_folder_skips_its_title_list_which_is_not_papers() -> None:
    folder = {p.source for p in load_papers([BUNDLED_CORPUS])}
    assert folder == {"iclr2025.jsonl", *(f.name for f in SEED_FILES)}
    with pytest.raises(LoadError, match=r"iclr2025_accepted_no_abstract.jsonl, line 1: no abs"):
        load_papers([TITLE_LIST])


def test_the_seeds_preset_indexes_the_seeds_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # its relative paths are the project's, wherever it runs
    settings = get_settings("seeds")
    assert settings.corpus_paths() == list(SEED_FILES)
    assert settings.store.index_dir == Path(".rag/seeds-index")
    papers = load_corpus(settings.corpus_paths()).papers
    assert len(papers) == 38 and not any(p.url or p.decision for p in papers)
    assert (PROJECT_ROOT / "config" / "seeds.toml").exists()


# The whole bundle, indexed (the session's index of it) --------------------------------------


@pytest.mark.slow
def test_stats_show_the_whole_bundle(
    corpus_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stats", "--json", "--index", str(corpus_settings.store.index_dir)]) == 0
    stats = json.loads(capsys.readouterr().out)
    # 2,123 papers with an abstract and 1,593 title records (one chunk each, the title).
    assert stats["papers"] == 3716 and stats["chunks"] > 3600 + 1593


@pytest.mark.slow
def test_the_rebind_question_cites_the_titled_paper(
    corpus_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    index = str(corpus_settings.store.index_dir)
    assert main(["ask", REBIND_QUESTION, "--config", "offline", "--index", index, "--json"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert not reply["abstained"]
    first = reply["citations"][0]
    assert first["paper_id"] == REBIND and first["title"] == REBIND_TITLE
    assert first["url"] == f"https://openreview.net/forum?id={REBIND}"
    assert "Lennard-Jones" in first["quote"]
    # The seed copy of ReBIND is not a second source.
    cited = {c["paper_id"] for c in reply["citations"]}
    assert not any(pid.startswith("000_") and pid.endswith("-002") for pid in cited)


@pytest.mark.slow
def test_the_page_shows_the_rebind_card_with_decision_and_link(
    corpus_settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    point_app_at(monkeypatch, corpus_settings.store.index_dir, tmp_path / "feedback.jsonl")
    at = AppTest.from_file(str(PROJECT_ROOT / "ui" / "app.py"), default_timeout=180).run()
    assert not at.exception, at.exception
    sidebar = " ".join(m.value for m in at.sidebar.markdown)
    # the conference's accepted papers, and the untitled seed abstracts apart
    assert "**3,704** papers + **12** untitled abstracts" in sidebar, sidebar
    at.chat_input[0].set_value(REBIND_QUESTION).run()
    assert not at.exception, at.exception
    answer = at.session_state["turns"][0].answer
    first = answer.citations[0]
    assert first.paper_id == REBIND
    titles = [re.sub(r"\\(.)", r"\1", h.value) for h in at.chat_message[1].subheader]
    assert f"[{first.n}] {REBIND_TITLE}" in titles
    cards = " ".join(m.value for m in at.chat_message[1].markdown)
    assert ":blue-badge[Poster]" in cards
    assert f"(https://openreview.net/forum?id={REBIND})" in cards


@pytest.mark.slow
def test_an_index_of_the_seeds_takes_the_bundle_without_doubles(
    tmp_path: Path, seed_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """An index built from the seeds alone (as before the bundle) gets each merged seed replaced."""
    settings = copy_index(seed_settings, tmp_path / "index")
    records = {r["id"]: r for r in read_jsonl(BUNDLED_PAPERS)}
    two = [records[REBIND], records["wUtXB43Chi"]]  # ReBIND and FlashMask, both seeds too
    papers = tmp_path / "two.jsonl"
    papers.write_text("".join(json.dumps(r) + "\n" for r in two))
    index = str(settings.store.index_dir)
    assert main(["ingest", str(papers), *map(str, SEED_FILES), "--index", index]) == 0
    out = capsys.readouterr().out
    assert "papers: 2 added, 0 updated, 36 unchanged, 2 seed copies merged" in out
    snapshot = index_snapshot(settings)
    assert snapshot["papers"] == 38
    assert (
        REBIND in snapshot["paper_hashes"]
        and "000_8151f1bd5b6a28e2-002" not in snapshot["paper_hashes"]
    )
    assert not any(i.startswith("003_4ff9ec978693024e-005::") for i in snapshot["chunk_ids"])
    assert main(["search", REBIND_QUESTION, "--index", index, "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert results[0]["paper_id"] == REBIND and results[0]["title"] == REBIND_TITLE
    assert sum("Lennard-Jones" in r["abstract"] for r in results) == 1


def test_normalise_folds_accents_and_leaves_ascii_text_as_it_was() -> None:
    # normalise skips the per-character accent filter for ASCII text (5 s of an ingest).
    assert normalise("Café — naïve \\mathcal{O}(n) Señor") == "cafe naive o n senor"
    assert normalise("A  Fast, RELU-based\tmodel.") == "a fast relu based model"
