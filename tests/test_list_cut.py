"""Where list answers stop (rag.answer.judge.listed), on the bundled corpus and the real model."""

from __future__ import annotations

import re

import pytest

from rag.answer.judge import Judged, Verdict, kept, subject_shares, verdict_fields
from rag.answer.pipeline import Assistant, answer
from rag.cli.main import main
from rag.lang.intent import read_question, understand
from rag.lang.question_kind import is_list_request, list_subject
from rag.settings import Settings
from rag.types import OFFLINE_MODEL, Paper, RetrievedPaper

FLEXPREFILL = "OfjIlbelrT"
BLOCK_DIFFUSION = "tyEyYT267x"
REPA = "DJSZGGZYVi"  # Representation Alignment for Generation (image diffusion)
DIAGONAL_COVARIANCE = "fV0t65OBUu"  # Optimal Diagonal Covariance Matching (diffusion models)
SHEPHERD = "KSLkFYHlYg"  # ShEPhERD: diffusing shape ... for bioisosteric drug design
REEF = "SnDmPkOJ0T"  # REEF: Representation Encoding Fingerprints for LLMs


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("Which papers propose benchmarks for web browsing agents?", "benchmarks for web"),
        ("Any work on watermarking the outputs of generative models?", "watermarking the"),
        ("Are there papers that prune the KV cache?", "prune the KV cache?"),
        ("List papers that quantize the weights of LLMs", "quantize the weights"),
        ("What is new in speculative decoding?", "speculative decoding?"),
        ("Which papers?", "Which papers?"),  # nothing after the frame: the whole question
    ],
)
def test_the_list_subject_is_what_follows_the_frame(question: str, subject: str) -> None:
    assert list_subject(question).startswith(subject)


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("I need papers on model compression, can you list some?", "model compression"),
        ("papers on music generation, please", "music generation"),
        # a clause that names a topic stays
        ("Which papers study sycophancy, i.e. models agreeing with the user?",
         "sycophancy, i.e. models agreeing with the user?"),
    ],
)  # fmt: skip
def test_the_list_subject_ends_before_the_words_that_only_ask(question: str, subject: str) -> None:
    assert list_subject(question) == subject


@pytest.mark.slow
def test_a_list_inside_a_longer_sentence_is_answered_on_its_subject(corpus: Assistant) -> None:
    question = "my boss asked me to find papers on model compression, can you list some?"
    result = answer(question, assistant=corpus)
    assert not result.abstained and result.citations, result.answer
    abstracts = {s.paper.id: s.paper.abstract.lower() for s in result.sources}
    assert all("compress" in abstracts[c.paper_id] for c in result.citations)


@pytest.mark.parametrize(
    ("question", "is_list"),
    [
        ("哪些论文压缩或量化KV缓存？", True),
        ("有哪些关于状态空间模型的论文？", True),
        ("列出一些关于联邦学习的论文", True),
        ("FlexPrefill 是什么？", False),
        ("这篇论文的方法是什么？", False),
        ("亮点论文里有哪些关于视频生成的？", True),  # "among the spotlights, which are on X"
        ("mixture of experts papers", True),  # a topic, then "papers"
        ("any good RLHF papers?", True),
        ("summarize these papers", False),  # a follow-up's papers
        ("I'm into RL for LLM reasoning, what should I read?", True),
        ("recommend some good papers on KV cache", True),
        ("im looking for orals and spotlights about RLHF", True),
        ("got lost at the posters... which papers are on web agents?", True),
        ("mamba 之后的新工作，求推荐", True),
        ("point me to work on KV cache compression", True),
        ("papers related to diffusion policies", True),
        ("what's out there on speculative decoding?", True),
        ("are there orals about RLHF", True),
        ("哪几篇论文研究了扩散模型？", True),
        ("给我几篇强化学习的论文", True),  # "a few papers", not a count
        ("这篇论文用了哪些数据集？", False),  # what one paper used
        ("anything on MUSE", False),  # a paper's name: asked about, not listed
        ("compare the two papers", False),
        ("这篇论文中有哪些实验？", False),  # what one paper holds
        # after a preamble set off by a comma, a colon or a dash
        ("i work on protein design — which papers should i look at?", True),
        ("thanks. now, what papers are there on model merging?", True),
        ("Quick one: which posters are about tabular data?", True),
        ("In FlexPrefill, which methods are compared?", False),  # asks about one paper
    ],
)
def test_chinese_list_questions_are_lists(question: str, is_list: bool) -> None:
    assert is_list_request(question) is is_list


def test_a_list_stops_where_its_subject_stops(corpus: Assistant) -> None:
    question = "Which papers make attention cheaper for long sequences?"
    result = answer(question, assistant=corpus, k=10)
    cited = [c.paper_id for c in result.citations]
    # A paraphrase of FlexPrefill's subject (its abstract says neither "cheaper" nor
    # "sequences") is kept by its closeness to the subject; papers about neither go.
    assert FLEXPREFILL in cited
    assert len(cited) < len(result.sources) == 10
    # More candidates were checked than the sources setting shows (the title records closest
    # to the question too); those cited come first.
    calibration = corpus.retriever.calibration
    assert 10 < calibration.list_pool < result.checked
    assert result.checked <= calibration.list_pool + calibration.list_records
    assert [c.n for c in result.citations] == list(range(1, len(cited) + 1))


def retrieved(pid: str, abstract: str) -> RetrievedPaper:
    return RetrievedPaper(Paper(id=pid, title=pid, abstract=abstract), 1.0, 1.0)


def test_the_subjects_terms_weigh_as_much_as_the_leading_papers_hold_them() -> None:
    sources = [
        retrieved("a", "Machine unlearning for language models."),
        retrieved("b", "We evaluate unlearning."),
        retrieved("c", "A benchmark of machine translation."),
    ]
    shares = subject_shares("evaluate machine unlearning", sources, lambda t: 1.0, lead=2)
    # "unlearning" is held by both leading papers, "machine" and "evaluate" by one each.
    assert shares == [0.75, 0.75, 0.25]


def test_a_filtered_list_weighs_its_subject_by_the_papers_found_without_the_filter() -> None:
    orals = [
        retrieved("a", "Diffusion language models for text."),
        retrieved("b", "Diffusion models for images."),
        retrieved("c", "Diffusion transformers."),
    ]
    leaders = [retrieved(p, "A diffusion language model.") for p in "xyz"]
    alone = subject_shares("diffusion language model", orals, lambda t: 1.0, lead=3)
    weighed = subject_shares("diffusion language model", orals, lambda t: 1.0, 3, leaders)
    # The orals alone rarely hold "language", so it weighs little, as phrasing would; the
    # papers on the subject all hold it, and an oral without it covers half the subject.
    assert (alone[1], weighed[1]) == (0.75, 0.5)
    assert weighed[0] == 1.0


def test_a_phrase_of_the_subject_is_held_only_where_its_words_stand_together() -> None:
    sources = [
        retrieved("a", "Model merging combines fine-tuned models."),
        retrieved("b", "Watermarked LLMs and model merging."),  # either order holds a pair
        retrieved("c", "A diffusion model for bioisosteric fragment merging."),
    ]
    plain = subject_shares("model merging", sources, lambda t: 1.0, lead=2)
    phrased = subject_shares("model merging", sources, lambda t: 1.0, 2, (), ["model merg"])
    # "model" is a word every abstract uses: alone, "merging" anywhere is the whole subject.
    assert plain == [1.0, 1.0, 1.0]
    assert phrased == [1.0, 1.0, 0.5]
    reversed_pair = subject_shares(
        "LLM watermarking", sources[1:2], lambda t: 1.0, 1, (), ["llm watermark"]
    )
    assert reversed_pair == [1.0]


def test_a_two_letter_acronym_of_the_subject_is_a_term_written_or_spelled_out() -> None:
    sources = [
        retrieved("a", "Reinforcement learning for LLM reasoning."),
        retrieved("b", "Aligning LLMs with RL from human feedback."),
        retrieved("c", "An LLM evaluation benchmark."),
    ]
    # "RL" is too short for a term: alone, "LLM" was the whole subject.
    assert subject_shares("RL for LLMs", sources, lambda t: 1.0, lead=2) == [1.0, 1.0, 0.5]
    # "KV cache" already says "cache": the acronym adds nothing to weigh.
    kv = [retrieved("a", "KV cache compression."), retrieved("b", "Cache eviction.")]
    assert subject_shares("KV cache", kv, lambda t: 1.0, lead=2) == [1.0, 1.0]


def test_a_tier_list_on_rl_for_llms_names_papers_on_both(corpus: Assistant) -> None:
    result = answer("spotlights on RL for LLMs", assistant=corpus, k=10)
    cited = [result.sources[c.n - 1].paper for c in result.citations]
    assert cited and {p.tier for p in cited} == {"Spotlight"}
    for paper in cited:  # SYMPOL (tree-based RL), Mixture-of-Agents (no RL) were listed
        text = f"{paper.title} {paper.abstract}"
        assert re.search(r"\bRL|reinforcement learning|reward", text, re.I), paper.title
        assert re.search(r"LLM|language model", text, re.I), paper.title


def test_a_tier_list_names_only_what_writes_its_subject(corpus: Assistant) -> None:
    result = answer("oral papers on model merging", assistant=corpus, k=10)
    cited = {result.sources[c.n - 1].paper.id for c in result.citations}
    # ShEPhERD (drug design) writes "diffusion model" and "fragment merging"; REEF's
    # fingerprints survive "model merging".
    assert REEF in cited and SHEPHERD not in cited


def test_a_tier_list_names_only_the_papers_on_its_subject(corpus: Assistant) -> None:
    result = answer("oral papers on difusion language models", assistant=corpus, k=10)
    cited = [result.sources[c.n - 1].paper for c in result.citations]
    assert {p.tier for p in cited} == {"Oral"}
    assert cited[0].id == BLOCK_DIFFUSION
    # Orals about image diffusion alone were listed when the orals set the subject's terms.
    assert not {REPA, DIAGONAL_COVARIANCE} & {p.id for p in cited}
    assert result.checked > len(cited)


def test_the_cli_says_how_it_read_the_question_in_whole_sentences(
    corpus_settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    index = ["--index", str(corpus_settings.store.index_dir), "--config", "offline"]
    assert main(["ask", "oral papers on difusion language models", *index]) == 0
    *_, answered, notes = capsys.readouterr().out.rstrip("\n").splitlines()
    assert answered == f"(answered by {OFFLINE_MODEL})"
    assert notes.startswith("Filtered by the tier the question names: Oral. Read ")
    assert re.search(r"\. Checked the \d+ papers retrieved; \d+ match the question", notes)


def test_a_tier_noun_makes_a_list_and_every_paper_judged_to_belong_is_listed(
    corpus: Assistant,
) -> None:
    for question in ("what are the orals about LLM agents?", "关于模型合并的口头报告有哪些？"):
        assert understand(question).listing, question
    result = answer("what are the orals about LLM agents?", assistant=corpus, k=10)
    cited = [result.sources[c.n - 1].paper for c in result.citations]
    assert {p.tier for p in cited} == {"Oral"}
    # A list names each paper the judge kept, not the three an answer quotes at most.
    assert len(cited) == result.matched > 3


def test_a_chinese_tier_list_keeps_its_frame_and_its_subject() -> None:
    intent = understand("哪些口头报告论文研究扩散语言模型？")
    assert intent.asked.tiers == ("Oral",)
    assert intent.search == "哪些论文研究扩散语言模型？"  # no gap where the tier word was
    assert intent.listing and intent.subject == "diffusion language model"
    spotlights = understand("亮点论文里有哪些关于视频生成的？")
    assert spotlights.listing and spotlights.asked.tiers == ("Spotlight",)


def test_a_list_keeps_the_papers_that_belong_first_up_to_k() -> None:
    sources = [retrieved(pid, "") for pid in "abcde"]
    flags = (True, False, True, False, True)
    verdict = Verdict(
        tuple(Judged(s.paper.id, f, 0.5, "") for s, f in zip(sources, flags, strict=True)),
        answers=True,
        by="offline",
    )
    shown, narrowed = kept(verdict, sources, 4)
    assert [s.paper.id for s in shown] == ["a", "c", "e", "b"]
    assert narrowed.belongs == (True, True, True, False)
    assert (narrowed.checked, narrowed.matched) == (5, 3)
    shown, fewer = kept(verdict, sources, 2)  # more belong than are shown: the note says so
    assert (fewer.matched, fewer.matching) == (2, 3)
    fields = verdict_fields(fewer, understand("Which papers study X?"), "Which papers study X?")
    assert fields["matched"] == 3
    assert fields["judge_note"].endswith(
        "3 match the question (judged offline). The first 2 are shown."
    )


@pytest.mark.parametrize(
    ("question", "number"),
    [
        ("summarize 3 papers on watermarking", 3),
        ("top five recent orals on RLHF", 5),
        ("I need, like, 4 papers on RL", 4),
        ("推荐三篇关于扩散模型的论文", 3),
        ("前5篇关于强化学习的论文", 5),
        ("Which Llama 3 papers study safety?", 0),  # a model's version
        ("what are the 3D gaussian splatting papers", 0),
        ("how many papers on RLHF?", 0),
        ("I remember one paper on KV cache eviction", 0),  # "a paper"
        ("有没有一篇论文讲这个？", 0),
        ("give me a dozen papers on sparse autoencoders", 12),
        ("oral papers on diffusion models? give me seven", 7),  # said apart from the noun
        ("which papers are on LLM agents for web navigation? 3 is enough", 3),
    ],
)
def test_the_number_of_papers_asked_for_is_read(question: str, number: int) -> None:
    assert read_question(question).number == number


def test_a_list_shows_the_number_of_papers_asked_for(corpus: Assistant) -> None:
    result = answer("summarize 3 papers on watermarking", assistant=corpus, k=10)
    assert len(result.citations) == len(result.sources) == 3
    assert result.matched > 3 and result.judge_note.endswith("The first 3 are shown.")
    zh = answer("推荐三篇关于模型水印的论文", assistant=corpus)
    assert len(zh.citations) == 3 and zh.judge_note.endswith("这里列出前 3 篇。")


def test_a_chinese_list_question_gets_a_list(corpus: Assistant) -> None:
    result = answer("哪些论文压缩或量化KV缓存？", assistant=corpus, k=10)
    # One line per relevant paper (an answer quotes 3 at most), each about the KV cache.
    assert len(result.citations) > 3
    titles = [result.sources[c.n - 1].paper.title for c in result.citations]
    assert sum("KV" in t or "Cache" in t for t in titles) >= 4


def test_a_single_paper_question_is_untouched(corpus: Assistant) -> None:
    result = answer("What is FlexPrefill?", assistant=corpus, k=10)
    assert result.citations[0].paper_id == FLEXPREFILL and result.citations[0].n == 1


@pytest.mark.parametrize(
    ("question", "focus"),
    [
        # a preamble that holds no topic is left out of what the list is judged on
        (
            "I was looking at the poster session schedule and got lost... which papers are "
            "on LLM agents for web navigation? 3 is enough",
            "which papers are on LLM agents for web navigation?",
        ),
        # ... but kept when the list's own sentence names no topic or points back at it
        (
            "I work on protein design. Which papers should I read?",
            "I work on protein design. Which papers should I read?",
        ),
        (
            "I study vision transformers - which papers improve their efficiency?",
            "I study vision transformers - which papers improve their efficiency?",
        ),
    ],
)
def test_a_list_after_a_preamble_is_judged_on_its_own_sentence(question: str, focus: str) -> None:
    intent = understand(question)
    assert intent.kind == "list" and intent.focus == focus
    assert "enough" not in intent.search  # how many, not what about


def test_a_list_after_a_chatty_preamble_is_answered(corpus: Assistant) -> None:
    result = answer(
        "I was looking at the poster session schedule and got lost... which papers are on "
        "LLM agents for web navigation? 3 is enough",
        assistant=corpus,
    )
    assert not result.abstained and len(result.citations) == 3
    titles = [result.sources[c.n - 1].paper.title for c in result.citations]
    assert all("Web" in t or "Agent" in t for t in titles), titles


def test_a_few_papers_asked_for_is_no_count() -> None:
    assert understand("给我几篇强化学习的论文").kind == "list"  # give me a few
    assert understand("哪几篇论文研究了扩散模型？").kind == "list"  # which
    assert understand("有几篇论文研究扩散模型？").kind == "count"  # how many are there
    assert understand("how many orals are there on RLHF").kind == "count"


@pytest.mark.parametrize("question", ["列出关于强化学习推理的论文", "列举一些关于扩散模型的论文"])
def test_a_chinese_list_verb_is_the_frame_not_the_subject(question: str) -> None:
    """ "列出" glossed as "list make a list" was searched and judged as the list's subject."""
    intent = understand(question)
    assert intent.listing
    assert "list" not in intent.subject.split() and "list" not in intent.english.split()
