"""A follow-up about the previous answer's numbered sources, answered from those papers alone.

`rag.answer.references` resolves which sources a follow-up means ("the second one", "which of
them are orals?"); here the turn is built from them: the model is asked about those papers
only, and a question about their tier, link or authors is answered from their records.
"""

from __future__ import annotations

from dataclasses import replace

from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import CitedAnswer, Quote, cite, fenced, inert_markers, numbered
from rag.answer.extractive import contribution_sentence
from rag.answer.prompts import answer_messages
from rag.answer.references import Reference
from rag.corpus.bibtex import bibtex
from rag.lang.messages import MESSAGES, TIER_ZH, message, question_language
from rag.lang.pointers import is_comparison, topic_terms, which_about
from rag.types import MAX_COMPARED, Filters, Paper, RetrievedPaper


def follow_up(
    question: str,
    text: str,
    standalone: str,
    reference: Reference,
    shown: list[RetrievedPaper],
    cited: int,
    assistant: Assistant,
    filters: Filters | None,
) -> Turn:
    """A follow-up about the previous sources; "compare them" also gets the comparison table
    (its first `MAX_COMPARED` papers, `rag.explore.compare`, drawn by the page and the CLI).

    Compared papers keep the order of the list the reader saw ("compare [3] and [1]" puts [1]
    first), so "compare the first two" keeps their numbers, in the text and the table alike.
    """
    compared = is_comparison(text) and len(reference.numbers) >= 2 and not reference.about_metadata
    dropped: tuple[int, ...] = ()
    if compared:
        ordered = tuple(sorted(reference.numbers))
        dropped = ordered[MAX_COMPARED:]
        reference = replace(reference, numbers=ordered[:MAX_COMPARED])
    turn = referring_turn(question, text, standalone, reference, shown, cited, assistant, filters)
    if compared and (turn.citable or 0) >= 2:
        turn.compare = tuple(range(1, min(turn.citable or 0, MAX_COMPARED) + 1))
        turn.seen = tuple(shown.index(s) + 1 for s in turn.sources)
        if dropped:
            turn.scope_note += " " + message("compare_first", question).format(
                compared=", ".join(f"[{n}]" for n in reference.numbers),
                left=", ".join(f"[{n}]" for n in dropped),
                n=MAX_COMPARED,
                total=len(reference.numbers) + len(dropped),
            )
    if turn.result is not None:
        turn.result.scope_note = turn.scope_note
    return turn


def referring_turn(
    question: str,
    text: str,
    standalone: str,
    reference: Reference,
    shown: list[RetrievedPaper],
    cited: int,
    assistant: Assistant,
    filters: Filters | None = None,
) -> Turn:
    """A follow-up about previous sources: answered from them alone, no search, no refusal.

    The current filters still hold: a source they exclude is not answered from, and the
    answer says which it left out (`reuse_note`).

    The referenced papers come first and are the only ones that may be cited; the rest of
    the previous list follows, so the next follow-up can still point at it.
    """
    meant = [shown[n - 1] for n in reference.numbers]
    about = reference.how == "about"
    note = "" if about else reuse_note(question, reference, shown, filters)
    if filters is not None and not reference.tier:  # a tier question reports the excluded too
        meant = [s for s in meant if filters.accepts(s.paper)]
    topic = asked_topic(text, reference)
    if topic and meant:  # "which of these are about offline RL?": those that are
        on_topic = about_topic(meant, reference.focus, assistant)
        said = "about_some" if on_topic else "about_none"
        total = len(meant)
        note += " " + message(said, question).format(n=len(on_topic), total=total, topic=topic)
        meant = on_topic
    rest = [s for s in shown if s not in meant]
    turn = Turn(question, standalone, meant + rest, reference=reference, citable=len(meant))
    turn.scope_note = note
    turn.off_topic = topic if topic and not meant and not reference.tier else ""
    if not meant and not reference.tier:
        turn.result = _all_filtered(turn, assistant)
    elif reference.about_metadata:
        turn.result = _metadata_answer(turn, reference, shown, assistant)
    elif assistant.chat_model is not None:
        turn.messages = answer_messages(
            standalone, meant, original=text, previous=[s.paper for s in shown]
        )
    return turn


def searched_instead(turn: Turn, earlier: str, shown: list[RetrievedPaper]) -> tuple[str, str]:
    """ "which of them are about fairness?" when none of the papers shown is: the earlier
    question asked about it instead ("conformal prediction papers about fairness"), and the
    sentence that says so."""
    searched = f"{earlier} about {turn.off_topic}"
    note = message("about_none_searched", turn.question)
    return searched, note.format(total=len(shown), topic=turn.off_topic, searched=searched)


def asked_topic(text: str, reference: Reference) -> str:
    """The topic "which of these are about offline RL?" asks the whole list about ("offline
    RL"), read by `rag.lang.pointers.which_about`; "" for any other follow-up."""
    if reference.how != "set" or reference.about_metadata or is_comparison(text):
        return ""
    return which_about(text, reference.focus)


MAX_ABOUT = 50  # how deep a follow-up's topic is searched for the papers it asks about


def about_topic(
    meant: list[RetrievedPaper], topic: str, assistant: Assistant
) -> list[RetrievedPaper]:
    """Of `meant`, the papers a search for `topic` finds relevant and whose text holds its
    words as a list's papers must (a share of them, `list_min_coverage`): "locate-then-edit"
    is not any knowledge-editing paper."""
    retriever = assistant.retriever
    found = retriever.search(topic, k=MAX_ABOUT)
    scores = retriever.paper_relevance(topic, found)
    covered = retriever.coverage(topic, found)
    least = retriever.calibration.list_min_coverage
    relevant = {
        r.paper.id
        for r, s, c in zip(found, scores, covered, strict=True)
        if s >= retriever.threshold and c >= least
    }
    return [s for s in meant if s.paper.id in relevant]


def _metadata_answer(
    turn: Turn, reference: Reference, shown: list[RetrievedPaper], assistant: Assistant
) -> CitedAnswer:
    """Tier, link or authors of the referenced papers, from their records, each cited.

    "Which of them are orals?" lists those that are; when none is, every paper meant with its
    decision, so the reader sees why.
    """
    zh = question_language(turn.question) == "zh"
    said = MESSAGES["zh" if zh else "en"]
    lines = [said["record_heading"], ""]
    listed = turn.sources[: turn.citable]
    if reference.tier:
        scope = [shown[n - 1] for n in reference.among]  # the papers checked for the tier
        words = {
            "tier": TIER_ZH[reference.tier] if zh else reference.tier,
            "plural": f"{reference.tier}s",
            "article": _article(reference.tier),
            "listed": len(listed),
            "scope": len(scope),
        }
        if len(scope) == 1:  # "is it an oral?"
            said_tier = "tier_it_is" if listed else "tier_it_is_not"
        elif listed:
            said_tier = "tier_one_of" if len(listed) == 1 else "tier_some_of"
        else:
            said_tier = "tier_none_of"
        lines.append(said[said_tier].format(**words))
        if not listed:  # each paper meant, with its decision: the reader sees why
            listed = scope
            turn.sources = scope + [s for s in shown if s not in scope]
        asks = ("tier", *[a for a in reference.asks if a != "tier"])
    else:
        asks = reference.asks
    entries = "bibtex" in asks  # "give me the bibtex": each paper's line, then its entry
    asks = tuple(a for a in asks if a != "bibtex") or ("tier",)
    quotes = []
    idea = bool(topic_terms(reference.focus))  # "who wrote it and what's the main idea"
    for n, source in enumerate(listed, start=1):
        paper = source.paper
        facts = " · ".join(record_fact(paper, ask, zh) for ask in asks)
        lines.append(f"- **{inert_markers(' '.join(paper.shown_title.split()))}** [{n}]: {facts}")
        quotes.append(Quote(n, paper.id, contribution_sentence(paper.abstract), 1.0))
        if idea and paper.has_abstract:  # the sentence that says what it contributes
            lines.append(idea_line(quotes[-1]))
    if entries:
        lines += bibtex_lines([s.paper for s in listed], turn.question)
    return numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer="\n".join(lines),
            citations=cite(quotes, turn.sources),
            sources=turn.sources,
            abstained=False,
            model=assistant.model,
            offline=assistant.offline,
        )
    )


def idea_line(quote: Quote) -> str:
    """A record answer's line under a paper: the sentence that says what it contributes,
    cited (a question that asks that beside its authors or tier)."""
    return f"  - {inert_markers(quote.quote)} [{quote.n}]"


def bibtex_lines(papers: list[Paper], question: str) -> list[str]:
    """The papers' BibTeX as the chat shows it: a line saying so, then a code block."""
    return ["", message("bibtex", question), fenced(bibtex(papers).strip(), "bibtex")]


def _article(tier: str) -> str:
    return f"an {tier}" if tier[:1] in "AEIOU" else f"a {tier}"


def record_fact(paper: Paper, ask: str, zh: bool = False) -> str:
    """One recorded fact; the decision and names stay as recorded, the words around them
    follow the question's language."""
    said = MESSAGES["zh" if zh else "en"]
    if ask == "tier":
        return inert_markers(paper.decision) if paper.decision else said["no_decision"]
    if ask == "link":
        return paper.url or said["no_link"]
    if not paper.authors:
        return said["no_authors"]
    order = "" if paper.extra.get("authors_ordered", True) else said["order_unknown"]
    return said["authors_label"] + inert_markers(", ".join(paper.authors)) + order


def reuse_note(
    question: str, reference: Reference, shown: list[RetrievedPaper], filters: Filters | None
) -> str:
    """What the answer was taken from, said in the page: the previous sources (or all the
    chat cited), and which of them the current filters leave out."""
    numbers = reference.numbers
    marks = ", ".join(f"[{n}]" for n in numbers)
    marks = f" {marks}" if marks else ""
    excluded = [
        n for n in numbers if filters is not None and not filters.accepts(shown[n - 1].paper)
    ]
    said = "reused_discussed" if reference.how == "discussed" else "reused"
    note = message(said, question).format(marks=marks)
    if excluded and filters is not None:
        wanted = ", ".join(filters.tiers) if filters.tiers else ", ".join(filters.keywords)
        left = ", ".join(f"[{n}]" for n in excluded)
        note += message("filter_leaves_out", question).format(wanted=wanted, left=left)
    return note + message("stop", question)


def _all_filtered(turn: Turn, assistant: Assistant) -> CitedAnswer:
    """Every source pointed at is excluded by the current filters: say so, cite nothing."""
    return CitedAnswer(
        question=turn.question,
        standalone_question=turn.standalone,
        answer=turn.scope_note,
        citations=[],
        sources=turn.sources,
        abstained=True,
        model=assistant.model,
        offline=assistant.offline,
        refusal=turn.scope_note,
        scope_note=turn.scope_note,
    )
