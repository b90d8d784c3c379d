"""A method asked by name is answered from the paper that introduces it (issue 20, item 1).

One-term BM25 queries ("CAKE") are searched; the name index (rag.retrieval.names) finds the
names of the titles in a question as users type them, leaves ordinary words alone, and a name
no paper has gets "No paper in the index is called X". Fast tests use a small real index of
papers from the bundled corpus; the full corpus only in the tests marked slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.answer.conversation import offline_standalone
from rag.answer.pipeline import Assistant, CitedAnswer, answer, open_assistant
from rag.index.bm25 import KeywordIndex
from rag.index.ingest import build_index
from rag.lang.question_kind import subject
from rag.models.minilm import LocalEmbeddings
from rag.retrieval.names import NameIndex, PaperNames, name_shaped, named_records, title_names
from rag.types import Paper
from tests.helpers import CORPUS_JSONL, ROOT, make_settings, read_jsonl

FLEXPREFILL = "FlexPrefill: A Context-Aware Sparse Attention Mechanism for Efficient"
CAKE = "CAKE: Cascading and Adaptive KV Cache Eviction with Layer Preferences"
# The named papers, and papers on the same topics that a dense search confuses them with.
TITLES = (
    FLEXPREFILL,
    CAKE,
    "DataMan: Data Manager for Pre-training Large Language Models",
    "MUSE: Machine Unlearning Six-Way Evaluation for Language Models",
    "ZETA: Leveraging Z -order Curves for Efficient Top- k Attention",
    "FlashMask: Efficient and Rich Mask Extension of FlashAttention",
    "SqueezeAttention: 2D Management of KV-Cache in LLM Inference",
    "The Ramanujan Library - Automated Discovery on the Hypergraph of Integer Relations",
    "Drama: Mamba-Enabled Model-Based Reinforcement Learning",
    "Long Context Compression with Activation Beacon",
)


def paper(title: str, abstract: str = "An abstract.", pid: str = "") -> Paper:
    return Paper(id=pid or title[:10], title=title, abstract=abstract)


# BM25 ----------------------------------------------------------------------------------------


def test_bm25_searches_a_query_of_one_content_term() -> None:
    """bm25s numbers a lone term 0: the query "CAKE" used to return nothing."""
    texts = [
        "CAKE evicts entries of the KV cache layer by layer.",
        "DataMan rates pre-training data by its perplexity.",
        "Graph neural networks count substructures.",
    ]
    keyword = KeywordIndex.build(["c0", "c1", "c2"], ["p0", "p1", "p2"], texts, "g")
    for query, first in [("CAKE", "c0"), ("What is DataMan?", "c1"), ("Summarize CAKE.", "c0")]:
        found = keyword.search(query, 3)
        assert found, query
        assert found[0][0] == first, query
    assert keyword.search("the of what is", 3) == []  # no content term: nothing to match
    assert keyword.search("sourdough", 3) == []  # a term no chunk has


def test_bm25_built_with_numpy_scores_as_the_scipy_matrix_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """rag.index.bm25 builds bm25s' matrix with numpy so a search need not import scipy."""
    import bm25s
    import numpy as np
    import scipy.sparse

    # bm25s was imported with scipy hidden (rag.index.bm25): give its scipy backend scipy.
    monkeypatch.setattr(bm25s, "sp", scipy.sparse, raising=False)
    monkeypatch.setattr(bm25s, "SCIPY_AVAILABLE", True)

    from rag.index.bm25 import _tokenize

    texts = [p["abstract"] for p in read_jsonl(CORPUS_JSONL)[:300]]
    keyword = KeywordIndex.build([str(i) for i in range(300)], ["p"] * 300, texts, "g")
    reference = bm25s.BM25(csc_backend="scipy")
    reference.index(_tokenize(texts), show_progress=False)
    assert keyword.retriever is not None
    for name in ("data", "indices", "indptr"):
        assert np.array_equal(keyword.retriever.scores[name], reference.scores[name]), name


# Names, without an index ---------------------------------------------------------------------


def test_titles_define_their_leading_names_and_acronyms() -> None:
    assert title_names(f"{FLEXPREFILL} Long-Sequence Inference") == ["FlexPrefill"]
    assert title_names("The Ramanujan Library - Automated Discovery") == []  # a phrase, no name
    assert title_names("Forte : Finding Outliers with Representation Typicality") == ["Forte"]
    assert "TetSphere" in title_names("TetSphere Splatting: Representing High-Quality Geometry")
    assert title_names("Noise-conditioned Energy-based Annealed Rewards (NEAR): A Framework") == [
        "NEAR"
    ]
    assert title_names("Graph Neural Networks Can (Often) Count Substructures") == []
    assert title_names("SPACE") == ["SPACE"]  # a seed abstract titled by its name
    assert title_names("The increasing size of deep neural networks (DNNs) needs…") == []
    assert title_names("Long Context Compression with Activation Beacon") == []
    # A short title in capitals is its method's name; one in sentence case is a phrase.
    assert title_names("Differential Transformer") == ["Differential Transformer"]
    assert title_names("Synthetic continued pretraining") == []
    # So does a head of two or three words in capitals; a head in sentence case is a phrase.
    assert title_names("Block Diffusion: Interpolating Between Autoregressive and Diffusion") == [
        "Block Diffusion"
    ]
    assert title_names("Scaling laws for precision: a study") == []


def test_a_title_is_named_as_a_keyboard_types_it() -> None:
    """Greek letters are spelled out and letters spaced apart (as a PDF's title may hold
    them) joined: a question types "gamma-MoD", "sigma-zero", "InterLCM"."""
    greek = "\u03b3 \u2212 MoD: Exploring Mixture-of-Depth Adaptation"
    assert title_names(greek) == ["gamma-MoD"]
    assert title_names("\u03c3 -zero: Gradient-based Optimization") == ["sigma-zero"]
    assert title_names("I n t e r L C M : Low-Quality Images as States") == ["InterLCM"]
    names = NameIndex.build([paper(greek, pid="mod")])
    for question in ("gamma-MoD: how much faster is it?", "\u03b3-MoD 快了多少？"):
        found = names.match(question)
        assert found is not None and found.paper_ids == ("mod",), question
        # "gamma" and "mod" are English words, but no English word has a capital inside: the
        # only name a question writes, it names the record whatever the rest asks.
        assert named_records(question, found, {"mod": greek}, only=True) == ["mod"]
    cake = "CAKE: Cascading and Adaptive KV Cache Eviction"
    found = NameIndex.build([paper(cake, pid="cake")]).match("CAKE: how much faster is it?")
    assert found is not None  # an English word in capitals: named only by the rest's words
    assert named_records("CAKE: how much faster is it?", found, {"cake": cake}, True) == []


def test_a_short_title_names_its_paper_ordinary_words_only_as_the_title_writes_them() -> None:
    names = NameIndex.build(
        [paper("Differential Transformer", pid="diff"), paper("Strong Model Collapse", pid="smc")]
    )
    found = names.match("Summarize how the Differential Transformer's attention works.")
    assert found is not None and found.paper_ids == ("diff",)
    found = names.match("What does Strong Model Collapse find about synthetic data?")
    assert found is not None and found.paper_ids == ("smc",)
    assert names.match("Does a strong model collapse on synthetic data?") is None


def test_name_shape_and_question_subject() -> None:
    assert all(map(name_shaped, ["FlexPrefill", "CAKE", "DPLM-2", "4K4DGen", "MoE++"]))
    assert not any(map(name_shaped, ["Drama", "flexprefill", "the", "Attention"]))
    assert subject("What is FlexPrefill?") == "FlexPrefill"
    assert subject("How does FlexPrefill work?") == "FlexPrefill"
    assert subject("Summarize CAKE.") == "CAKE"
    assert subject("Can you summarize the DataMan paper?") == "DataMan"
    assert subject("FlexPrefill 是什么？") == "FlexPrefill"
    assert subject("介绍一下 FlexPrefill") == "FlexPrefill"
    assert subject("whats HaDeMiF") == "HaDeMiF"  # typed without the apostrophe
    assert subject("Which papers evict the KV cache?") is None


@pytest.fixture(scope="module")
def names() -> NameIndex:
    return NameIndex.build([paper(t, pid=f"p{i}") for i, t in enumerate(TITLES)])


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("What is FlexPrefill?", "FlexPrefill"),
        ("what is flexprefill?", "FlexPrefill"),  # typed in lower case
        ("How does flexprefill pick its sparse patterns?", "FlexPrefill"),
        ("FlexPrefill 是什么？", "FlexPrefill"),
        ("介绍一下 dataman", "DataMan"),
        ("CAKE", "CAKE"),  # an ordinary word, in capitals as the title writes it
        ("How does CAKE allocate the cache budget across layers?", "CAKE"),
        ("What is MUSE?", "MUSE"),
        ("What is muse?", "MUSE"),  # an ordinary word, but the whole subject
        ("Summarize Drama.", "Drama"),
        ("How is MUSE evaluated?", "MUSE"),
        ("what did the cake paper find", "CAKE"),  # an ordinary word just before "paper"
        ("drama paper - what do they propose?", "Drama"),
    ],
)
def test_a_question_names_the_paper(names: NameIndex, question: str, name: str) -> None:
    found = names.match(question)
    assert found is not None, question
    assert found.name == name


@pytest.mark.parametrize(
    "question",
    [
        "Which papers bake a cake with diffusion models?",  # ordinary words stay words
        "How do poets find their muse?",
        "Drama and tension in generated stories",  # Title-case at the start of a sentence
        "What is the zeta function used for in number theory?",
        "Which papers study long context compression?",  # words of a title with no name
        "flex prefill attention",
        "Which papers on drama generation are there?",  # not just before "paper"
        "a cake recipe paper",  # the word before "paper" is "recipe"
    ],
)
def test_ordinary_words_name_no_paper(names: NameIndex, question: str) -> None:
    assert names.match(question) is None, question


def test_unknown_names_and_the_closest_ones(names: NameIndex) -> None:
    counts = {"lora": 40, "flexprefil": 0}
    assert names.unknown_name("What is FooBarNet?", counts) == "FooBarNet"
    assert names.unknown_name("FooBarNet 是什么？", counts) == "FooBarNet"
    assert names.unknown_name("What is LoRA?", counts) is None  # abstracts use it: answer
    assert names.unknown_name("What is FlexPrefill?", counts) is None  # a known name
    assert names.unknown_name("what is foobarnet?", counts) is None  # not shaped as a name
    assert names.unknown_name("How does FooBarNet compare with FlashMask?", counts) is None
    assert names.closest("FlexPrefil")[0] == "FlexPrefill"
    assert names.closest("DataMen")[0] == "DataMan"


def test_a_name_many_papers_use_names_none_of_them() -> None:
    papers = [paper("LLM: a model of language", pid="p0"), paper("CAKE: cache eviction", pid="p1")]
    users = [paper(f"Paper {i}", "An LLM bakes a cake.", f"u{i}") for i in range(20)]
    counts = {"llm": 21, "cake": 21}
    assert NameIndex.build(papers + users, counts).match("What is LLM?") is None
    # An ordinary word's use as a word says nothing about the name: CAKE stays CAKE's.
    assert NameIndex.build(papers + users, counts).match("What is CAKE?") is not None
    assert NameIndex.build(papers, {}).match("What is LLM?") is not None


def test_a_word_of_a_longer_head_names_its_paper_only_when_no_other_paper_writes_it() -> None:
    """ "kNN" of "kNN Attention Demystified" is a term two other abstracts write ("a
    size-insensitive kNN sampling"); "TetSphere" of "TetSphere Splatting" is coined."""
    papers = [
        paper("kNN Attention Demystified: A Theoretical Exploration", pid="knn"),
        paper("TetSphere Splatting: Representing Geometry", pid="tet"),
        paper("Graph retrieval", "We sample neighbours by kNN search.", "u1"),
        paper("RNA structures", "A size-insensitive K-nearest neighbor (kNN) sampling.", "u2"),
    ]
    names = NameIndex.build(papers, {})
    assert names.match("rna evaluation with a size-insensitive kNN sampling") is None
    assert names.match("explain knn attention demystified").paper_ids == ("knn",)  # type: ignore[union-attr]
    assert names.match("how does TetSphere represent geometry").paper_ids == ("tet",)  # type: ignore[union-attr]
    assert NameIndex.build(papers[:2], {}).match("a kNN sampling") is not None  # no one else


def test_an_abstract_defines_the_name_it_writes_twice_and_no_other_paper_writes() -> None:
    score = paper(
        "Training Language Models to Self-Correct via Reinforcement Learning",
        "We develop an RL approach, SCoRe, that improves self-correction. To build SCoRe, we "
        "first show that FlashSFT is insufficient. We score answers with FlashSFT baselines.",
        "s",
    )
    other = paper("A study of SFT", "FlashSFT alone, on a new score.", "o")
    once = paper("A tool", "We compare against GraCE on tasks.", "g")
    caps = paper("Low bits", "We quantize to INT4. INT4 kernels are fast.", "i")
    names = NameIndex.build([score, other, once, caps], {})
    match = names.match("Is SCoRe an oral?")
    assert match is not None and match.paper_ids == ("s",)
    assert names.match("how do we score answers?") is None  # an English word, as written only
    assert names.match("What is FlashSFT?") is None  # two papers write it: no one's name
    assert names.match("What is GraCE?") is None  # written once: used, not defined
    assert names.match("How is INT4 quantization done?") is None  # capitals: maybe a term


# A small real index --------------------------------------------------------------------------


def write_records(path: Path, titles: tuple[str, ...]) -> Path:
    records = [r for r in read_jsonl(CORPUS_JSONL) if r["title"].startswith(titles)]
    assert len(records) == len(titles)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory, embeddings: LocalEmbeddings) -> Assistant:
    folder = tmp_path_factory.mktemp("names")
    settings = make_settings(folder / "index")
    build_index(settings, [write_records(folder / "papers.jsonl", TITLES)], embeddings=embeddings)
    return open_assistant(settings, embeddings=embeddings)


def test_a_new_process_reads_the_saved_name_index_instead_of_every_title(
    small: Assistant, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = small.retriever.index
    built = PaperNames(index).current()  # saved with the BM25 index, if not already
    assert len(built) > 0
    # A fresh PaperNames is what a new process starts with; it must not read the papers back.
    monkeypatch.setattr(index, "all_papers", lambda: pytest.fail("rebuilt the name index"))
    assert PaperNames(index).current() == built
    # Another generation (a re-ingest) is not served the old names: they are built again.
    keyword = index.keyword_index()
    newer = KeywordIndex(None, [], [], "another-generation", keyword.term_counts)
    monkeypatch.setattr(index, "all_papers", lambda: [paper("FooNet: A Test", pid="foo")])
    assert PaperNames(index).current(newer).match("What is FooNet?") is not None


def cited_first(result: CitedAnswer) -> str:
    assert not result.abstained, result.answer
    assert result.citations, result.answer
    return result.citations[0].title


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("What is FlexPrefill?", FLEXPREFILL),
        ("Summarize FlexPrefill.", FLEXPREFILL),
        ("FlexPrefill 是什么？", FLEXPREFILL),
        ("介绍一下 flexprefill", FLEXPREFILL),
        ("What is CAKE?", CAKE),
        ("Summarize CAKE.", CAKE),
        ("What is MUSE?", "MUSE:"),
        ("What is ZETA?", "ZETA:"),
        ("What is DataMan?", "DataMan:"),
    ],
)
def test_the_named_paper_is_retrieved_and_cited_first(
    small: Assistant, question: str, title: str
) -> None:
    assert small.retriever.search(question, k=5)[0].paper.title.startswith(title)
    assert cited_first(answer(question, assistant=small)).startswith(title)


def test_what_is_x_quotes_only_the_named_paper(small: Assistant) -> None:
    """FlashMask's speedups are not quoted in an answer about FlexPrefill."""
    result = answer("What is FlexPrefill?", assistant=small)
    assert {c.title[:11] for c in result.citations} == {"FlexPrefill"}
    assert "FlashMask" not in result.answer


def test_search_for_one_name_puts_its_paper_first(small: Assistant) -> None:
    assert small.retriever.search("CAKE", k=5)[0].paper.title == CAKE
    assert small.retriever.search("CAKE", k=5, mode="keyword")[0].paper.title == CAKE


def test_an_unknown_name_is_said_to_be_unknown(small: Assistant) -> None:
    result = answer("What is FooBarNet?", assistant=small)
    assert result.abstained and not result.citations
    assert result.answer.startswith("No paper in the index is called FooBarNet.")
    zh = answer("DataMen 是什么？", assistant=small)
    assert zh.abstained and not zh.citations
    assert zh.answer.startswith("索引中没有名为 DataMen 的论文。")
    assert "索引中最接近的名称：" in zh.answer and "- DataMan: DataMan: Data Manager" in zh.answer


def test_ordinary_questions_are_not_taken_for_names(small: Assistant) -> None:
    """A question with no name is answered as before: no refusal by name, no forced paper."""
    result = answer("How can the KV cache be compressed for long contexts?", assistant=small)
    assert not result.answer.startswith("No paper in the index is called")
    assert small.retriever.names.named("How can the KV cache be compressed?") is None


# The whole corpus ----------------------------------------------------------------------------

NAMED_QUESTIONS = ROOT / "data" / "eval" / "named_questions.jsonl"


@pytest.mark.slow
def test_flexprefill_and_cake_on_the_corpus(corpus: Assistant) -> None:
    assert corpus.retriever.search("What is FlexPrefill?", k=5)[0].paper.title.startswith(
        FLEXPREFILL
    )
    assert cited_first(answer("What is FlexPrefill?", assistant=corpus)).startswith(FLEXPREFILL)
    assert cited_first(answer("FlexPrefill 是什么？", assistant=corpus)).startswith(FLEXPREFILL)
    assert corpus.retriever.search("CAKE", k=5)[0].paper.title == CAKE
    # Named by its whole title; the Token Statistics Transformer was summarised first.
    question = "Summarize how the Differential Transformer's attention mechanism works."
    assert cited_first(answer(question, assistant=corpus)) == "Differential Transformer"
    for question in ("What is MUSE?", "What is ZETA?", "What is ReBIND?"):
        name = subject(question)
        assert name is not None
        assert name.lower() in cited_first(answer(question, assistant=corpus)).lower()
    unknown = answer("What is FooBarNet?", assistant=corpus)
    assert unknown.abstained
    assert unknown.answer.startswith("No paper in the index is called FooBarNet.")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "start"),
    [("Is SCoRe an oral?", "Yes: its decision is Accept (Oral)."), ("What is SCoRe?", "Offline")],
)
def test_a_name_only_the_abstract_defines_names_its_paper(
    corpus: Assistant, question: str, start: str
) -> None:
    result = answer(question, assistant=corpus)
    assert result.answer.startswith(start), result.answer
    assert cited_first(result).startswith("Training Language Models to Self-Correct")


@pytest.mark.slow
def test_named_question_set_on_the_corpus(corpus: Assistant) -> None:
    """data/eval/named_questions.jsonl: the named paper first (the targets of issue 20)."""
    rows = read_jsonl(NAMED_QUESTIONS)
    hits: dict[str, list[bool]] = {"named": [], "named-zh": []}
    for row in rows:
        top = corpus.retriever.search(row["question"], k=5)[0].paper.abstract
        hits[row["kind"]].append(any(g in " ".join(top.split()) for g in row["gold"]))
    assert sum(hits["named"]) / len(hits["named"]) >= 0.97
    assert sum(hits["named-zh"]) / len(hits["named-zh"]) >= 0.95


# Issue 29, item 2: a named paper retrieval put first is answered from it, in any phrasing.
PHRASED = {
    "explain bodygen in simple terms": "BodyGen",
    "I saw a poster on SymmCD - what's the main result?": "SymmCD",
    "MR-GSM8K 这篇论文解决了什么问题？": "MR-GSM8K",
    "FlexPrefill 的方法是什么？": "FlexPrefill",
    "DarkBench 是谁提出的？": "DarkBench",
    "tldr OpenMathInstruct-2 pls": "OpenMathInstruct-2",  # TLDR is a paper's name too
    "Century针对的是什么问题": "Century",  # an English word, as a name in a Chinese sentence
}


@pytest.mark.slow
def test_a_paper_named_by_its_title_or_head_is_answered_alone(corpus: Assistant) -> None:
    # "differential" is no "differ": the question asks about one paper, not a comparison.
    result = answer(
        "what is the main contribution of the differential transformer", assistant=corpus
    )
    assert [c.title for c in result.citations] == ["Differential Transformer"]
    who = answer("who wrote Block Diffusion?", assistant=corpus)
    assert [c.title[:16] for c in who.citations] == ["Block Diffusion:"]
    assert "Aaron Gokaslan" in who.answer  # from the paper's record: its authors
    zh = answer("谁写了 Block Diffusion 这篇论文？", assistant=corpus)
    assert "Aaron Gokaslan" in zh.answer and zh.answer.startswith("以下信息来自索引中的论文记录")


@pytest.mark.slow
@pytest.mark.parametrize("question", list(PHRASED))
def test_a_named_paper_is_answered_in_any_phrasing(corpus: Assistant, question: str) -> None:
    assert corpus.retriever.search(question, k=5)[0].paper.title.startswith(PHRASED[question])
    result = answer(question, assistant=corpus)
    assert not result.abstained, result.answer
    assert cited_first(result).startswith(PHRASED[question])


@pytest.mark.slow
def test_a_question_with_its_own_subject_is_not_joined_to_the_chat(corpus: Assistant) -> None:
    """Turn 4 of a chat, "Summarize the paper on ...", was joined to turn 3 and refused;
    asked in a new chat it was answered. It is now the same answer either way."""
    history: list[dict[str, str]] = []
    previous = None
    for question in ("What does the KAN paper propose?", "and what does it compare against?"):
        previous = answer(question, history, assistant=corpus, previous=previous)
        history += [{"role": "user", "content": question}]
        history += [{"role": "assistant", "content": previous.answer}]
    question = "Summarize the paper on masked diffusion models scaling laws"
    in_chat = answer(question, history, assistant=corpus, previous=previous)
    alone = answer(question, assistant=corpus)
    assert in_chat.standalone_question == question and not in_chat.abstained
    assert [c.paper_id for c in in_chat.citations] == [c.paper_id for c in alone.citations]
    # A short pronoun follow-up still joins the question before it.
    assert "KAN" in offline_standalone("and how fast is it?", [("user", "What is KAN?")])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("Which benchmarks is COPER tested on?", "COPER"),  # a list of the paper's own things
        ("How did the authors evaluate RobustKV?", "RobustKV"),
        ("ALLaM 用了什么数据集？", "ALLaM"),
    ],
)
def test_a_question_about_the_named_paper_quotes_that_paper_alone(
    corpus: Assistant, question: str, name: str
) -> None:
    """Other papers on the topic are not what was asked (they were quoted beside it)."""
    result = answer(question, assistant=corpus)
    assert {c.title.split(":")[0] for c in result.citations} == {name}, result.answer


@pytest.mark.slow
def test_a_list_of_other_papers_around_a_name_stays_a_list(corpus: Assistant) -> None:
    result = answer("Which papers compress the KV cache like ThinK?", assistant=corpus)
    assert len({c.paper_id for c in result.citations}) >= 2


def test_what_a_named_paper_does_is_its_summary_with_the_sentence_that_names_it(
    corpus: Assistant,
) -> None:
    """In the page "what does ward do" was answered by one result sentence ("Ward consistently
    outperforms all baselines"); the abstract's "we propose Ward, a method for RAG-DI" was
    skipped, and a summary's method line took the first contribution (a dataset) instead."""
    for question in ("what does ward do", "explain ward"):
        result = answer(question, assistant=corpus)
        assert [c.paper_id for c in result.citations][:1] == [result.sources[0].paper.id]
        assert result.sources[0].paper.title.startswith("Ward:")
        assert "we propose Ward, a method for RAG-DI" in result.answer
        assert "Problem:" in result.answer and "Result:" in result.answer
