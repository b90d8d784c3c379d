""" "How many papers on Y?": a count, the rule it counts by, and the papers, from the index.

A paper counts when its title or abstract contains every content word of the question's topic
(stemmed, as BM25 reads words). The rule is said in the answer, with how many papers have a
title only (no abstract in the corpus), since for them only the title can match. A tier the
question names ("how many orals on Y") filters the count like the sidebar, and the answer
counts among that tier's papers ("15 of the 380 Spotlight papers"). With no topic ("how many
orals are there in total?") it counts the conference: all the papers (of that tier), by decision.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from rag.answer.assistant import Assistant, Turn
from rag.answer.citations import CitedAnswer, inert_markers
from rag.answer.records import record_line, records_cited
from rag.common.similarity import (
    abbreviations,
    acronyms,
    held,
    stem,
    term_parts,
    terms,
    written_terms,
    written_words,
)
from rag.index.passages import split_sentences
from rag.lang.gloss import alternatives, english_query
from rag.lang.intent import Asked, count_frame_terms, phrase_pattern, words
from rag.lang.messages import TIER_ZH, message, question_language
from rag.types import TIERS, Filters, Paper, RetrievedPaper

MAX_LISTED = 50  # titles listed after the cited ones; the rest is counted


def topic_terms(english: str) -> set[str]:
    """The stemmed content words of the count question's topic (`english`: its sentence)."""
    return terms(english) - count_frame_terms()


def count_sentence(text: str) -> str:
    """The sentence that asks how many ("how many papers on X? just want a sense of how
    crowded it is": not "crowded")."""
    for mark in "?？!！。;；：":
        text = text.replace(mark, mark + "\n")
    asks = words()["words"]["count"]
    sentences = [s for s in text.splitlines() if s.strip()]
    return next((s for s in sentences if any(a in s.lower() for a in asks)), text)


def _rules(sentence: str) -> list[tuple[set[str], set[str]]]:
    """The rules a paper counts by: "tokenizer-free or byte-level models" by either one's
    words, "sparse autoencoders (SAEs)" by either name."""
    return [
        r for part in alternatives(sentence) for name in either_name(part) if (r := _rule(name))
    ]


def as_phrases(sentence: str, written: frozenset[str]) -> str:
    """ "mixture of experts" as "mixture-of-experts" when abstracts write that phrase with
    hyphens (`written`, stemmed): counted as one phrase, spaced or hyphenated; its words apart
    ("a mixture of LoRA experts") are another topic. "the use of LLMs" stays words."""
    words, i = sentence.split(" "), 1
    while i < len(words) - 1:
        joined = f"{words[i - 1]}-of-{words[i + 1]}"
        if words[i].lower() == "of" and terms(joined) and terms(joined) <= written:
            words[i - 1 : i + 2] = [joined]
        i += 1
    return " ".join(words)


def _written_phrases(papers: list[Paper]) -> frozenset[str]:
    """The "X-of-Y" phrases (stemmed) the papers write with hyphens."""
    return frozenset(t for p in papers for t in terms(_text(p)) if "-of-" in t)


def _of_phrases(text: str) -> set[str]:
    """ "X of Y" written with spaces, as the stemmed phrase "X-of-Y" (as hyphens write it)."""
    said = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    runs = zip(said, said[1:], said[2:], strict=False)
    return {f"{stem(a)}-of-{stem(b)}" for a, of, b in runs if of == "of"}


def _text(paper: Paper) -> str:
    """Title and abstract, less the sentences that link or promise code ("Code is available
    at https://..."): their "code" is no topic ("code generation" counted 35 Spotlights, most
    of them for a code link)."""
    abstract = paper.abstract
    kept = [abstract[a:b] for a, b in split_sentences(abstract) if not _links(abstract[a:b])]
    return "\n".join([paper.title, *kept])


def _links(sentence: str) -> bool:
    said = sentence.casefold()
    return any(w in said for w in _LINK_WORDS) or (
        "code" in said and any(w in said for w in _RELEASE_WORDS)
    )


_LINK_WORDS = ("http://", "https://", "github", "www.")
_RELEASE_WORDS = ("available", "release", "open-source", "open source", "publicly")


def _rule(part: str) -> tuple[set[str], set[str]] | None:
    """What a paper must contain to count for `part` of the topic: its stemmed words and its
    two-letter acronyms; None when it names no topic ("how many papers" of "X or Y")."""
    topic, short = topic_terms(english_query(part)), acronyms(part)
    return (topic, short) if topic or short else None


def either_name(part: str) -> list[str]:
    """A topic written with its abbreviation, by either name: "sparse autoencoders (SAEs)" ->
    "sparse autoencoders", "SAEs" (a paper counts by either, as by "X or Y")."""
    for short, full in abbreviations(part, within_words=True).items():
        if (written := f"{full} ({short})") in part:
            return [part.replace(written, full), part.replace(written, short)]
    return [part]


def _counts(paper: Paper, rules: list[tuple[set[str], set[str]]]) -> bool:
    text = _text(paper)
    stems, written = term_parts(text) | _of_phrases(text), written_words(text)
    return any(held(topic, stems) == topic and short <= written for topic, short in rules)


def as_written(topic: set[str], english: str) -> list[str]:
    """The topic's words as the question (or its gloss) writes them, in its order."""
    written = written_terms(english)
    return [w for t, w in written.items() if t in topic] + sorted(topic - set(written))


def count_answer(
    turn: Turn, asked: Asked, filters: Filters, assistant: Assistant
) -> CitedAnswer | None:
    """The count answer: of the papers on the question's topic, or of all (of a tier)."""
    sentence = count_sentence(asked.search)  # the one that asks how many
    rules = _rules(sentence)
    everything = assistant.retriever.index.all_papers()
    if rules and " of " in sentence:  # "mixture of experts": a phrase, when written as one
        sentence = as_phrases(sentence, _written_phrases(everything))
        rules = _rules(sentence)
    english = english_query(sentence)
    question = turn.question
    counts_twice = len(phrase_pattern(tuple(words()["words"]["count"])).findall(question)) > 1
    if not rules and counts_twice and asked.tiers:
        # "how many papers in total, and how many orals?": the conference by tier, the tier
        # the question names among them (the sidebar's other filters still apply)
        filters = replace(filters, tiers=[t for t in filters.tiers if t not in asked.tiers])
        turn = replace(turn, scope_note="")  # no "filtered by the tier the question names"
    # Counted among the papers the filter lets through ("how many spotlights on Y": 15 of
    # the 380 Spotlight papers), and said so.
    papers = [p for p in everything if filters.accepts(p)]
    tiers = " / ".join(filters.tiers)
    zh = question_language(question) == "zh"
    which = "" if not tiers else f" {tiers} " if zh else f"{tiers} "
    if not rules:  # "how many orals are there in total?": the conference
        lines = venue_count(papers, question, which, zh, by_tier=not tiers)  # no paper cited
        return records_cited(turn, lines, [], assistant, rest=False)
    matching = [p for p in papers if _counts(p, rules)]
    rank = {s.paper.id: i for i, s in enumerate(turn.sources)}
    matching.sort(key=lambda p: (rank.get(p.id, len(rank)), p.title.casefold()))
    k = assistant.settings.retrieval.k
    cited = [RetrievedPaper(p, 0.0, 0.0) for p in matching[:k]]
    titles_only = sum(not p.has_abstract for p in papers)
    lines = [
        message("count", question).format(n=len(matching), total=len(papers), which=which),
        message("count_rule", question).format(
            words=message("count_or", question).join(
                ", ".join(as_written(t, english) + sorted(a)) for t, a in rules
            )
        ),
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
    return records_cited(turn, lines, cited, assistant, rest=False, counted=len(matching))


def venue_count(
    papers: list[Paper], question: str, which: str, zh: bool, by_tier: bool
) -> list[str]:
    """How many papers the index holds (of the tier the question names), per decision."""
    lines = [message("count_all", question).format(total=len(papers), which=which)]
    if by_tier:
        counts = Counter(p.tier for p in papers)
        names = {t: TIER_ZH[t] if zh else t for t in TIERS} | {
            "": message("count_undecided", question)
        }
        tiers = ("、" if zh else ", ").join(
            f"{counts[t]:,} {names[t]}" for t in (*TIERS, "") if counts[t]
        )
        lines.append(message("count_tiers", question).format(tiers=tiers))
    titles_only = sum(not p.has_abstract for p in papers)
    if titles_only:
        lines.append(message("count_all_titles", question).format(m=titles_only))
    return lines
