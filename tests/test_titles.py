"""A title record asked by its title's words (rag.retrieval.titles): its head, its subtitle or a
run of its title lifts it; a topical question that shares a few of its words does not.

No index: the titles of a handful of papers, and the abstracts' term counts of a corpus the
size of the bundled one (rarity is measured over both).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from rag.retrieval.titles import TitleIndex, _checked, title_parts, title_words
from rag.types import Paper

RECORDS = {  # title records: no abstract
    "mesh": "Dynamic Gaussians Mesh: Consistent Mesh Reconstruction from Dynamic Scenes",
    "songs": "SONICS: Synthetic Or Not - Identifying Counterfeit Songs",
    "mmd": "Deep MMD Gradient Flow without adversarial training",
    "survey": "Diffusion Models: A Survey of Guidance and Sampling",
    "decisions": "On the Modeling Capabilities of Large Language Models for Sequential "
    "Decision Making",
    "o2o": "Online-to-Offline RL for Agent Alignment",
    "tokens": "Tokenization Robustness in Language Models",
    "kaa": "KAA: Kolmogorov-Arnold Attention for Enhancing Attentive Graph Neural Networks",
    "teleport": "Scalable Decentralized Learning with Teleportation",
    "persona": "Personality Alignment of Large Language Models",
    "framer": "Framer: Interactive Frame Interpolation",
    "snn": "Temporal Flexibility in Spiking Neural Networks: Towards Generalization Across Time "
    "Steps and Deployment Friendliness",
    "perturb": "Contextualizing biological perturbation experiments through language",
    "rectified": "Rectified Diffusion: Straightness Is Not Your Need in Rectified Flow",
}
WITH_ABSTRACT = {
    "dit": "Scalable Diffusion Models with Transformers",
    "gans": "Diffusion Models Beat GANs on Image Synthesis",
    "flow": "Gradient Flow of the Maximum Mean Discrepancy",
    "robust": "Tokenization Robustness in Language Models Revisited",
    "decide": "Transformers for Sequential Decision Making",
}
# How many of 5,000 abstract chunks hold each word (the keyword index's term counts).
COUNTS = {
    "diffus": 600, "model": 3000, "guidanc": 40, "sampl": 300, "survey": 30, "sequenti": 40,
    "decis": 60, "make": 200, "larg": 900, "languag": 900, "capabl": 150, "gradient": 300,
    "flow": 200, "deep": 500, "mmd": 4, "adversari": 150, "train": 1500, "dynam": 300,
    "gaussian": 60, "mesh": 15, "scene": 80, "onlin": 100, "offlin": 60, "rl": 150,
    "agent": 200, "align": 150, "token": 300, "robust": 250, "identifi": 150, "song": 2,
    "identif": 150, "poster": 30, "heard": 5,
    "kolmogorov": 5, "arnold": 5, "attent": 700, "enhanc": 1500, "graph": 300, "neural": 900,
    "network": 900, "scalabl": 100, "decentr": 20, "learn": 2500, "teleport": 1,
    "person": 60, "interact": 200, "frame": 100, "interpol": 30, "beat": 40, "gat": 10,
    "counterfeit": 0, "generat": 900, "video": 200, "reconstruct": 60, "consist": 200,
    "tempor": 150, "flexibl": 60, "spike": 20, "toward": 300, "general": 800, "across": 600,
    "time": 900, "step": 400, "deploy": 100, "friendli": 10,
    "contextu": 10, "biolog": 40, "perturb": 50, "experi": 900, "through": 900, "rectifi": 20,
    "straight": 8, "your": 15, "need": 300, "say": 100, "claim": 100,
    "llm": 400, "reason": 500, "matter": 200, "instead": 300, "you": 50,
}  # fmt: skip


@dataclass
class Terms:  # the two attributes of KeywordIndex that the rarity reads
    term_counts: dict[str, int] = field(default_factory=lambda: dict(COUNTS))
    chunk_ids: list[str] = field(default_factory=lambda: [""] * 5000)


@pytest.fixture(scope="module")
def index() -> TitleIndex:
    papers = [Paper(id=k, title=t, abstract="") for k, t in RECORDS.items()]
    papers += [Paper(id=k, title=t, abstract="An abstract.") for k, t in WITH_ABSTRACT.items()]
    return TitleIndex.build(papers)


@pytest.mark.parametrize(
    ("question", "record"),
    [
        ("Dynamic Gaussians Mesh paper", "mesh"),  # the head, no name
        ("What does dynamic gaussians mesh propose?", "mesh"),
        ("identifying counterfeit songs - what did they do?", "songs"),  # a part after " - "
        ("I heard about counterfeit song identification at a poster", None),  # not its words
        ("deep MMD gradient flow", "mmd"),  # a cut title: a run of four words
        ("deep MMD gradient flow training", "mmd"),  # four in a row, and one further on
        ("online to offline rl for agent alignment", "o2o"),  # hyphens, case
        ("ONLINE-TO-OFFLINE RL FOR AGENT ALIGNMENT?", "o2o"),
        ("Consistent mesh reconstruction from dynamic scenes", "mesh"),  # the subtitle
        # A question in parts: its first part asks for the title, the rest asks about it.
        ("kolmogorov-arnold attention for graph neural networks - does it beat GAT?", "kaa"),
        # British spelling; a typing slip in a title word (one letter, no other word as near).
        ("scalable decentralised learning with teleportation", "teleport"),
        ("decentralized learning with teleportation", "teleport"),  # three of its four words
        ("it was called personality alignment of large languge models", "persona"),
        # A long title quoted from memory: a word missed or said another way, a word between.
        (
            "that paper on contextualizing biological perturbation experiments with language "
            "/ LLM reasoning - which one was it?",
            "perturb",
        ),
        (
            "rectified diffusion says straightness is not what you need in rectified flow?",
            "rectified",
        ),
        # A Chinese question quotes the head's first words; its gloss says the rest.
        (
            "好像叫 Temporal Flexibility 的那篇脉冲神经网络论文，"
            "讲的是不同 time step 之间的泛化吗？",
            "snn",
        ),
    ],
)
def test_a_record_asked_by_its_titles_words_is_found(
    index: TitleIndex, question: str, record: str | None
) -> None:
    assert index.asked(question, Terms()) == ([record] if record else [])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "question",
    [
        "papers on diffusion models",  # the head of a record, and of papers with an abstract
        "What is new in diffusion models?",
        "diffusion models",
        "sequential decision making with language models",  # a topic, three words of a title
        "gradient flow",  # a run of two common words, in another paper's title too
        "tokenization robustness in language models",  # a paper with an abstract holds it too
        "How do diffusion models generate video with guidance?",  # more than the title's words
        "diffusion models - what is new?",  # a part that is a topic
        "graph neural networks: which ones beat GAT?",
        "decentralized learning",  # two of its four words
        "biological perturbation experiments with language models",  # two of its words missed
        "脉冲神经网络在不同 time step 上怎么泛化？",  # a topic: its gloss is no title's part
    ],
)
def test_a_topical_question_does_not_lift_a_record(index: TitleIndex, question: str) -> None:
    assert index.asked(question, Terms()) == []  # type: ignore[arg-type]


def test_a_persons_name_is_not_read_as_a_mistyped_title_word(index: TitleIndex) -> None:
    """ "tramer" is one slip from "framer", but it is the person retrieval found
    (rag.retrieval.people), whose words are no title's."""
    question = "Florian Tramer frame interpolation papers"
    assert index.asked(question, Terms(), "florian tramer") == []  # type: ignore[arg-type]
    assert index.asked(question, Terms()) == ["framer"]  # type: ignore[arg-type]


def test_a_title_is_read_in_parts_without_splitting_a_hyphenated_name() -> None:
    assert title_parts("KAN: Kolmogorov–Arnold Networks") == [
        ["kan", "kolmogorov", "arnold", "network"],
        ["kan"],
        ["kolmogorov", "arnold", "network"],
    ]
    assert title_words("Tramèr's Shh, don't!") == title_words("tramer s shh don t")


def test_a_saved_title_index_of_another_shape_is_not_used(index: TitleIndex) -> None:
    good = {"ids": index.ids, "parts": index.parts, "records": sorted(index.records)}
    assert _checked(good) is not None
    assert _checked({**good, "ids": index.ids[:-1]}) is None
    assert _checked({**good, "parts": [[["a", 1]]] * len(index.ids)}) is None
    assert _checked(None) is None and _checked({"ids": "x"}) is None


def test_a_framing_word_the_title_holds_counts_as_the_titles() -> None:
    """ "contribute" frames a question ("what did they contribute?") but is this title's
    word: dropped from the question, the rest covered too little of the title to lift it."""
    titles = {"early": "Earlier Tokens Contribute More: Learning Direct Preference Optimization"}
    papers = [Paper(id=k, title=t, abstract="") for k, t in titles.items()]
    papers += [Paper(id=k, title=t, abstract="An abstract.") for k, t in WITH_ABSTRACT.items()]
    index = TitleIndex.build(papers)
    counts = {**COUNTS, "earlier": 40, "contribut": 400, "more": 900}
    question = "What does Earlier Tokens Contribute More propose?"
    assert index.asked(question, Terms(term_counts=counts)) == ["early"]  # type: ignore[arg-type]


def test_an_acronyms_plural_is_the_acronym() -> None:
    """ "VOILA 这个评测 MLLM 类比推理的论文" names VOILA, whose title says "MLLMs"."""
    from rag.retrieval.titles import title_words

    assert title_words("Evaluation of MLLMs and GNNs") == title_words("evaluation of MLLM, GNN")
    assert "mllm" in title_words("VOILA: Evaluation of MLLMs For Perceptual Understanding")
    assert title_words("GANs") == title_words("GAN") != title_words("Gas")


@pytest.mark.parametrize(
    ("question", "paper"),
    [
        ('explain "Scalable Diffusion Models with Transformers"', "dit"),  # one with an abstract
        ("what does “Diffusion Models Beat GANs” find?", "gans"),  # its opening words
        ("《Gradient Flow of the Maximum Mean Discrepancy》讲了什么？", "flow"),
        ("tl;dr of 'Consistent Mesh Reconstruction from Dynamic Scenes' pls", "mesh"),  # a part
        ('what does "Tokenization Robustness in Language Models" show?', None),  # two titles
        ('papers on "diffusion models"', None),  # two words: a topic, not a title
        ("what's the paper's 'main result'?", None),
        # unquoted, a title's head written out whole
        ("what did consistent mesh reconstruction from dynamic scenes find", None),  # a subtitle
        ("explain the idea behind Dynamic Gaussians Mesh", "mesh"),
        ("diffusion models beat gans on image synthesis?", None),  # no head: not unquoted
    ],
)
def test_a_quoted_title_names_its_paper(
    index: TitleIndex, question: str, paper: str | None
) -> None:
    assert index.quoted(question) == ([paper] if paper else [])
