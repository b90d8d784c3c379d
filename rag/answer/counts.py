""" "How many papers on Y?": a count, the rule it counts by, and the papers, from the index.

A paper counts when its title or abstract contains every content word of the question's topic
(stemmed, as BM25 reads words). The rule is said in the answer, with how many papers have a
title only (no abstract in the corpus), since for them only the title can match. A tier the
question names ("how many orals on Y") filters the count like the sidebar, and the answer
counts among that tier's papers ("15 of the 380 Spotlight papers").
"""

from __future__ import annotations

from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import CitedAnswer
from rag.answer.markers import inert_markers
from rag.answer.records import record_line, records_cited
from rag.common.similarity import terms
from rag.lang.gloss import english_query
from rag.lang.intent import Asked, words
from rag.lang.messages import message, question_language
from rag.types import Filters, RetrievedPaper

MAX_LISTED = 50  # titles listed after the cited ones; the rest is counted


def topic_terms(asked: Asked) -> set[str]:
    """The stemmed content words of the count question's topic."""
    frame = terms(" ".join(words()["words"]["count_frame"]))
    return terms(english_query(asked.search)) - frame


def count_answer(
    turn: Turn, asked: Asked, filters: Filters, assistant: Assistant
) -> CitedAnswer | None:
    """The count answer, or None when the question names no topic to count."""
    topic = topic_terms(asked)
    if not topic:
        return None
    question = turn.question
    # Counted among the papers the filter lets through ("how many spotlights on Y": 15 of
    # the 380 Spotlight papers), and said so.
    papers = [p for p in assistant.retriever.index.all_papers() if filters.accepts(p)]
    tiers = " / ".join(filters.tiers)
    which = (
        "" if not tiers else f" {tiers} " if question_language(question) == "zh" else f"{tiers} "
    )
    matching = [p for p in papers if topic <= terms(f"{p.title}\n{p.abstract}")]
    rank = {s.paper.id: i for i, s in enumerate(turn.sources)}
    matching.sort(key=lambda p: (rank.get(p.id, len(rank)), p.title.casefold()))
    k = assistant.settings.retrieval.k
    cited = [RetrievedPaper(p, 0.0, 0.0) for p in matching[:k]]
    titles_only = sum(not p.has_abstract for p in papers)
    lines = [
        message("count", question).format(n=len(matching), total=len(papers), which=which),
        message("count_rule", question).format(words=", ".join(sorted(topic))),
        message("count_titles", question).format(m=titles_only, total=len(papers), which=which),
        "",
    ]
    lines += [record_line(n, s.paper, [s.paper.decision], question) for n, s in enumerate(cited, 1)]
    rest = matching[k : k + MAX_LISTED]
    lines += [
        f"- {inert_markers(p.shown_title)} ({inert_markers(p.decision or '?')})" for p in rest
    ]
    if len(matching) > k + MAX_LISTED:
        lines.append(message("count_more", question).format(n=len(matching) - k - MAX_LISTED))
    return records_cited(turn, lines, cited, assistant, rest=False)
