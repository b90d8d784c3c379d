"""Questions answered from the papers' records, not their abstracts.

"Which papers did Max Tegmark co-author?" lists every indexed paper with that author (up to
the sources setting), each with its decision, and nothing else; "Who proposed DarkBench?" /
"DarkBench 是谁提出的？" gives the named paper's authors; "Is the Differential Transformer an
oral?" answers yes or no from its decision. What the question asks is read by
`rag.lang.intent` (word lists); the person by `rag.retrieval.people`. The model, when there is
one, is not asked: the record is the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import (
    CitedAnswer,
    Quote,
    cite,
    inert_markers,
    numbered,
    paper_line,
    title_quote,
)
from rag.answer.extractive import contribution_sentence
from rag.answer.followup import bibtex_lines, idea_line, record_fact
from rag.answer.refusal import person_refusal
from rag.lang.intent import (
    TIER_CHOICE,
    Asked,
    has,
    read_question,
    without_venue,
)
from rag.lang.messages import message, question_language
from rag.lang.scope import (  # noqa: F401 (for rag.answer.pipeline)
    IN_CHINESE,
    beside_unrecorded,
    in_chinese,
    unrecorded_kind,
)
from rag.lang.source_names import title_name
from rag.types import Filters, Paper, RetrievedPaper

if TYPE_CHECKING:
    from rag.retrieval.people import Person


def question_filters(
    asked: Asked, filters: Filters | None, question: str, read: list[tuple[str, str]] | None = None
) -> tuple[Filters, str]:
    """The filters to search with: the tier the question names ("oral papers on X",
    "口头报告") replaces the sidebar's tiers, as if chosen there; and the note that says so,
    and how the question's words were `read` ((typed, meant): 'Read "difusion" as ...')."""
    filters = filters or Filters()
    words = [message("read_word", question).format(typed=t, meant=m) for t, m in read or []]
    note = message("read_as", question).format(words=", ".join(words)) if words else ""
    if not asked.tiers:
        return filters, note
    chosen = Filters(tiers=list(asked.tiers), keywords=list(filters.keywords))
    # "what about X?" after "any orals on Y?": the tier an earlier question named
    said = "tier_filter" if read_question(question).tiers else "tier_filter_earlier"
    tiers = message(said, question).format(tiers=", ".join(asked.tiers))
    return chosen, f"{tiers} {note}".strip()


def record_quote(n: int, paper: Paper) -> Quote:
    """What a citation of a record shows: the sentence saying what the paper contributes, or
    for a title record (no abstract in the corpus) its title, as what it is."""
    if not paper.has_abstract:
        return title_quote(n, paper)
    return Quote(n, paper.id, contribution_sentence(paper.abstract), 1.0)


def record_line(n: int, paper: Paper, facts: list[str], question: str) -> str:
    """`- **Title** [n]: fact · fact`, with the no-abstract mark for a title record."""
    return paper_line(n, paper, facts, message("no_abstract", question))


def record_answer(
    turn: Turn, asked: Asked, assistant: Assistant, filters: Filters | None = None
) -> CitedAnswer | None:
    """The answer from the records when the question asks for one, else None; `filters`: those
    the candidates were found under (a person's papers are counted under them too)."""
    question, sources = turn.question, turn.sources
    retriever = assistant.retriever
    # Retrieval put it first because the question writes its name or its title (or its
    # title's words: rag.retrieval.titles); decided there, once, also when the question names
    # one of its authors too ("who wrote SVDQuant? is it Song Han's group?").
    asked_for = bool(sources) and sources[0].asked_by in ("name", "title")
    # the named paper's authors answer both; what a paper found, named by its author, is
    # answered from that paper
    ask_person = not (asked.authors_of and asked_for) and not (asked.content and not asked.people)
    person = retriever.people.named(turn.standalone, asked.people) if ask_person else None
    if person is not None:
        theirs = [s for s in sources if s.paper.id in set(person.paper_ids)]
        if theirs and asked.authors_of:  # "no, I meant the snell paper. who are its authors?"
            return _authors_answer(turn, theirs[: assistant.settings.retrieval.k], assistant)
        if theirs:
            ids = _their_ids(assistant, person.paper_ids, filters)  # "X's orals": 1, not 8
            if topic := retriever.people.topic(without_venue(turn.standalone), person):
                return _person_on_topic(turn, person.names, ids, topic, assistant, len(theirs))
            if has(question, "rest") and len(ids) > len(theirs):  # "all of X's papers"
                found = retriever.index.get_papers(ids)
                theirs = [RetrievedPaper(found[i], 1.0, 1.0) for i in ids if i in found]
            return _person_answer(turn, theirs, person.names, len(ids), assistant)
        if asked.tiers:  # "Yann LeCun's orals": none of theirs has the tier the question names
            topic = retriever.people.topic(without_venue(turn.standalone), person)
            return _none_of_theirs(turn, person, asked.tiers, assistant, topic)
    elif (
        not asked_for  # "who wrote X?"
        and (absent := retriever.people.absent(turn.standalone, asked.people)) is not None
    ):
        # "papers by Tri Dao", "andrej karpathy papers": no paper lists them; their name's
        # words are no topic.
        return person_refusal(question, turn.standalone, absent, assistant, turn.scope_note)
    if not sources:
        return None
    paper = sources[0].paper
    zh = question_language(question) == "zh"
    # "gated delta networks vs forgetting transformer": the two papers named, compared
    both = turn.intent is not None and turn.intent.compare and _names_two(sources)
    if not paper.has_abstract and not (asked.authors_of or asked.tier_asked or both):
        if asked_for:
            facts = [record_fact(paper, f, zh) for f in ("tier", "authors", "link")]
            lines = [message("title_record", question), "", record_line(1, paper, facts, question)]
            return records_cited(turn, lines, [sources[0]], assistant)
        return None
    if asked_for and has(question, "bibtex"):  # "bibtex for Cybench": its entry
        lines = [record_line(1, paper, [record_fact(paper, "tier", zh)], question)]
        return records_cited(turn, lines + bibtex_lines([paper], question), sources[:1], assistant)
    if not asked_for or not (asked.authors_of or asked.tier_asked):
        return None
    if asked.tier_asked:
        if not paper.decision:
            verdict = message("tier_unknown", question)
        else:
            key = "tier_yes" if paper.tier == asked.tier_asked else "tier_no"
            key = "tier_is" if asked.tier_asked == TIER_CHOICE else key
            verdict = message(key, question).format(decision=inert_markers(paper.decision))
        lines = [verdict, "", record_line(1, paper, [record_fact(paper, "tier", zh)], question)]
    else:
        return _authors_answer(turn, sources[:1], assistant, idea=asked.content)
    return records_cited(turn, lines, [sources[0]], assistant)


def _names_two(sources: list[RetrievedPaper]) -> bool:
    """The question names two papers (retrieval says so), not two of one name ("MoS", "MOS")."""
    return (
        len({(title_name(t := s.paper.title) or t).casefold() for s in sources if s.asked_by}) > 1
    )


def _authors_answer(
    turn: Turn, shown: list[RetrievedPaper], assistant: Assistant, idea: bool = False
) -> CitedAnswer:
    """Who wrote the papers `shown`, from their records (authors and tier); with the sentence
    that says what each contributes when the question asks that too (`idea`: "who made
    mle-bench and what does it measure")."""
    zh = question_language(turn.question) == "zh"
    lines = [message("authors_of", turn.question), ""]
    for n, source in enumerate(shown, start=1):
        facts = [record_fact(source.paper, "authors", zh), record_fact(source.paper, "tier", zh)]
        lines.append(record_line(n, source.paper, facts, turn.question))
        if idea and source.paper.has_abstract:  # the record's quote, shown (record_quote)
            lines.append(idea_line(record_quote(n, source.paper)))
    return records_cited(turn, lines, shown, assistant)


def title_records_answer(turn: Turn, assistant: Assistant) -> CitedAnswer | None:
    """A follow-up about papers known only by their titles ("What does the KAN paper
    propose?" after an author list): what their records hold, not an empty summary."""
    meant = turn.sources[: turn.citable or 0]
    if not meant or any(s.paper.has_abstract for s in meant):
        return None
    zh = question_language(turn.question) == "zh"
    lines = [message("title_record" if len(meant) == 1 else "title_records", turn.question), ""]
    for n, source in enumerate(meant, start=1):
        facts = [record_fact(source.paper, f, zh) for f in ("tier", "authors", "link")]
        lines.append(record_line(n, source.paper, facts, turn.question))
    return records_cited(turn, lines, meant, assistant)


def by_authors_answer(
    turn: Turn,
    authors: tuple[str, ...],
    left_out: frozenset[str],
    assistant: Assistant,
    filters: Filters | None = None,
) -> CitedAnswer:
    """ "any others by them?": the other papers of `authors` (those of the papers meant, which
    `left_out` holds), under the filters, the ones closest to the question first."""
    question, retriever = turn.question, assistant.retriever
    person = retriever.people.named(f"papers by {authors[0]}", True) if len(authors) == 1 else None
    if person and (topic := retriever.people.topic(without_venue(turn.standalone), person)):
        # "what else did he publish on offline rl": all of theirs on it, shown before or not
        ids = _their_ids(assistant, person.paper_ids, filters)
        k = assistant.settings.retrieval.k
        return _person_on_topic(turn, person.names, ids, topic, assistant, k)
    people = retriever.people.current()
    ids = [p for a in authors for p in people.papers.get(a, ()) if p not in left_out]
    found = retriever.index.get_papers(list(dict.fromkeys(ids)))
    theirs = [
        RetrievedPaper(p, 0.0, 0.0) for p in found.values() if filters is None or filters.accepts(p)
    ]
    if not theirs:
        lines = [message("by_authors_none", question).format(names=_named(authors))]
        return records_cited(turn, lines, [], assistant, rest=False)
    scores = retriever.paper_relevance(turn.standalone, theirs)  # "... on language models"
    ranked = [s for _, s in sorted(zip(scores, theirs, strict=True), key=lambda p: -p[0])]
    shown = ranked[: assistant.settings.retrieval.k]
    zh = question_language(question) == "zh"
    title = ", ".join(f"**{inert_markers(p.shown_title)}**" for p in _papers(turn, left_out))
    lines = [message("by_authors", question).format(title=title, n=len(ranked)), ""]
    for n, source in enumerate(shown, start=1):
        shared = _named(tuple(a for a in authors if a in source.paper.authors))
        by = message("shared_authors", question).format(names=shared)
        lines.append(
            record_line(n, source.paper, [record_fact(source.paper, "tier", zh), by], question)
        )
    if len(ranked) > len(shown):
        lines += ["", message("by_person_more", question).format(k=len(shown), n=len(ranked))]
    return records_cited(turn, lines, shown, assistant, rest=False, counted=len(ranked))


def _their_ids(assistant: Assistant, ids: Sequence[str], filters: Filters | None) -> list[str]:
    """A person's paper ids, those the filters accept when they name tiers or keywords."""
    if filters is None or not (filters.tiers or filters.keywords):
        return list(ids)
    found = assistant.retriever.index.get_papers(list(ids))
    return [i for i in ids if i in found and filters.accepts(found[i])]


def _papers(turn: Turn, ids: frozenset[str]) -> list[Paper]:
    """The previous answer's papers among `ids`, in its order."""
    return [p for p in turn.previous_papers if p.id in ids]


def _person_answer(
    turn: Turn,
    theirs: list[RetrievedPaper],
    names: tuple[str, ...],
    total: int,
    assistant: Assistant,
) -> CitedAnswer:
    question = turn.question
    head = message("by_person", question).format(name=_named(names), n=total)
    lines = _with_tiers(head, theirs, question)
    if total > len(theirs):
        lines += ["", message("by_person_more", question).format(k=len(theirs), n=total)]
    # Their papers and nothing else; how many there are, for "show me the others" and "which
    # of them are orals?" (asked again of all of them)
    return records_cited(turn, lines, theirs, assistant, rest=False, counted=total)


def _person_on_topic(
    turn: Turn,
    names: tuple[str, ...],
    ids: list[str],
    topic: str,
    assistant: Assistant,
    k: int,
) -> CitedAnswer:
    """ "any by Percy Liang on benchmarks?": their papers the topic's relevance keeps (the
    threshold a list answer uses), the closest first, up to `k` (as many as the search
    showed of theirs: "show the rest" asks for all); when none, said, and theirs listed."""
    question, retriever = turn.question, assistant.retriever
    found = retriever.index.get_papers(ids)
    papers = [found[i] for i in ids if i in found]
    ranked = _by_topic(assistant, topic, papers)
    on = [s for s in ranked if s.score >= retriever.threshold]
    if not on:
        theirs = ranked[:k]
        head = message("by_person_off_topic", question)
        head = head.format(name=_named(names), n=len(papers), topic=inert_markers(topic))
        return records_cited(
            turn, _with_tiers(head, theirs, question), theirs, assistant, rest=False
        )
    head = message("by_person_topic", question).format(
        name=_named(names), topic=inert_markers(topic), m=len(on), n=len(papers)
    )
    lines = _with_tiers(head, on[:k], question)
    if len(on) > k:
        lines += ["", message("by_person_more", question).format(k=k, n=len(on))]
    if len(papers) > len(on):
        others = message("by_person_others", question)
        lines += ["", others.format(n=len(papers) - len(on), name=_named(names))]
    return records_cited(turn, lines, on[:k], assistant, rest=False, counted=len(on))


def _none_of_theirs(
    turn: Turn, person: Person, tiers: tuple[str, ...], assistant: Assistant, topic: str
) -> CitedAnswer:
    """A person's papers when none has the tier the question filters by: said, and theirs
    listed with their tiers, those on the question's `topic` when it names one and any is
    ("yoshua bengio gflownet papers, any spotlights?"), up to the sources setting."""
    question, retriever = turn.question, assistant.retriever
    found = retriever.index.get_papers(list(person.paper_ids))
    theirs = [RetrievedPaper(found[i], 0.0, 0.0) for i in person.paper_ids if i in found]
    key = "by_person_none"
    if topic:
        ranked = _by_topic(assistant, topic, [s.paper for s in theirs])
        on = [s for s in ranked if s.score >= retriever.threshold]
        theirs, key = (on, "by_person_none_topic") if on else (theirs, key)
    head = message(key, question).format(
        name=_named(person.names),
        n=len(person.paper_ids),
        tiers=" / ".join(tiers),
        topic=inert_markers(topic),
    )
    theirs = theirs[: assistant.settings.retrieval.k]
    return records_cited(turn, _with_tiers(head, theirs, question), theirs, assistant, rest=False)


def _by_topic(assistant: Assistant, topic: str, papers: list[Paper]) -> list[RetrievedPaper]:
    """A person's `papers`, the closest to `topic` first, each scored by its relevance."""
    scores = assistant.retriever.topic_relevance(topic, papers)
    ranked = sorted(zip(scores, papers, strict=True), key=lambda p: -p[0])
    return [RetrievedPaper(p, s, 0.0) for s, p in ranked]


def _named(names: tuple[str, ...]) -> str:
    """A person as the records write them ("Yoshua Bengio", or two spellings joined)."""
    return " / ".join(inert_markers(n) for n in names)


def _with_tiers(head: str, theirs: list[RetrievedPaper], question: str) -> list[str]:
    """`head`, then a line per paper with its tier: a person's papers."""
    zh = question_language(question) == "zh"
    return [head, ""] + [
        record_line(n, s.paper, [record_fact(s.paper, "tier", zh)], question)
        for n, s in enumerate(theirs, start=1)
    ]


def records_cited(
    turn: Turn,
    lines: list[str],
    cited: list[RetrievedPaper],
    assistant: Assistant,
    rest: bool = True,
    counted: int = 0,
) -> CitedAnswer:
    """The record answer citing `cited` (sources 1..n), the other sources after them; a
    count's (`counted` papers matched, listed after the cited ones)."""
    sources = cited + ([s for s in turn.sources if s not in cited] if rest else [])
    quotes = [record_quote(n, s.paper) for n, s in enumerate(cited, start=1)]
    return numbered(
        CitedAnswer(
            question=turn.question,
            standalone_question=turn.standalone,
            answer="\n".join(lines),
            citations=cite(quotes, sources),
            sources=sources,
            abstained=False,
            model=assistant.model,
            offline=assistant.offline,
            scope_note=turn.scope_note,
            counted=counted,
        )
    )


def all_shown_answer(turn: Turn, previous: CitedAnswer, assistant: Assistant) -> CitedAnswer:
    """ "show the rest" when the list above showed all it found: it says so and lists the
    papers again, not a new search for the words "the rest"."""
    ids = {c.paper_id for c in previous.citations}
    shown = [s for s in previous.sources if s.paper.id in ids] or list(previous.sources)
    question, head = turn.question, message("all_shown", turn.question).format(n=len(shown))
    if previous.matched > len(shown):  # a summary quoted some of the papers it found: all
        head = message("all_found", question).format(k=len(shown), n=previous.matched)
        shown = list(previous.sources[: previous.matched])
    lines = [head, ""]
    lines += [record_line(n, s.paper, [s.paper.decision], question) for n, s in enumerate(shown, 1)]
    return records_cited(turn, lines, shown, assistant, rest=False)


def aside_unrecorded(question: str) -> tuple[str, str]:
    """ "...? i think it got an outstanding paper award": the rest of the question, to be
    answered, and the note saying what the index does not hold; ("", "") without such an aside."""
    rest = beside_unrecorded(question)
    return rest, message("unrecorded_aside", question) if rest else ""


def unrecorded_answer(turn: Turn, assistant: Assistant, kind: str) -> CitedAnswer:
    """What the records hold, and that this (`kind`: "unrecorded", "off_task",
    "reply_language") is not among it: no search for its words; an abstention."""
    said = records_cited(turn, [message(kind, turn.question)], [], assistant, rest=False)
    return replace(said, abstained=True)
