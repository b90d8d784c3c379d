"""How a question asks for a paper without an abstract (bench.conference_eval.how_asked): read
from the question and the title alone, so that issue 30's target ("asked by name or exact
title") is measured on the questions it names."""

from __future__ import annotations

from bench.conference_eval import how_asked

KAN = "KAN: Kolmogorov–Arnold Networks"


def test_the_exact_title_in_any_case_or_punctuation() -> None:
    assert how_asked("what does 'kan - kolmogorov arnold networks' propose?", KAN) == "title"
    assert how_asked("Tell me about KAN: Kolmogorov-Arnold Networks", KAN) == "title"


def test_the_name_as_whole_words() -> None:
    assert how_asked("What does the KAN paper propose?", KAN) == "name"
    assert how_asked("KAN 这篇论文提出了什么？", KAN) == "name"
    assert how_asked("kankan networks?", KAN) == "described"  # not the name as a word


def test_a_title_without_a_name_is_asked_by_its_whole_title_only() -> None:
    title = "Safety Layers in Aligned Large Language Models"
    assert how_asked("the safety layers paper, what do they claim?", title) == "described"
    assert how_asked("safety layers in aligned large language models?", title) == "title"


def test_a_paraphrase_is_described() -> None:
    assert how_asked("a paper on networks with learnable activations on edges", KAN) == "described"
