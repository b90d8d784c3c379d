"""A refusal's closest papers are chosen by meaning, not by an ordinary word of the question
(issue 23: "what's hot in ML this year?" named *Hot-pluggable Federated Learning*)."""

from __future__ import annotations

from rag.answer.refusal import nearest_by_meaning
from rag.types import Paper, RetrievedPaper


def hit(title: str, abstract: str, dense: int | None, keyword: int | None) -> RetrievedPaper:
    paper = Paper(id=title[:8], title=title, abstract=abstract)
    return RetrievedPaper(paper, 0.4, 0.21, dense_rank=dense, keyword_rank=keyword)


def test_a_keyword_hit_on_an_ordinary_word_is_not_named_first() -> None:
    hot = hit("Hot-pluggable Federated Learning", "Plug modules in hot.", None, 0)
    forecast = hit("ForecastBench: AI forecasting", "Forecasts this year.", 38, 1)
    found = nearest_by_meaning("what's hot in ML this year?", [hot, forecast])
    assert [r.paper.title for r in found.named] == [forecast.paper.title]
    assert found.ordered == [forecast, hot]  # the sources keep every paper, named ones first


def test_a_keyword_hit_on_a_rare_term_still_counts() -> None:
    rare = hit("Tokamak plasma control", "Tokamak control by RL.", None, 0)
    found = nearest_by_meaning("which papers control a tokamak this year?", [rare])
    assert found.named == [rare]
