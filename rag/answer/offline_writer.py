"""The offline writer: a cited answer made only of quoted abstract sentences
(rag.answer.extractive), from the papers the judge kept.

It also stands in for a model whose reply grounds nothing (a `Fallback` from rag.answer.check,
which rag.answer.writer turns into this answer).
"""

from __future__ import annotations

from dataclasses import replace

from rag.answer.aspects import ASPECTS, aspect_answer
from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import CitedAnswer, cite, inert_markers, numbered
from rag.answer.extractive import (
    ExtractiveOptions,
    asks_what_it_is,
    extractive_answer,
    without_name,
)
from rag.answer.followup import record_fact
from rag.answer.judge import verdict_fields
from rag.lang.gloss import english_query
from rag.lang.messages import message, question_language
from rag.lang.pointers import is_comparison, topic_terms
from rag.lang.question_kind import sentences_asked, wants


def write_offline(turn: Turn, assistant: Assistant) -> CitedAnswer:
    """The extractive answer to `turn`: quoted sentences of the papers the judge kept (or
    of the earlier papers a follow-up means), each cited."""
    threshold = assistant.retriever.threshold
    calibration = assistant.retriever.calibration
    # The judge decided which retrieved papers belong (rag.answer.judge): a list names those,
    # the sources setting being a maximum, not a quota. The question's `Intent` says whether
    # it asks for a list: "哪些论文…" (its gloss drops the frame), "what are the orals on X?"
    # (the tier word was the frame's noun).
    listing = turn.intent is not None and turn.intent.listing
    verdict = turn.verdict
    options = ExtractiveOptions(
        min_similarity=threshold,
        relevant=verdict.belongs if verdict is not None else None,
        calibration=calibration,
        mode="list" if listing else "auto",
    )
    named = verdict.named if verdict is not None else None  # its paper was retrieved first
    if named is not None:  # the question names a method: its paper leads (it was ranked 1)
        lead = next(
            (i for i, s in enumerate(turn.sources) if s.paper.id not in named.paper_ids),
            len(turn.sources),
        )
        # Quoted alone when it is the whole subject, or when the judge found no other paper
        # belongs ("How did the authors evaluate RobustKV?": rag.answer.judge.about_it_alone).
        alone = named.whole_subject or (verdict is not None and not any(verdict.belongs[lead:]))
        options = replace(options, named=lead, named_only=alone)
        if alone and listing:  # "FlexPrefill 的创新点有哪些？": of one paper, no list
            options = replace(options, mode="auto")
        if asks_what_it_is(english_query(turn.question), named.name):
            options = replace(options, mode="summary")  # "what does Ward do?": its summary
    # A follow-up was joined to the previous question to retrieve; its sentences answer
    # what is asked now ("and how fast is it?").
    asked = turn.meant or turn.question.strip()
    focus = asked if turn.standalone != asked else turn.standalone
    sources = turn.sources
    if (turn.reference is not None or turn.compare) and turn.citable:
        # Only the papers pointed at (or compared); "summarize the second one" asks for its
        # summary.
        sources = turn.sources[: turn.citable]
        focus = (turn.reference.focus if turn.reference else "") or focus
        options = ExtractiveOptions(
            max_papers=len(sources),
            summary_papers=len(sources),
            summary_margin=float("inf"),
            in_order=True,
            per_paper=3 if len(sources) == 1 else 2,
            max_sentences=max(6, 2 * len(sources)),
            mode="summary"
            if not topic_terms(english_query(focus)) or is_comparison(focus)
            else ("answer" if len(sources) == 1 else "list"),
            calibration=calibration,
        )
    if said := sentences_asked(turn.question):  # "summarize it in 2 sentences": at most 2
        options = replace(options, per_paper=min(options.per_paper, said))
    # A question in another language picks its English sentences through its gloss.
    query = english_query(focus)
    if named is not None and not named.whole_subject and wants(query).how_it_works:
        query = without_name(query, named.name)  # "How does X decide ...": the rest matters
    lang = question_language(turn.question)  # the heading and labels follow the question
    aspect = wants(turn.question).aspect if not turn.compare else ""
    if not turn.reference and not (named is not None and aspect in ("code", "reviews")):
        aspect = ""  # of a paper named anew, what its records answer: code, reviews
    if aspect:  # "and how fast is it?": its speed sentence, or "reports none"
        if not turn.reference and named is not None:  # "does FlexPrefill release code?"
            sources = [s for s in sources if s.paper.id in named.paper_ids][:1]
        text, quotes = aspect_answer(ASPECTS[aspect], sources, lang)
    else:
        result = extractive_answer(query, sources, assistant.sentence_embeddings, options, lang)
        text, quotes = result.text, result.quotes
    read = turn.intent.asked if turn.intent is not None else None
    presence = read is not None and read.presence and bool(quotes and sources)
    # "theres a paper saying X, which tier was it": the paper found, its decision first
    tier = read is not None and bool(read.tier_asked) and any(q.n == 1 for q in quotes)
    # "who wrote the paper about adam exploiting l-inf geometry": its record's authors first
    # (not "... believes about who wrote a text": a topic)
    authors = read is not None and read.authors_of and read.one_paper and not listing
    authors = authors and any(q.n == 1 for q in quotes)
    if presence or tier or authors:  # "was it at iclr 25?": yes, and as what, first
        paper = sources[0].paper
        title = inert_markers(" ".join(paper.shown_title.split()))
        if presence:
            yes = message("presence_yes", turn.question)
            opening = yes.format(title=title, decision=paper.tier or paper.decision)
        elif tier:
            decided = message("tier_is", turn.question).format(decision=paper.decision or "?")
            opening = f"**{title}**: {decided}"
        else:
            facts = [record_fact(paper, "authors", lang == "zh"), paper.url]
            opening = f"**{title}**: " + " · ".join(f for f in facts if f)
        text = f"{opening} [1]\n\n{text}"
    if turn.compare:  # a paper known by its title alone is said so, not left out unsaid
        missing = [s.paper for s in sources if not s.paper.has_abstract]
        text += "".join(
            f"\n\n**{inert_markers(p.shown_title)}**: {message('no_abstract', turn.question)}"
            for p in missing
        )
    return numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer=text,
            citations=cite(quotes, turn.sources),
            sources=turn.sources,
            abstained=False,
            model=assistant.model,
            offline=True,
            scope_note=turn.scope_note,
            compare=turn.compare,
            **verdict_fields(verdict, turn.intent, turn.question),
        ),
        turn.seen,
    )
